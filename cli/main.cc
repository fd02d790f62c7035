// The `ringmaster` command: validate, tfconfig, run (the embedded default:
// a job file as local processes), convert, bench. Job files hold
// DistributedJobs or Kubeflow TFJobs (kubeflow.org/v1), told apart by kind.
#include <unistd.h>

#include <CLI/CLI.hpp>
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
#include "number_flag.h"
#include "ringmaster/job.h"
#include "ringmaster/join_list.h"
#include "ringmaster/tf_config_gen.h"
#include "ringmaster/tfjob.h"

#ifndef RINGMASTER_VERSION
#define RINGMASTER_VERSION "0.0.0"
#endif

namespace {

using namespace ringmaster;

constexpr int kExitUsage = 2;

constexpr char kDescription[] =
    R"(ringmaster: runs TensorFlow-style distributed jobs. The DistributedJob file you
would `kubectl apply` runs here as local processes, or on Kubernetes via the
operator; so does a Kubeflow TFJob (kubeflow.org/v1). FILE is a path, or - for
standard input; -f FILE works too, as with kubectl. Options take --name VALUE
or --name=VALUE alike.)";

constexpr char kValidateHelp[] =
    R"(Loads every DistributedJob and TFJob document in FILE (YAML or JSON, `---`
separated), applies defaults and validates it. Exit 0 when all are valid;
otherwise each problem is printed as FILE:LINE:COLUMN: FIELD: MESSAGE and the
exit code is 1.)";

constexpr char kTfConfigHelp[] =
    R"(Prints the TF_CONFIG JSON that the operator injects into that replica's pod.
For a TFJob: what Kubeflow's training-operator injects, byte for byte (one
Service per replica, every replica type in the cluster, the sparse form with
enableDynamicWorker); a job of one replica gets none, and nothing is printed.)";

constexpr char kConvertHelp[] =
    R"(Prints the DistributedJob equivalent to each TFJob in FILE, as YAML that
`ringmaster validate` accepts. Ringmaster's annotations on the TFJob
(ringmaster.io/...) become fields. What changes meaning on the way is listed
in comments at the top of each document, as FILE:LINE:COLUMN: FIELD: NOTE.)";

constexpr char kRunHelp[] = R"(Runs every replica's first container (command + args; the image is ignored)
as a local process with its env, RINGMASTER_* and a TF_CONFIG on 127.0.0.1.
The job's restartPolicy, backoffLimit, successPolicy and activeDeadlineSeconds
apply as on Kubernetes. Output lines are prefixed with the replica
([worker-1]). Exit 0 only if the job succeeded; a failed run's summary ends
with "verdict: REPLICA: TEXT", what the failed replica that wrote first put in
its $RINGMASTER_TERMINATION_LOG (the agent names the culprit there).)";

constexpr char kFlightRecorderHelp[] =
    R"(Reads the flight-recorder dumps the agent writes when its collective group
aborts (one JSON file per member, in $RINGMASTER_FLIGHT_RECORDER_DIR) and
prints the members side by side: a line per member (rank, task, pid, the
abort's cause), a table with a row per collective (sequence number) and a
column per member showing its outcome (ok, running, queued, a status code;
"-": never entered; "?": older than its recorder holds), and a last line
naming the members that never entered the newest collective.)";

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

// Reads and loads FILE's jobs of both kinds; prints why not and returns
// nullopt on failure.
std::optional<std::vector<LoadedAnyJob>> LoadFile(const std::string& path) {
  const std::string source = SourceName(path);
  auto text = ReadFile(path);
  if (!text) {
    std::cerr << "ringmaster: cannot read " << source << "\n";
    return std::nullopt;
  }
  auto jobs = LoadAnyJobs(*text, source);
  if (!jobs.ok()) {
    std::cerr << jobs.status().message() << "\n";
    return std::nullopt;
  }
  return std::move(*jobs);
}

// Loads FILE and picks one job (by --job NAME when there are several); a
// TFJob comes with its own form. Prints the problems and returns nullopt
// on failure.
std::optional<LoadedAnyJob> LoadOne(const std::string& path, const std::string& job_name) {
  const std::string source = SourceName(path);
  auto jobs = LoadFile(path);
  if (!jobs) return std::nullopt;
  std::vector<LoadedAnyJob> valid;
  bool errors = false;
  for (auto& j : *jobs) {
    for (const auto& e : j.loaded.errors) std::cerr << FormatFieldError(e, source) << "\n";
    errors |= !j.loaded.errors.empty();
    if (j.loaded.job && (job_name.empty() || j.loaded.job->name == job_name)) valid.push_back(std::move(j));
  }
  if (errors) return std::nullopt;
  if (valid.size() != 1) {
    std::cerr << "ringmaster: " << source << ": "
              << (valid.empty()
                      ? "no DistributedJob or TFJob named '" + job_name + "'"
                      : "holds " + std::to_string(valid.size()) + " jobs: choose one with --job NAME")
              << "\n";
    return std::nullopt;
  }
  return std::move(valid.front());
}

