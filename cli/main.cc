// The `ringmaster` command: validate, tfconfig, run (the embedded default:
// a job file as local processes), bench.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench.h"
#include "flight_recorder.h"
#include "local_runner.h"
#include "ringmaster/job.h"
#include "ringmaster/tf_config_gen.h"

#ifndef RINGMASTER_VERSION
#define RINGMASTER_VERSION "0.0.0"
#endif

namespace {

using namespace ringmaster;

constexpr int kExitUsage = 2;

constexpr char kUsage[] = R"(usage: ringmaster <command> [options]

Runs TensorFlow-style distributed jobs: the DistributedJob file you would
`kubectl apply` runs here as local processes, or on Kubernetes via the operator.

commands (FILE: a path, or - for standard input; also -f FILE, as kubectl;
options take --name VALUE or --name=VALUE alike):
  validate FILE                  check a job file; errors name the field and line
  tfconfig FILE --replica T:I    print the TF_CONFIG the operator injects
  run FILE                       run the job's replicas as local processes
  bench                          all-reduce time and bandwidth, N local processes
  flight-recorder PATH...        the members' last collectives side by side, from
                                 the dumps the agent writes when its group aborts

  ringmaster <command> --help    options of one command
  ringmaster --version
)";

constexpr char kValidateUsage[] = R"(usage: ringmaster validate FILE

Loads every DistributedJob document in FILE (YAML or JSON, `---` separated),
applies defaults and validates it. Exit 0 when all are valid; otherwise each
problem is printed as FILE:LINE:COLUMN: FIELD: MESSAGE and the exit code is 1.
)";

constexpr char kTfConfigUsage[] = R"(usage: ringmaster tfconfig FILE --replica TYPE:INDEX [options]

Prints the TF_CONFIG JSON that the operator injects into that replica's pod.

  --replica TYPE:INDEX     e.g. worker:1, Chief:0, ps:0 (Master = Chief)
  --namespace NS           default: the file's metadata.namespace, else "default"
  --cluster-domain DOMAIN  appended to the service names (e.g. cluster.local)
  --sparse                 Kubeflow's sparse form for dynamic workers
  --job NAME               which job, when FILE holds several
)";

constexpr char kRunUsage[] = R"(usage: ringmaster run FILE [--job NAME] [--grace-period SECONDS]

Runs every replica's first container (command + args; the image is ignored)
as a local process with its env, RINGMASTER_* and a TF_CONFIG on 127.0.0.1.
The job's restartPolicy, backoffLimit, successPolicy and activeDeadlineSeconds
apply as on Kubernetes. Output lines are prefixed with the replica
([worker-1]). Exit 0 only if the job succeeded; a failed run's summary ends
with "verdict: REPLICA: TEXT", what the failed replica that wrote first put in
its $RINGMASTER_TERMINATION_LOG (the agent names the culprit there).

  --job NAME               which job, when FILE holds several
  --grace-period SECONDS   when the job ends, replicas still running get this
                           long to exit by themselves, then SIGTERM, then
                           SIGKILL after as long again (default 5; a pod's
                           terminationGracePeriodSeconds). Ctrl-C sends
                           SIGTERM at once, SIGKILL after the grace period.
)";

constexpr char kFlightRecorderUsage[] = R"(usage: ringmaster flight-recorder PATH... [--last N]

Reads the flight-recorder dumps the agent writes when its collective group
aborts (one JSON file per member, in $RINGMASTER_FLIGHT_RECORDER_DIR) and
prints the members side by side: a line per member (rank, task, pid, the
abort's cause), a table with a row per collective (sequence number) and a
column per member showing its outcome (ok, running, queued, a status code;
"-": never entered; "?": older than its recorder holds), and a last line
naming the members that never entered the newest collective.

  PATH       a dump file, or a directory: its *.json files
  --last N   the last N collectives (default 20)
)";

// "--name=value" as "--name" "value", so every option takes both forms (as
// the operator's flags do); "-f FILE" / "--filename FILE" as FILE, as kubectl.
std::vector<std::string> Normalize(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      out.push_back(a.substr(0, eq));
      out.push_back(a.substr(eq + 1));
    } else {
      out.push_back(a);
    }
  }
  std::vector<std::string> files;
  for (size_t i = 0; i < out.size(); ++i) {
    if ((out[i] == "-f" || out[i] == "--filename") && i + 1 < out.size()) {
      files.push_back(out[i + 1]);
      out.erase(out.begin() + static_cast<long>(i), out.begin() + static_cast<long>(i) + 2);
      --i;
    }
  }
  out.insert(out.begin(), files.begin(), files.end());  // FILE first, where the commands expect it
  return out;
}

