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

#include <CLI/CLI.hpp>
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
#include "number_flag.h"
#include "ringmaster/comm_options.h"
#include "ringmaster/communicator.h"
#include "ringmaster/enum_names.h"
#include "ringmaster/job.h"
#include "ringmaster/tf_config_gen.h"
#include "rmbench/bench_common.h"

namespace ringmaster::cli {
namespace {

constexpr char kDescription[] =
    "All-reduce (float32, sum) among RANKS local processes over TCP on 127.0.0.1, sizes MIN_BYTES to\n"
    "MAX_BYTES growing by the integer FACTOR, for AUTO (the engine's choice; RINGMASTER_ALGORITHM's when\n"
    "set) and each algorithm forced per call through CommunicationOptions::algorithm (ring; rd = recursive\n"
    "doubling, the small-message one; hd = halving-doubling, the medium-size one).";

constexpr char kFooter[] =
    "Per size: 2 warm-up calls, K timed batches of back-to-back calls; the median and the spread of the\n"
    "per-call time over the batches; every result checked bit for bit. busbw = algbw * 2(n-1)/n.\n"
    "Exit 1 if any result was wrong.";

struct Options {
  int ranks = 2, batches = 5, streams = 0, factor = 4, reforms = 0;
  int64_t min_bytes = 4, max_bytes = int64_t{256} << 20;
  std::string algo = "all";
  bool member = false, json = false;
};

// "64K", "256M", "1G", "4": bytes, or what is wrong.
std::string ParseBytes(const std::string& s, int64_t* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string suffix(end);
  double mult = 1;
  if (suffix == "K" || suffix == "k") {
    mult = 1 << 10;
  } else if (suffix == "M" || suffix == "m") {
    mult = 1 << 20;
  } else if (suffix == "G" || suffix == "g") {
    mult = double(1 << 30);
  } else if (!suffix.empty()) {
    return "must be a size in bytes (4, 64K, 256M, 1G), got '" + s + "'";
  }
  if (s.empty() || end == s.c_str() || !(v >= 0 && v * mult < 0x1p62)) {
    return "must be a size in bytes (4, 64K, 256M, 1G), got '" + s + "'";
  }
  *out = static_cast<int64_t>(v * mult);
  return "";
}

CLI::Validator Bytes() {
  return CLI::Validator(
      [](std::string& text) {
        int64_t ignored;
        return ParseBytes(text, &ignored);
      },
      "BYTES");
}

// Returns the exit code for a bad or help argument, nullopt when parsed.
std::optional<int> Parse(const std::vector<std::string>& args, Options* o) {
  CLI::App app(kDescription, "ringmaster bench");
  app.footer(kFooter);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // given twice: the last wins
  app.get_formatter()->column_width(36);
  std::string min_bytes = "4", max_bytes = "256M";
  app.add_option("-n,--ranks", o->ranks, "local processes")
      ->check(flags::IntegerIn(1, 16))
      ->capture_default_str();
  app.add_option("-b,--min-bytes", min_bytes, "smallest size")->check(Bytes())->capture_default_str();
  app.add_option("-e,--max-bytes", max_bytes, "largest size")->check(Bytes())->capture_default_str();
  app.add_option("-f,--step-factor", o->factor, "each size is FACTOR times the last")
      ->check(flags::IntegerIn(2, 1024))
      ->capture_default_str();
  app.add_option("-a,--algorithm", o->algo, "all, or one of enums.h's algorithms (auto, ring, rd, hd, ...)")
      ->check(CLI::Validator(
          [](std::string& name) {
            if (name == "all") return std::string();
            auto v = AlgorithmTable().Parse(name, "--algorithm");
            // CLI11 puts the flag's name in front itself.
            return v.ok() ? std::string() : v.status().message().substr(sizeof("--algorithm: ") - 1);
          },
          "ALGORITHM"))
      ->capture_default_str();
  app.add_option("--batches", o->batches, "timed batches per size")
      ->check(flags::IntegerIn(1, 1000))
      ->capture_default_str();
  app.add_option("--streams", o->streams, "TCP connections per peer (default: RINGMASTER_STREAMS's, else 1)")
      ->check(flags::IntegerIn(1, 8));
  app.add_option("--reforms", o->reforms,
                 "then forms the group again R times (Reform(): rendezvous, mesh and, with a job key in "
                 "RINGMASTER_JOB_KEY_FILE, its authentication) and prints the median time of one formation")
      ->check(flags::IntegerIn(1, 1000000));
  app.add_flag("--json", o->json, "one JSON line per size and algorithm");
  app.add_flag("--member", o->member,
               "run as one rank of a group formed from TF_CONFIG and RINGMASTER_* (what the launcher "
               "starts; bench/allreduce/run.py starts members itself)");
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << "ringmaster bench: " << e.what() << "\n(see 'ringmaster bench --help')\n";
    return 2;
  }
  ParseBytes(min_bytes, &o->min_bytes);
  ParseBytes(max_bytes, &o->max_bytes);
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
  // Every algorithm of the table, or the one asked for (checked when parsed),
  // each under its shortest spelling ("rd", as the peers' rows are named).
  std::vector<Algo> algos;
  const EnumTable& table = AlgorithmTable();
  for (const auto& e : table.values) {
    if (o.algo != "all" && *table.Parse(o.algo, "--algorithm") != e.value) continue;
    std::string_view name = e.name;
    for (const auto& alias : table.aliases) {
      if (alias.value == e.value && alias.name.size() < name.size()) name = alias.name;
    }
    algos.push_back({name.data(), static_cast<Algorithm>(e.value)});  // the tables' literals: NUL-terminated
  }

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
int LaunchMain(const Options& o, const std::vector<std::string>& bench_args) {
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
  args.insert(args.end(), bench_args.begin(), bench_args.end());

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

int BenchMain(const std::vector<std::string>& args) {
  Options o;
  if (auto rc = Parse(args, &o)) return *rc;
  return o.member ? MemberMain(o) : LaunchMain(o, args);
}

}  // namespace ringmaster::cli