int Validate(const std::string& path) {
  const std::string source = SourceName(path);
  auto text = ReadFile(path);
  if (!text) {
    std::cerr << "ringmaster: cannot read " << source << "\n";
    return 1;
  }
  auto jobs = LoadAnyJobs(*text, source);
  if (!jobs.ok()) {
    std::cerr << jobs.status().message() << "\n";
    return 1;
  }
  int problems = 0;
  for (const auto& j : *jobs) {
    for (const auto& e : j.loaded.errors) std::cerr << FormatFieldError(e, source) << "\n";
    problems += static_cast<int>(j.loaded.errors.size());
    if (!j.loaded.job) continue;
    const std::string replicas = JoinList(j.loaded.job->replica_specs, [&](const auto& r) {
      const auto& [type, spec] = r;
      // A TFJob's Master keeps its name.
      const bool master = j.tfjob && j.tfjob->chief_is_master && type == ReplicaType::kChief;
      return std::string(master ? "Master" : ReplicaTypeName(type)) + " x" + std::to_string(spec.replicas);
    });
    std::cout << source << ": " << j.kind << " " << j.loaded.job->name << " is valid (" << replicas << ")\n";
  }
  if (problems) std::cerr << source << ": " << problems << (problems == 1 ? " problem" : " problems") << "\n";
  return problems ? 1 : 0;
}

struct TfConfigArgs {
  std::string file, job_name;
  std::optional<std::string> ns;
  ReplicaType type = ReplicaType::kWorker;
  int index = 0;
  TfConfigOptions opts;
};

// --replica's TYPE:INDEX, or what is wrong with it.
std::string ParseReplica(const std::string& text, ReplicaType* type, int* index) {
  const auto colon = text.find(':');
  auto t = ParseReplicaType(text.substr(0, colon));
  char* end = nullptr;
  const long i = colon == std::string::npos ? -1 : std::strtol(text.c_str() + colon + 1, &end, 10);
  if (!t || colon == std::string::npos || *end != '\0' || i < 0 || i > INT_MAX) {
    return "'" + text + "' is not TYPE:INDEX (e.g. worker:1)";
  }
  *type = *t;
  *index = static_cast<int>(i);
  return "";
}

