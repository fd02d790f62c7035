// `ringmaster bench`: float32 SUM all-reduce among N local ranks, one process
// per rank, measured exactly as the peers of the side-by-side comparison
// (rmbench/bench_common.h, library ringmaster_bench_common: same sizes, warm-up, timed batches, median
// and spread, bit-exact check, one JSON line per size and algorithm).
//
// Without --member it is a launcher: it gives N copies of itself a TF_CONFIG
// each (workers 0..N-1 on 127.0.0.1, from the same generator the operator
// uses) and prints rank 0's results as a table (or as JSON with --json).
// With --member the process is one rank: the group comes from TF_CONFIG and
// RINGMASTER_* like any agent's, so bench/allreduce/run.py starts the members
// itself with the TF_CONFIGs `ringmaster tfconfig` prints.
#include "bench.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "free_ports.h"
#include "ringmaster/comm_options.h"
#include "ringmaster/communicator.h"
#include "ringmaster/job.h"
#include "ringmaster/tf_config_gen.h"
#include "rmbench/bench_common.h"

namespace ringmaster::cli {
namespace {

const char kUsage[] =
    "usage: ringmaster bench [-n RANKS] [-b MIN_BYTES] [-e MAX_BYTES] [-f FACTOR] [-a all|auto|ring|rd|hd]\n"
    "                        [--batches K] [--streams S] [--reforms R] [--json]\n"
    "       ringmaster bench --member [same options]\n"
    "All-reduce (float32, sum) among RANKS local processes (default 2) over TCP on 127.0.0.1, sizes\n"
    "MIN_BYTES (default 4) to MAX_BYTES (default 256M) growing by the integer FACTOR (default 4),\n"
    "for AUTO (the engine's choice; RINGMASTER_ALGORITHM's when set) and each algorithm forced per\n"
    "call through CommunicationOptions::algorithm (ring; rd = recursive doubling, the small-message one;\n"
    "hd = halving-doubling, the medium-size one).\n"
    "Per size: 2 warm-up calls, K timed batches (default 5) of back-to-back calls; the median and\n"
    "the spread of the per-call time over the batches; every result checked bit for bit.\n"
    "busbw = algbw * 2(n-1)/n. --json prints one JSON line per size and algorithm.\n"
    "--reforms R: then forms the group again R times (Reform(): rendezvous, mesh and, with a job key in\n"
    "RINGMASTER_JOB_KEY_FILE, its authentication) and prints the median time of one formation.\n"
    "--member: run as one rank of a group formed from TF_CONFIG and RINGMASTER_* (what the launcher\n"
    "starts; bench/allreduce/run.py starts members itself). Exit 1 if any result was wrong.\n";

struct Options {
  int ranks = 2, batches = 5, streams = 0, factor = 4, reforms = 0;
  int64_t min_bytes = 4, max_bytes = int64_t{256} << 20;
  std::string algo = "all";
  bool member = false, json = false;
};

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

// Returns the exit code for a bad or help argument, nullopt when parsed.
std::optional<int> Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    bool ok = true;
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--member") {
      o->member = true;
    } else if (a == "--json") {
      o->json = true;
    } else if (a == "-n" || a == "--ranks") {
      o->ranks = std::atoi(val().c_str());
      ok = o->ranks >= 1 && o->ranks <= 16;
    } else if (a == "-b" || a == "--min-bytes") {
      ok = ParseBytes(val(), &o->min_bytes);
    } else if (a == "-e" || a == "--max-bytes") {
      ok = ParseBytes(val(), &o->max_bytes);
    } else if (a == "-f" || a == "--step-factor") {
      o->factor = std::atoi(val().c_str());
      ok = o->factor >= 2;
    } else if (a == "-a" || a == "--algorithm") {
      o->algo = val();
      ok = o->algo == "all" || o->algo == "ring" || o->algo == "rd" || o->algo == "hd" || o->algo == "auto";
    } else if (a == "--reforms") {
      o->reforms = std::atoi(val().c_str());
      ok = o->reforms >= 1;
    } else if (a == "--batches") {
      o->batches = std::atoi(val().c_str());
      ok = o->batches >= 1;
    } else if (a == "--streams") {
      o->streams = std::atoi(val().c_str());
      ok = o->streams >= 1 && o->streams <= 8;
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "ringmaster bench: bad argument " << a << "\n" << kUsage;
      return 2;
    }
  }
  o->min_bytes = std::max<int64_t>(o->min_bytes, 4);
  o->max_bytes = std::max(o->max_bytes, o->min_bytes);
  return std::nullopt;
}