// An argument that is an option, not FILE ("-" is standard input).
bool IsOption(const std::string& a) {
  return a.size() > 1 && a[0] == '-';
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

int UsageError(const std::string& message, const char* usage) {
  std::cerr << "ringmaster: " << message << "\n\n" << usage;
  return kExitUsage;
}

// "-" is standard input (`kubectl get djob x -o yaml | ringmaster run -`).
std::optional<std::string> ReadFile(const std::string& path) {
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    if (std::cin.bad()) return std::nullopt;
    return s.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// How messages name FILE.
std::string SourceName(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
}

// Loads FILE and picks one job (by --job NAME when there are several).
// Prints the problems and returns nullopt on failure.
std::optional<DistributedJob> LoadOne(const std::string& path, const std::string& job_name) {
  const std::string source = SourceName(path);
  auto text = ReadFile(path);
  if (!text) {
    std::cerr << "ringmaster: cannot read " << source << "\n";
    return std::nullopt;
  }
  auto jobs = LoadJobs(*text, source);
  if (!jobs.ok()) {
    std::cerr << jobs.status().message() << "\n";
    return std::nullopt;
  }
  std::vector<DistributedJob> valid;
  bool errors = false;
  for (auto& j : *jobs) {
    for (const auto& e : j.errors) std::cerr << FormatFieldError(e, source) << "\n";
    errors |= !j.errors.empty();
    if (j.job && (job_name.empty() || j.job->name == job_name)) valid.push_back(std::move(*j.job));
  }
  if (errors) return std::nullopt;
  if (valid.size() != 1) {
    std::cerr << "ringmaster: " << source << ": "
              << (valid.empty()
                      ? "no DistributedJob named '" + job_name + "'"
                      : "holds " + std::to_string(valid.size()) + " jobs: choose one with --job NAME")
              << "\n";
    return std::nullopt;
  }
  return std::move(valid.front());
}

int Validate(const std::vector<std::string>& args) {
  if (WantsHelp(args)) return std::cout << kValidateUsage, 0;
  if (args.size() != 1) return UsageError("validate takes exactly one FILE", kValidateUsage);
  const std::string& path = args[0];
  const std::string source = SourceName(path);
  auto text = ReadFile(path);
  if (!text) {
    std::cerr << "ringmaster: cannot read " << source << "\n";
    return 1;
  }
  auto jobs = LoadJobs(*text, source);
  if (!jobs.ok()) {
    std::cerr << jobs.status().message() << "\n";
    return 1;
  }
  int problems = 0;
  for (const auto& j : *jobs) {
    for (const auto& e : j.errors) std::cerr << FormatFieldError(e, source) << "\n";
    problems += static_cast<int>(j.errors.size());
    if (!j.job) continue;
    std::cout << source << ": DistributedJob " << j.job->name << " is valid (";
    bool first = true;
    for (const auto& [type, spec] : j.job->replica_specs) {
      std::cout << (first ? "" : ", ") << ReplicaTypeName(type) << " x" << spec.replicas;
      first = false;
    }
    std::cout << ")\n";
  }
  if (problems) std::cerr << source << ": " << problems << (problems == 1 ? " problem" : " problems") << "\n";
  return problems ? 1 : 0;
}

int TfConfig(const std::vector<std::string>& args) {
  if (WantsHelp(args)) return std::cout << kTfConfigUsage, 0;
  std::string file, replica, job_name;
  std::optional<std::string> ns;
  TfConfigOptions opts;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool takes_value =
        a == "--replica" || a == "--namespace" || a == "--cluster-domain" || a == "--job";
    if (takes_value && i + 1 >= args.size()) return UsageError(a + " needs a value", kTfConfigUsage);
    if (a == "--replica") {
      replica = args[++i];
    } else if (a == "--namespace") {
      ns = args[++i];
    } else if (a == "--cluster-domain") {
      opts.cluster_domain = args[++i];
    } else if (a == "--job") {
      job_name = args[++i];
    } else if (a == "--sparse") {
      opts.sparse = true;
    } else if (IsOption(a)) {
      return UsageError("unknown option " + a, kTfConfigUsage);
    } else if (file.empty()) {
      file = a;
    } else {
      return UsageError("unexpected argument " + a, kTfConfigUsage);
    }
  }
  if (file.empty()) return UsageError("tfconfig needs a FILE", kTfConfigUsage);
  if (replica.empty()) return UsageError("tfconfig needs --replica TYPE:INDEX", kTfConfigUsage);
  auto colon = replica.find(':');
  auto type = ParseReplicaType(replica.substr(0, colon));
  char* end = nullptr;
  long index = colon == std::string::npos ? -1 : std::strtol(replica.c_str() + colon + 1, &end, 10);
  if (!type || colon == std::string::npos || *end != '\0' || index < 0 || index > INT_MAX) {
    return UsageError("--replica: '" + replica + "' is not TYPE:INDEX (e.g. worker:1)", kTfConfigUsage);
  }
  auto job = LoadOne(file, job_name);
  if (!job) return 1;
  opts.namespace_ = ns.value_or(job->namespace_.empty() ? "default" : job->namespace_);
  auto out = GenerateTfConfig(*job, *type, static_cast<int>(index), opts);
  if (!out.ok()) {
    std::cerr << "ringmaster: " << out.status().message() << "\n";
    return 1;
  }
  std::cout << *out << "\n";
  return 0;
}

std::string BinDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.find_last_of('/'));
}