int TfConfig(TfConfigArgs a) {
  auto& [file, job_name, ns, type, index, opts] = a;
  auto loaded = LoadOne(file, job_name);
  if (!loaded) return 1;
  const DistributedJob& job = *loaded->loaded.job;
  opts.namespace_ = ns.value_or(job.namespace_.empty() ? "default" : job.namespace_);
  if (loaded->tfjob && !TfJobSetsTfConfig(*loaded->tfjob)) {
    if (index >= job.Replicas(type)) {
      std::cerr << "ringmaster: replica " << ReplicaTypeName(type) << ":" << index << " does not exist\n";
      return 1;
    }
    std::cerr << "ringmaster: TFJob " << job.name
              << " has one replica: training-operator sets no TF_CONFIG for it\n";
    return 0;
  }
  auto out = loaded->tfjob ? GenerateTfJobTfConfig(*loaded->tfjob, type, index, opts)
                           : GenerateTfConfig(job, type, index, opts);
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

int Run(const std::string& file, const std::string& job_name, cli::LocalRunOptions opts) {
  auto loaded = LoadOne(file, job_name);
  if (!loaded) return 1;
  opts.bin_dir = BinDir();
  opts.kind = loaded->kind;
  return cli::RunLocally(*loaded->loaded.job, opts, std::cout);
}

// Each TFJob of FILE as its DistributedJob, `---` between them.
int Convert(const std::string& path) {
  const std::string source = SourceName(path);
  auto jobs = LoadFile(path);
  if (!jobs) return 1;
  int problems = 0, converted = 0;
  std::string out;
  for (const auto& j : *jobs) {
    for (const auto& e : j.loaded.errors) std::cerr << FormatFieldError(e, source) << "\n";
    problems += static_cast<int>(j.loaded.errors.size());
    if (!j.tfjob) continue;
    if (converted++) out += "---\n";
    out += "# The DistributedJob of TFJob " + j.tfjob->job.name + " (ringmaster convert " + source + ")\n";
    if (!j.tfjob->notes.empty()) out += "# What changes meaning:\n";
    for (const auto& n : j.tfjob->notes) {
      FieldError at{n.path, n.message, n.line, n.column};
      out += "#   " + FormatFieldError(at, source) + "\n";
    }
    out += DistributedJobYaml(*j.tfjob);
  }
  if (problems) {
    std::cerr << source << ": " << problems << (problems == 1 ? " problem" : " problems") << "\n";
    return 1;
  }
  if (!converted) {
    std::cerr << "ringmaster: " << source << ": no TFJob to convert (it holds DistributedJobs already)\n";
    return 1;
  }
  std::cout << out;
  return 0;
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

int FlightRecorder(const std::vector<std::string>& paths, size_t last) {
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

// FILE as a positional or as -f/--filename (kubectl's spelling), one of them.
void AddFile(CLI::App* command, std::string* file) {
  auto* positional = command->add_option("FILE", *file, "the job file; - for standard input");
  command->add_option("-f,--filename", *file, "the job file, as with kubectl")->excludes(positional);
}

// Parse errors (exit 2) say what was wrong and where the help is.
int ParseFailed(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
    return app.exit(e);  // --help, --version
  std::string command = "ringmaster";
  for (const auto* sub : app.get_subcommands()) command += " " + sub->get_name();
  std::cerr << "ringmaster: " << e.what() << "\n(see '" << command << " --help')\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(kDescription, "ringmaster");
  app.set_version_flag("--version", std::string("ringmaster ") + RINGMASTER_VERSION);
  app.require_subcommand(1, 1);
  // An option given twice: the last wins (subcommands take their defaults
  // from here when they are made).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(32);

  std::string file, job_name;
  auto* validate = app.add_subcommand("validate", "check a job file; errors name the field and line");
  validate->footer(kValidateHelp);
  AddFile(validate, &file);

  TfConfigArgs tf;
  auto* tfconfig = app.add_subcommand("tfconfig", "print the TF_CONFIG the operator injects into a replica");
  tfconfig->footer(kTfConfigHelp);
  AddFile(tfconfig, &tf.file);
  tfconfig
      ->add_option_function<std::string>(
          "--replica", [&](const std::string& text) { ParseReplica(text, &tf.type, &tf.index); },
          "TYPE:INDEX, e.g. worker:1, Chief:0, ps:0 (Master = Chief)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& text) {
            ReplicaType type;
            int index;
            return ParseReplica(text, &type, &index);
          },
          "TYPE:INDEX"));
  tfconfig->add_option_function<std::string>(
      "--namespace", [&](const std::string& ns) { tf.ns = ns; },
      "default: the file's metadata.namespace, else \"default\"");
  tfconfig->add_option("--cluster-domain", tf.opts.cluster_domain,
                       "appended to the service names (cluster.local)");
  tfconfig->add_flag("--sparse", tf.opts.sparse, "Kubeflow's sparse form for dynamic workers");
  tfconfig->add_option("--job", tf.job_name, "which job, when FILE holds several");

  auto* convert =
      app.add_subcommand("convert", "print a TFJob's equivalent DistributedJob, with what changes");
  convert->footer(kConvertHelp);
  AddFile(convert, &file);

  cli::LocalRunOptions run_opts;
  auto* run = app.add_subcommand("run", "run the job's replicas as local processes");
  run->footer(kRunHelp);
  AddFile(run, &file);
  run->add_option("--job", job_name, "which job, when FILE holds several");
  run->add_option("--grace-period", run_opts.grace_seconds,
                  "when the job ends, replicas still running get this long to exit by themselves, then "
                  "SIGTERM, then SIGKILL after as long again (a pod's terminationGracePeriodSeconds). "
                  "Ctrl-C sends SIGTERM at once, SIGKILL after the grace period.")
      ->check(flags::NumberIn(0, 86400, "a number of seconds", false))
      ->capture_default_str();

  // bench parses its own options (bench.cc): they are passed on as they come.
  auto* bench =
      app.add_subcommand("bench", "all-reduce time and bandwidth, N local processes (bench --help)");
  bench->prefix_command();
  bench->set_help_flag();

  std::vector<std::string> paths;
  size_t last = 20;
  auto* recorder = app.add_subcommand("flight-recorder",
                                      "the members' last collectives side by side, from the dumps the agent "
                                      "writes when its group aborts");
  recorder->footer(kFlightRecorderHelp);
  recorder->add_option("PATH", paths, "a dump file, or a directory: its *.json files")
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  recorder->add_option("--last", last, "the last N collectives")
      ->check(flags::IntegerIn(1, 1000000))
      ->capture_default_str();

  const auto subcommands = app.get_subcommands([](const CLI::App*) { return true; });
  if (argc > 1 && argv[1][0] != '-' && std::none_of(subcommands.begin(), subcommands.end(), [&](auto* c) {
        return c->get_name() == argv[1];
      })) {
    std::cerr << "ringmaster: unknown command '" << argv[1] << "'\n(see 'ringmaster --help')\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ParseFailed(app, e);
  }
  for (auto [command, path] :
       {std::pair{validate, &file}, {tfconfig, &tf.file}, {run, &file}, {convert, &file}}) {
    if (command->parsed() && path->empty()) {
      std::cerr << "ringmaster: " << command->get_name()
                << " needs a FILE (a path, - for standard input, or -f FILE)\n(see 'ringmaster "
                << command->get_name() << " --help')\n";
      return kExitUsage;
    }
  }
  if (validate->parsed()) return Validate(file);
  if (tfconfig->parsed()) return TfConfig(std::move(tf));
  if (run->parsed()) return Run(file, job_name, std::move(run_opts));
  if (convert->parsed()) return Convert(file);
  if (bench->parsed()) return cli::BenchMain(bench->remaining());
  return FlightRecorder(paths, last);
}