struct Algo {
  const char* name;     // the short name in the table and the JSON lines
  Algorithm algorithm;  // per call: kAuto leaves the choice to the engine
};

// One rank: forms the group from the environment and measures every size
// for every algorithm (interleaved per size, so drift in the machine's load
// hits them alike). Rank 0 prints the JSON lines.
int MemberMain(const Options& o) {
  if (o.streams > 0) ::setenv("RINGMASTER_STREAMS", std::to_string(o.streams).c_str(), 1);
  auto made = Communicator::FromEnvironment();
  if (!made.ok()) {
    std::cerr << "ringmaster bench: " << made.status().ToString() << "\n";
    return 1;
  }
  Communicator& comm = **made;
  std::vector<Algo> algos;
  if (o.algo == "all" || o.algo == "auto") algos.push_back({"auto", Algorithm::kAuto});
  if (o.algo == "all" || o.algo == "ring") algos.push_back({"ring", Algorithm::kRing});
  if (o.algo == "all" || o.algo == "rd") algos.push_back({"rd", Algorithm::kRecursiveDoubling});
  if (o.algo == "all" || o.algo == "hd") algos.push_back({"hd", Algorithm::kHalvingDoubling});

  rmbench::Args a;
  a.rank = comm.rank();
  a.size = comm.size();
  a.min_bytes = o.min_bytes;
  a.max_bytes = o.max_bytes;
  a.factor = o.factor;
  a.batches = o.batches;
  a.peer = "ringmaster";
  auto check = [&](const Status& s, const char* what) {
    if (s.ok()) return;
    std::cerr << "ringmaster bench: rank " << a.rank << ": " << what << ": " << s.ToString() << "\n";
    std::exit(1);
  };
  bool all_ok = true;
  for (int64_t bytes : rmbench::Sizes(a)) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    std::vector<float> data(static_cast<size_t>(count));
    Tensor t{data.data(), count, DataType::kFloat32};
    for (const auto& algo : algos) {
      CommunicationOptions per_call;
      per_call.algorithm = algo.algorithm;
      a.algo = algo.name;
      bool ok = true;
      rmbench::Measure(
          a, bytes,
          [&](bool pattern) {
            for (int64_t i = 0; i < count; ++i) data[i] = pattern ? rmbench::Pattern(a.rank, i) : 0.f;
          },
          [&] {
            check(comm.AllReduce({&t, 1}, ReduceOp::kSum, per_call), "all-reduce");
          },
          [&] { check(comm.Barrier(), "barrier"); },
          [&] { return ok = rmbench::CheckAll(data.data(), count, a.size); });
      all_ok &= ok;
    }
  }
  if (o.reforms > 0) {
    std::vector<double> ms;
    for (int i = 0; i < o.reforms; ++i) {
      // A member that starts reforming first aborts a barrier still running
      // elsewhere: that is Reform's contract, so the barrier's status is moot.
      (void)comm.Barrier();
      const auto start = std::chrono::steady_clock::now();
      check(comm.Reform(), "reform");
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    if (a.rank == 0) {
      std::printf(
          "{\"peer\":\"ringmaster\",\"what\":\"formation\",\"n\":%d,\"reforms\":%d,\"median_ms\":%.3f,"
          "\"min_ms\":%.3f,\"max_ms\":%.3f,\"correct\":true}\n",
          a.size, o.reforms, ms[ms.size() / 2], ms.front(), ms.back());
      std::fflush(stdout);
    }
  }
  return all_ok ? 0 : 1;
}