// A number of seconds in [0, 86400], or nullopt.
std::optional<double> ParseGrace(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 0 && v <= 86400)) return std::nullopt;
  return v;
}

int Run(const std::vector<std::string>& args) {
  if (WantsHelp(args)) return std::cout << kRunUsage, 0;
  std::string file, job_name;
  cli::LocalRunOptions opts;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--job") {
      if (i + 1 >= args.size()) return UsageError("--job needs a value", kRunUsage);
      job_name = args[++i];
    } else if (args[i] == "--grace-period") {
      if (i + 1 >= args.size()) return UsageError("--grace-period needs a value", kRunUsage);
      auto grace = ParseGrace(args[++i]);
      if (!grace) {
        return UsageError("--grace-period: must be a number of seconds in [0, 86400], got '" + args[i] + "'",
                          kRunUsage);
      }
      opts.grace_seconds = *grace;
    } else if (IsOption(args[i])) {
      return UsageError("unknown option " + args[i], kRunUsage);
    } else if (file.empty()) {
      file = args[i];
    } else {
      return UsageError("unexpected argument " + args[i], kRunUsage);
    }
  }
  if (file.empty()) return UsageError("run needs a FILE", kRunUsage);
  auto job = LoadOne(file, job_name);
  if (!job) return 1;
  opts.bin_dir = BinDir();
  return cli::RunLocally(*job, opts, std::cout);
}

// PATH's dump files: PATH itself, or a directory's *.json (sorted).
bool DumpFiles(const std::string& path, std::vector<std::string>& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    out.push_back(path);
    return true;
  }
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().extension() == ".json") found.push_back(e.path().string());
  }
  if (ec) {
    std::cerr << "ringmaster: cannot list " << path << ": " << ec.message() << "\n";
    return false;
  }
  if (found.empty()) {
    std::cerr << "ringmaster: " << path << ": no *.json flight-recorder dumps in this directory\n";
    return false;
  }
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

int FlightRecorder(const std::vector<std::string>& args) {
  if (WantsHelp(args)) return std::cout << kFlightRecorderUsage, 0;
  std::vector<std::string> paths;
  size_t last = 20;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--last") {
      if (i + 1 >= args.size()) return UsageError("--last needs a value", kFlightRecorderUsage);
      char* end = nullptr;
      const long n = std::strtol(args[++i].c_str(), &end, 10);
      if (args[i].empty() || *end != '\0' || n < 1 || n > 1000000) {
        return UsageError("--last: must be an integer in [1, 1000000], got '" + args[i] + "'",
                          kFlightRecorderUsage);
      }
      last = static_cast<size_t>(n);
    } else if (!args[i].empty() && args[i][0] == '-') {
      return UsageError("unknown option " + args[i], kFlightRecorderUsage);
    } else {
      paths.push_back(args[i]);
    }
  }
  if (paths.empty()) return UsageError("flight-recorder needs a PATH", kFlightRecorderUsage);
  std::vector<std::string> files;
  for (const auto& p : paths) {
    if (!DumpFiles(p, files)) return 1;
  }
  std::vector<cli::FlightDump> dumps;
  for (const auto& f : files) {
    auto text = ReadFile(f);
    if (!text) {
      std::cerr << "ringmaster: cannot read " << f << "\n";
      return 1;
    }
    auto dump = cli::ParseFlightDump(*text, f);
    if (!dump.ok()) {
      std::cerr << "ringmaster: " << dump.status().message() << "\n";
      return 1;
    }
    dumps.push_back(std::move(*dump));
  }
  auto out = cli::RenderFlightDumps(std::move(dumps), last);
  if (!out.ok()) {
    std::cerr << "ringmaster: " << out.status().message() << "\n";
    return 1;
  }
  std::cout << *out;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return UsageError("no command given", kUsage);
  const std::string cmd = args[0];
  const std::vector<std::string> rest = Normalize({args.begin() + 1, args.end()});
  if (cmd == "--help" || cmd == "-h" || cmd == "help") return std::cout << kUsage, 0;
  if (cmd == "--version" || cmd == "version")
    return std::cout << "ringmaster " << RINGMASTER_VERSION << "\n", 0;
  if (cmd == "validate") return Validate(rest);
  if (cmd == "tfconfig") return TfConfig(rest);
  if (cmd == "run") return Run(rest);
  if (cmd == "bench") return cli::BenchMain(argc - 1, argv + 1);
  if (cmd == "flight-recorder") return FlightRecorder(rest);
  return UsageError("unknown command '" + cmd + "'", kUsage);
}
