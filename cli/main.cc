// The `ringmaster` command line: validate, tfconfig, run (the embedded
// default: a job file as local processes), convert, bench, flight-recorder;
// their help and flags, parsed here, and each command in commands.h. Job
// files hold DistributedJobs or Kubeflow TFJobs (kubeflow.org/v1), told
// apart by kind.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "bench.h"
#include "commands.h"
#include "number_flag.h"

#ifndef RINGMASTER_VERSION
#define RINGMASTER_VERSION "0.0.0"
#endif

namespace {

using namespace ringmaster;
using namespace ringmaster::cli;

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
