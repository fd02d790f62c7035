// `ringmaster bench`: all-reduce figures in the style of nccl-tests for N
// local ranks (one Communicator per rank, over TCP on 127.0.0.1), per
// algorithm and for AUTO, every result checked.
#include "bench.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "algorithms.h"
#include "ringmaster/communicator.h"

namespace ringmaster::cli {
namespace {

const char kUsage[] =
    "usage: ringmaster bench [-n RANKS] [-b MIN_BYTES] [-e MAX_BYTES] [-f FACTOR] [-a all|ring|rd|auto]\n"
    "                        [--iters N] [--warmup N] [--streams N]\n"
    "All-reduce (float32, sum) among RANKS local ranks (default 2) over TCP on 127.0.0.1, sizes\n"
    "MIN_BYTES (default 4) to MAX_BYTES (default 256M) growing by FACTOR (default 2). Prints size,\n"
    "count, type, op, time, algbw and busbw (= algbw * 2(n-1)/n) per algorithm; every result is\n"
    "checked and the exit code is 1 if any was wrong.\n";

bool ParseBytes(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string suffix(end);
  double mult = 1;
  if (suffix == "K" || suffix == "k")
    mult = 1 << 10;
  else if (suffix == "M" || suffix == "m")
    mult = 1 << 20;
  else if (suffix == "G" || suffix == "g")
    mult = double(1 << 30);
  else if (!suffix.empty())
    return false;
  if (!(v >= 0)) return false;
  *out = static_cast<int64_t>(v * mult);
  return true;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct Algo {
  const char* name;
  std::optional<internal::Algorithm> forced;
};

}  // namespace

int BenchMain(int argc, char** argv) {
  int ranks = 2, iters_max = 20, warmup = 2, streams = 2;
  int64_t min_bytes = 4, max_bytes = int64_t{256} << 20;
  double factor = 2;
  std::string algo_flag = "all";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "ringmaster bench: " << a << " needs a value\n" << kUsage;
        std::exit(2);
      }
      return argv[++i];
    };
    bool ok = true;
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "-n" || a == "--ranks") {
      ranks = std::atoi(val().c_str());
      ok = ranks >= 1 && ranks <= 16;
    } else if (a == "-b" || a == "--min-bytes") {
      ok = ParseBytes(val(), &min_bytes);
    } else if (a == "-e" || a == "--max-bytes") {
      ok = ParseBytes(val(), &max_bytes);
    } else if (a == "-f" || a == "--step-factor") {
      factor = std::atof(val().c_str());
      ok = factor > 1;
    } else if (a == "-a" || a == "--algorithm") {
      algo_flag = val();
      ok = algo_flag == "all" || algo_flag == "ring" || algo_flag == "rd" || algo_flag == "auto";
    } else if (a == "--iters") {
      iters_max = std::atoi(val().c_str());
      ok = iters_max >= 1;
    } else if (a == "--warmup") {
      warmup = std::atoi(val().c_str());
      ok = warmup >= 0;
    } else if (a == "--streams") {
      streams = std::atoi(val().c_str());
      ok = streams >= 1 && streams <= 8;
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "ringmaster bench: bad argument " << a << "\n" << kUsage;
      return 2;
    }
  }
  min_bytes = std::max<int64_t>(min_bytes, 4);
  if (max_bytes < min_bytes) max_bytes = min_bytes;

  std::vector<Algo> algos;
  if (algo_flag == "all" || algo_flag == "ring") algos.push_back({"ring", internal::Algorithm::kRing});
  if (algo_flag == "all" || algo_flag == "rd")
    algos.push_back({"rd", internal::Algorithm::kRecursiveDoubling});
  if (algo_flag == "all" || algo_flag == "auto") algos.push_back({"auto", std::nullopt});

  // Form the group: one thread per rank.
  CollectiveGroup group;
  for (int r = 0; r < ranks; ++r) {
    group.members.push_back(
        {r == 0 ? "chief" : "worker", r == 0 ? 0 : r - 1, "127.0.0.1:" + std::to_string(FreePort())});
  }
  std::vector<std::unique_ptr<Communicator>> comms(ranks);
  std::vector<Status> errors(ranks);
  {
    std::vector<std::thread> th;
    for (int r = 0; r < ranks; ++r) {
      th.emplace_back([&, r] {
        CommunicatorSettings s;
        s.group = group;
        s.group.rank = r;
        s.streams = streams;
        s.formation_timeout_seconds = 30;
        auto c = Communicator::Create(s);
        if (c.ok())
          comms[r] = std::move(*c);
        else
          errors[r] = c.status();
      });
    }
    for (auto& t : th) t.join();
  }
  for (int r = 0; r < ranks; ++r) {
    if (!comms[r]) {
      std::cerr << "ringmaster bench: rank " << r << ": " << errors[r].ToString() << "\n";
      return 1;
    }
  }

  std::printf(
      "# ringmaster bench: all-reduce, %d ranks on 127.0.0.1 (threads of one process), %d stream(s)\n", ranks,
      streams);
  std::printf("# busbw = algbw * 2(n-1)/n; time is the mean over the timed iterations on rank 0\n#\n");
  std::printf("# %12s %12s %8s %6s %6s %6s %10s %8s %8s %8s\n", "size", "count", "type", "redop", "algo",
              "iters", "time", "algbw", "busbw", "correct");
  std::printf("# %12s %12s %8s %6s %6s %6s %10s %8s %8s %8s\n", "(B)", "(elements)", "", "", "", "", "(us)",
              "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);

  bool any_wrong = false;
  const float want = static_cast<float>(ranks * (ranks + 1) / 2);
  for (double sz = static_cast<double>(min_bytes); sz <= static_cast<double>(max_bytes) * 1.0000001;
       sz *= factor) {
    const int64_t count = std::max<int64_t>(1, static_cast<int64_t>(sz) / 4);
    const int64_t bytes = count * 4;
    // Fewer iterations for big messages keeps a full sweep to a few minutes.
    const int iters = static_cast<int>(
        std::clamp<int64_t>((int64_t{512} << 20) / std::max<int64_t>(bytes, 1) / 8, 2, iters_max));
    std::vector<std::vector<float>> data(ranks, std::vector<float>(static_cast<size_t>(count)));
    for (const auto& algo : algos) {
      internal::ForceAlgorithmForBenchmarks(algo.forced);
      std::vector<double> spent(ranks, 0);
      std::vector<int64_t> wrong(ranks, 0);
      std::vector<std::string> failure(ranks);
      std::vector<std::thread> th;
      for (int r = 0; r < ranks; ++r) {
        th.emplace_back([&, r] {
          auto& v = data[r];
          Tensor t{v.data(), count, DataType::kFloat32};
          for (int it = 0; it < warmup + iters; ++it) {
            std::fill(v.begin(), v.end(), static_cast<float>(r + 1));
            auto start = std::chrono::steady_clock::now();
            Status s = comms[r]->AllReduce({&t, 1}, ReduceOp::kSum);
            auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (!s.ok()) {
              failure[r] = s.ToString();
              return;
            }
            if (it >= warmup) spent[r] += took;
          }
          for (float x : v) wrong[r] += x != want;
        });
      }
      for (auto& t : th) t.join();
      internal::ForceAlgorithmForBenchmarks(std::nullopt);
      for (int r = 0; r < ranks; ++r) {
        if (!failure[r].empty()) {
          std::cerr << "ringmaster bench: rank " << r << ": " << failure[r] << "\n";
          return 1;
        }
      }
      int64_t total_wrong = 0;
      for (int64_t w : wrong) total_wrong += w;
      any_wrong |= total_wrong != 0;
      const double secs = spent[0] / iters;
      const double algbw = bytes / secs / 1e9;
      const double busbw = algbw * (ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0);
      char correct[32];
      if (total_wrong)
        std::snprintf(correct, sizeof correct, "WRONG:%lld", static_cast<long long>(total_wrong));
      else
        std::snprintf(correct, sizeof correct, "ok");
      std::printf("  %12lld %12lld %8s %6s %6s %6d %10.1f %8.3f %8.3f %8s\n", static_cast<long long>(bytes),
                  static_cast<long long>(count), "float", "sum", algo.name, iters, secs * 1e6, algbw, busbw,
                  correct);
      std::fflush(stdout);
    }
  }
  return any_wrong ? 1 : 0;
}

}  // namespace ringmaster::cli