void PrintHeader(int ranks, const Options& o) {
  std::printf("# ringmaster bench: float32 sum all-reduce, %d processes on 127.0.0.1 (TCP), %d stream(s)\n",
              ranks, o.streams > 0 ? o.streams : CommunicatorSettings{}.streams);
  std::printf(
      "# time: median per call over %d timed batches (min..max = spread); busbw = algbw * 2(n-1)/n\n#\n",
      o.batches);
  std::printf("# %12s %12s %6s %6s %10s %10s %10s %8s %8s %8s\n", "size", "count", "algo", "iters", "time",
              "min", "max", "algbw", "busbw", "correct");
  std::printf("# %12s %12s %6s %6s %10s %10s %10s %8s %8s %8s\n", "(B)", "(elements)", "", "", "(us)", "(us)",
              "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

// Prints one result line; returns false for a wrong result.
bool PrintRow(const std::string& line, bool json) {
  if (line.empty() || line[0] != '{') return true;
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return true;
  const bool correct = j.value("correct", false);
  if (json) {
    std::printf("%s\n", line.c_str());
  } else if (j.value("what", std::string()) == "formation") {
    std::printf("# formation (Reform), %d processes: median %.2f ms (%.2f..%.2f) over %d\n", j.value("n", 0),
                j.value("median_ms", 0.0), j.value("min_ms", 0.0), j.value("max_ms", 0.0),
                j.value("reforms", 0));
  } else {
    const int n = j.value("n", 1);
    const double bytes = j.value("bytes", 0.0), t = j.value("median_us", 0.0);
    const double algbw = t > 0 ? bytes / t / 1e3 : 0;
    const double busbw = n > 1 ? algbw * 2.0 * (n - 1) / n : 0;
    std::printf("  %12.0f %12.0f %6s %6d %10.1f %10.1f %10.1f %8.3f %8.3f %8s\n", bytes, bytes / 4,
                j.value("algo", std::string()).c_str(), j.value("iters", 0), t, j.value("min_us", 0.0),
                j.value("max_us", 0.0), algbw, busbw, correct ? "ok" : "WRONG");
  }
  std::fflush(stdout);
  return correct;
}

// The launcher: N members of a fresh group of workers on 127.0.0.1.
int LaunchMain(const Options& o, int argc, char** argv) {
  char exe[PATH_MAX];
  ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) {
    std::cerr << "ringmaster bench: cannot find my own executable\n";
    return 1;
  }
  exe[len] = '\0';
  // TF_CONFIG ports, then each member's agent port (RINGMASTER_PORT).
  auto ports = internal::FreeLocalPorts(2 * o.ranks);
  if (ports.empty()) {
    std::cerr << "ringmaster bench: cannot reserve local ports: " << std::strerror(errno) << "\n";
    return 1;
  }
  DistributedJob job;
  job.name = "bench";
  job.replica_specs[ReplicaType::kWorker].replicas = o.ranks;
  auto address = [&](ReplicaType, int i) { return "127.0.0.1:" + std::to_string(ports[i]); };
  std::vector<std::string> configs;
  for (int r = 0; r < o.ranks; ++r) {
    auto c = GenerateTfConfig(job, ReplicaType::kWorker, r, TfConfigOptions{}, address);
    if (!c.ok()) {
      std::cerr << "ringmaster bench: " << c.status().ToString() << "\n";
      return 1;
    }
    configs.push_back(*c);
  }
  std::string agent_ports;
  for (int r = 0; r < o.ranks; ++r) agent_ports += (r ? "," : "") + std::to_string(ports[o.ranks + r]);
  std::vector<std::string> args = {exe, "bench", "--member"};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);

  int out[2];
  if (::pipe(out) != 0) return 1;
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("TF_CONFIG", configs[r].c_str(), 1);
      ::setenv("RINGMASTER_PORT", agent_ports.c_str(), 1);
      ::dup2(r == 0 ? out[1] : ::open("/dev/null", O_WRONLY), 1);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<char*> cargv;
      for (auto& s : args) cargv.push_back(s.data());
      cargv.push_back(nullptr);
      ::execv(exe, cargv.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  ::close(out[1]);
  if (!o.json) PrintHeader(o.ranks, o);
  bool all_ok = true;
  FILE* in = ::fdopen(out[0], "r");
  std::string line;
  for (int c; (c = std::fgetc(in)) != EOF;) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    all_ok &= PrintRow(line, o.json);
    line.clear();
  }
  std::fclose(in);
  int failed = 0;
  for (pid_t pid : pids) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failed;
  }
  if (failed) std::cerr << "ringmaster bench: " << failed << " of " << o.ranks << " members failed\n";
  return failed || !all_ok ? 1 : 0;
}

}  // namespace

int BenchMain(int argc, char** argv) {
  Options o;
  if (auto rc = Parse(argc, argv, &o)) return *rc;
  return o.member ? MemberMain(o) : LaunchMain(o, argc, argv);
}

}  // namespace ringmaster::cli
