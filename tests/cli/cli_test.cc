// The ringmaster command, run as a user would run it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Result Ringmaster(const std::string& args) {
  std::string cmd = std::string(RINGMASTER_BIN) + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

std::string Src(const std::string& rel) {
  return std::string(RINGMASTER_SOURCE_DIR) + "/" + rel;
}

std::string TempFile(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Cli, HelpAndVersion) {
  auto r = Ringmaster("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("validate"), std::string::npos);
  EXPECT_NE(r.output.find("flight-recorder"), std::string::npos);
  for (const char* cmd : {"validate", "tfconfig", "run", "flight-recorder"}) {
    auto h = Ringmaster(std::string(cmd) + " --help");
    EXPECT_EQ(h.exit_code, 0) << cmd;
    EXPECT_NE(h.output.find(std::string("Usage: ringmaster ") + cmd), std::string::npos) << h.output;
  }
  EXPECT_TRUE(std::regex_search(Ringmaster("--version").output, std::regex(R"(^ringmaster \d+\.\d+\.\d+)")));
  auto unknown = Ringmaster("frobnicate");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("unknown command 'frobnicate'"), std::string::npos) << unknown.output;
  auto no_file = Ringmaster("run --job x");
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_NE(no_file.output.find("run needs a FILE"), std::string::npos) << no_file.output;
  auto stray = Ringmaster("validate a.yaml b.yaml");
  EXPECT_EQ(stray.exit_code, 2);
  EXPECT_NE(stray.output.find("b.yaml"), std::string::npos) << stray.output;
}

TEST(Cli, ValidateAcceptsTheExamples) {
  auto r = Ringmaster("validate " + Src("examples/quickstart.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("DistributedJob quickstart is valid (Chief x1, Worker x2)"), std::string::npos)
      << r.output;
}

TEST(Cli, ValidateNamesFieldAndLine) {
  std::string path = TempFile("invalid.yaml", R"(apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: bad}
spec:
  port: 99999
  communication:
    implementation: carrier-pigeon
  replicaSpecs:
    Worker:
      replicas: -2
      template: {spec: {containers: [{name: c}]}}
)");
  auto r = Ringmaster("validate " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find(path + ":5:9: spec.port: must be between 1 and 65535, got 99999"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(path + ":7:21: spec.communication.implementation"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(path + ":10:17: spec.replicaSpecs.Worker.replicas"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 problems"), std::string::npos) << r.output;
}

// kubectl's habits: a job from standard input (-f - or -), options as
// --name=value as well as --name value.
TEST(Cli, ReadsStandardInputAndTakesNameEqualsValue) {
  auto r = Ringmaster("validate -f - < " + Src("examples/quickstart.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("<stdin>: DistributedJob quickstart is valid"), std::string::npos) << r.output;
  const std::string bad = TempFile("bad-port.yaml", R"(apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: bad}
spec:
  port: 99999
  replicaSpecs: {Worker: {template: {spec: {containers: [{name: c, image: i}]}}}}
)");
  r = Ringmaster("validate - < " + bad);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("<stdin>:5:9: spec.port: must be between 1 and 65535"), std::string::npos)
      << r.output;
  const auto long_form =
      Ringmaster("tfconfig " + Src("examples/quickstart.yaml") + " --replica worker:1 --namespace team");
  const auto equals =
      Ringmaster("tfconfig --replica=worker:1 --namespace=team -f - < " + Src("examples/quickstart.yaml"));
  EXPECT_EQ(equals.exit_code, 0) << equals.output;
  EXPECT_EQ(equals.output, long_form.output);
  r = Ringmaster("run --grace-period=x " + Src("examples/quickstart.yaml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--grace-period: must be a number of seconds in [0, 86400], got 'x'"),
            std::string::npos)
      << r.output;
}

TEST(Cli, TfConfigPrintsKubeflowShape) {
  auto r = Ringmaster("tfconfig " + Src("examples/quickstart.yaml") + " --replica worker:1 --namespace team");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(
      r.output,
      R"({"cluster":{"chief":["quickstart-chief-0.quickstart.team.svc:2222"],"worker":[)"
      R"("quickstart-worker-0.quickstart.team.svc:2222","quickstart-worker-1.quickstart.team.svc:2222"]},)"
      R"("task":{"type":"worker","index":1},"environment":"cloud"})"
      "\n");
  auto m = Ringmaster("tfconfig " + Src("examples/quickstart.yaml") + " --replica Master:0");
  EXPECT_NE(m.output.find(R"("task":{"type":"chief","index":0})"), std::string::npos) << m.output;
  EXPECT_NE(m.output.find(".default.svc:2222"), std::string::npos) << m.output;
  EXPECT_EQ(Ringmaster("tfconfig " + Src("examples/quickstart.yaml") + " --replica worker:5").exit_code, 1);
  EXPECT_EQ(Ringmaster("tfconfig " + Src("examples/quickstart.yaml") + " --replica launcher:0").exit_code, 2);
}

// A Kubeflow TFJob: validate, tfconfig (training-operator's TF_CONFIG,
// byte for byte), run and convert take it as it is.
TEST(Cli, TakesAKubeflowTfJob) {
  const std::string file = Src("tests/cli/jobs/tfjob.yaml");
  auto r = Ringmaster("validate " + file);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(": TFJob tfjob-cli is valid (Master x1, Worker x2)"), std::string::npos)
      << r.output;

  // One Service per replica, "master" as written, no job Service in the name.
  r = Ringmaster("tfconfig " + file + " --replica worker:1 --namespace team");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, R"({"cluster":{"master":["tfjob-cli-master-0.team.svc:2222"],"worker":[)"
                      R"("tfjob-cli-worker-0.team.svc:2222","tfjob-cli-worker-1.team.svc:2222"]},)"
                      R"("task":{"type":"worker","index":1},"environment":"cloud"})"
                      "\n");
  r = Ringmaster("tfconfig " + file + " --replica master:0 --cluster-domain cluster.local");
  EXPECT_NE(r.output.find(R"({"cluster":{"master":["tfjob-cli-master-0.default.svc.cluster.local:2222"])"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(R"("task":{"type":"master","index":0})"), std::string::npos) << r.output;

  r = Ringmaster("run " + file);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[chief-0] tf RING 2048"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[worker-1] tf RING 2048"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("sidecar"), std::string::npos) << r.output;
  // The summary names the kind the file wrote.
  EXPECT_NE(r.output.find("(JobSucceeded: TFJob tfjob-cli succeeded"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("DistributedJob tfjob-cli"), std::string::npos) << r.output;

  r = Ringmaster("convert " + file);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kind: DistributedJob"), std::string::npos) << r.output;
  EXPECT_NE(
      r.output.find("#   " + file + ":15:5: spec.tfReplicaSpecs.Master: becomes the DistributedJob's Chief"),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("implementation: RING"), std::string::npos) << r.output;
  // What convert prints is a DistributedJob the CLI validates and runs alike.
  const std::string converted = TempFile("converted.yaml", r.output);
  auto v = Ringmaster("validate " + converted);
  EXPECT_EQ(v.exit_code, 0) << v.output << "\n" << r.output;
  EXPECT_NE(v.output.find(": DistributedJob tfjob-cli is valid (Chief x1, Worker x2)"), std::string::npos)
      << v.output;
  v = Ringmaster("run " + converted);
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("[worker-0] tf RING 2048"), std::string::npos) << v.output;
  // A file of DistributedJobs has nothing to convert.
  r = Ringmaster("convert " + Src("examples/quickstart.yaml"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no TFJob to convert"), std::string::npos) << r.output;
}

TEST(Cli, TfJobErrorsNameTheFieldAndLine) {
  const std::string path = TempFile("bad-tfjob.yaml", R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: bad
  annotations: {ringmaster.io/recovery: Sometimes}
spec:
  runPolicy: {schedulingPolicy: {minResources: {cpu: 1}}}
  tfReplicaSpecs:
    Worker:
      template: {spec: {containers: [{name: main, image: i}]}}
)");
  for (const char* command : {"validate", "run", "convert"}) {
    auto r = Ringmaster(std::string(command) + " " + path);
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.output;
    EXPECT_NE(
        r.output.find(path + ":5:41: metadata.annotations.ringmaster.io/recovery: unknown value 'Sometimes'"),
        std::string::npos)
        << command << ": " << r.output;
    EXPECT_NE(r.output.find(path + ":7:48: spec.runPolicy.schedulingPolicy.minResources: not supported"),
              std::string::npos)
        << command << ": " << r.output;
    EXPECT_NE(
        r.output.find(path + ":10:37: spec.tfReplicaSpecs.Worker.template.spec.containers: needs a container "
                             "named tensorflow"),
        std::string::npos)
        << command << ": " << r.output;
  }
  // One replica: training-operator sets no TF_CONFIG, so none is printed.
  const std::string single = TempFile("single-tfjob.yaml", R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: single}
spec:
  tfReplicaSpecs: {Worker: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}}
)");
  auto r = Ringmaster("tfconfig " + single + " --replica worker:0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "ringmaster: TFJob single has one replica: training-operator sets no TF_CONFIG for it\n");
}

TEST(Cli, BenchRunsOneProcessPerRankAndChecksEveryResult) {
  // Three processes (a group that is not a power of two), every algorithm,
  // three sizes: whether the results are right, not how fast they came.
  auto r = Ringmaster("bench -n 3 -b 4 -e 64K -f 64 --batches 1 --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(CountLines(r.output, R"("peer":"ringmaster")"), 12) << r.output;  // 3 sizes x 4 algorithms
  EXPECT_EQ(CountLines(r.output, R"("n":3)"), 12) << r.output;
  EXPECT_EQ(CountLines(r.output, R"("correct":true)"), 12) << r.output;
  for (const char* algo : {"auto", "ring", "rd", "hd"}) {
    EXPECT_EQ(CountLines(r.output, std::string(R"("algo":")") + algo + "\""), 3) << algo;
  }
  EXPECT_EQ(Ringmaster("bench -a nonsense").exit_code, 2);
}

TEST(Cli, RunFailsWhenAWorkerFailsWithRestartPolicyNever) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/worker-fails-never.yaml"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("[worker-1] failing"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Failed (ReplicaFailed: Worker 1 exited with code 1 (restartPolicy Never))"),
            std::string::npos)
      << r.output;
  // Nothing was restarted and the long-running replicas were stopped.
  EXPECT_EQ(CountLines(r.output, "restarting"), 0) << r.output;
  EXPECT_NE(r.output.find("[ringmaster] chief-0: stopped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[ringmaster] worker-0: stopped"), std::string::npos) << r.output;
  // The summary tells the replicas we stopped from the one that failed.
  EXPECT_NE(r.output.find("chief-0: started 1x, last exit code 143 (stopped by ringmaster)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("worker-1: started 1x, last exit code 1\n"), std::string::npos) << r.output;
  // It left no termination message: the verdict is the job's own reason.
  EXPECT_NE(
      r.output.find("[ringmaster] verdict: ReplicaFailed: Worker 1 exited with code 1 (restartPolicy Never)"),
      std::string::npos)
      << r.output;
}

TEST(Cli, RunRestartsUpToBackoffLimitThenFails) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/worker-fails-onfailure.yaml"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // Started three times (the first start and two restarts), each told its count.
  EXPECT_NE(r.output.find("[worker-0] start 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[worker-0] start 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[worker-0] start 2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[worker-0] start 3"), std::string::npos) << r.output;
  EXPECT_EQ(CountLines(r.output, "worker-0: restarting"), 2) << r.output;
  EXPECT_NE(r.output.find("Failed (BackoffLimitExceeded"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 restarts"), std::string::npos) << r.output;
}

TEST(Cli, RunRestartsRetryableExitCodesAndSucceeds) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/succeeds-after-restart.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The container's env and the job's communication options reach the process.
  EXPECT_NE(r.output.find("[worker-0] hello RING 1024 7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker-0: exited with code 137"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Succeeded (JobSucceeded"), std::string::npos) << r.output;
}

TEST(Cli, RunExpandsVariablesAsTheKubeletDoes) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/expands-vars.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Defined: replaced; "$$": escaped; undefined or defined later: kept as written.
  EXPECT_NE(r.output.find("[worker-0] got: hello world | $(GREETING) | RING | $(UNDEFINED_X) | [$(LATER)]"),
            std::string::npos)
      << r.output;
}

TEST(Cli, RunGivesEveryTaskItsOwnAgentPort) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/agent-ports.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::regex line(R"(\[(chief|worker)-\d\] ports=(\d+),(\d+),(\d+) tf=(.*))");
  std::set<std::string> lists, tf_ports;
  std::vector<std::string> agent;
  std::istringstream in(r.output);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    lists.insert(m[2].str() + "," + m[3].str() + "," + m[4].str());
    agent = {m[2], m[3], m[4]};
    std::regex port(R"(127\.0\.0\.1:(\d+))");
    const std::string tf = m[5];
    for (auto it = std::sregex_iterator(tf.begin(), tf.end(), port); it != std::sregex_iterator(); ++it)
      tf_ports.insert((*it)[1]);
  }
  // The same list in all three tasks, three distinct ports, none a TF_CONFIG port.
  ASSERT_EQ(lists.size(), 1u) << r.output;
  ASSERT_EQ(tf_ports.size(), 3u) << r.output;
  EXPECT_EQ(std::set<std::string>(agent.begin(), agent.end()).size(), 3u) << r.output;
  for (const auto& p : agent) EXPECT_EQ(tf_ports.count(p), 0u) << p << "\n" << r.output;
}

// The key lines of a job-key*.yaml run: path -> "mode=... size=... sum=...".
static std::map<std::string, std::set<std::string>> KeyFiles(const std::string& output, int* lines) {
  std::regex line(R"(\[(chief|worker)-\d\] key=(\S+) (mode=\d+ size=\d+ sum=.*))");
  std::map<std::string, std::set<std::string>> out;
  *lines = 0;
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    out[m[2]].insert(m[3]);
    ++*lines;
  }
  return out;
}

TEST(Cli, RunGivesEveryReplicaTheRunsOwn32ByteKeyFile0600) {
  std::set<std::string> sums;
  for (int run = 0; run < 2; ++run) {
    auto r = Ringmaster("run " + Src("tests/cli/jobs/job-key.yaml"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    int lines = 0;
    auto files = KeyFiles(r.output, &lines);
    EXPECT_EQ(lines, 3) << r.output;
    // One file for the three replicas, the same contents in each.
    ASSERT_EQ(files.size(), 1u) << r.output;
    const auto& [path, stats] = *files.begin();
    ASSERT_EQ(stats.size(), 1u) << r.output;
    EXPECT_EQ(stats.begin()->substr(0, 17), "mode=600 size=32 ") << r.output;
    EXPECT_NE(path.find("/ringmaster-run."), std::string::npos) << path;
    sums.insert(*stats.begin());
    // Removed with the run's directory.
    std::ifstream gone(path);
    EXPECT_FALSE(gone.good()) << path << " outlived the run";
    EXPECT_EQ(r.output.find("keySecretRef"), std::string::npos) << r.output;
  }
  EXPECT_EQ(sums.size(), 2u) << "two runs, two keys";
}

TEST(Cli, RunWithKeySecretRefSaysSoAndUsesAFreshKey) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/job-key-secret-ref.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(CountLines(r.output,
                       "[ringmaster] note: spec.communication.keySecretRef (Secret team-key) cannot be "
                       "read locally: this run uses a fresh key of its own"),
            1)
      << r.output;
  int lines = 0;
  auto files = KeyFiles(r.output, &lines);
  EXPECT_EQ(lines, 2) << r.output;
  ASSERT_EQ(files.size(), 1u) << r.output;
  ASSERT_EQ(files.begin()->second.size(), 1u) << r.output;
  EXPECT_EQ(files.begin()->second.begin()->substr(0, 17), "mode=600 size=32 ") << r.output;
}

TEST(Cli, RunQuickstart) {
  auto r = Ringmaster("run " + Src("examples/quickstart.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[chief-0]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("job quickstart: Succeeded"), std::string::npos) << r.output;
}

// Whether `out` has a line matching `pattern` (ECMAScript, one whole line).
bool HasLine(const std::string& out, const std::string& pattern) {
  return std::regex_search(out, std::regex("(^|\n)" + pattern + "(\n|$)"));
}

// The step a recovery resumes after depends on timing: a victim killed in
// the middle of step K's all-reduce may have sent all its data to one
// survivor, which then finishes K while the others do not (the group takes
// K from it). Hence [K-1 or K] below.
TEST(Cli, RunRecoveryExampleRestartsOnlyTheVictim) {
  // worker 1 dies in step 3; the chief and worker 0 keep their processes,
  // re-form with its new incarnation and give it the state of step 2 (or 3).
  auto r = Ringmaster("run " + Src("examples/recovery.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("job recovery: Succeeded"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", 1 restarts"), std::string::npos) << r.output;
  // runPolicy.recovery InPlace: the job says so, naming the culprit.
  EXPECT_NE(r.output.find("warning: Recovering: replacing Worker 1 alone; the others recover in place "
                          "(restart 1 of backoffLimit 3)"),
            std::string::npos)
      << r.output;
  for (const char* who : {"chief-0", "worker-0"}) {
    EXPECT_NE(r.output.find(std::string("[ringmaster]   ") + who + ": started 1x, last exit code 0"),
              std::string::npos)
        << who << "\n"
        << r.output;
  }
  EXPECT_NE(r.output.find("[ringmaster]   worker-1: started 2x, last exit code 0"), std::string::npos)
      << r.output;
  const std::string after = "resuming after step [23] from rank [01] \\(.*";
  EXPECT_TRUE(HasLine(r.output, "\\[chief-0\\] ringmaster-worker /job:chief/task:0: recovered: " + after))
      << r.output;
  EXPECT_TRUE(HasLine(r.output, "\\[worker-0\\] ringmaster-worker /job:worker/task:0: recovered: " + after))
      << r.output;
  EXPECT_TRUE(HasLine(
      r.output, "\\[worker-1\\] ringmaster-worker /job:worker/task:1: joined a running group: " + after))
      << r.output;
  // The summary: the recovery, how long it took, and the step the members say they resumed after.
  EXPECT_TRUE(
      HasLine(r.output,
              "\\[ringmaster\\]   recoveries in place: 1 \\(worker-1 back after [0-9]+s\\); the group last "
              "resumed after step [23]"))
      << r.output;
  EXPECT_NE(r.output.find("/job:chief/task:0: 6 steps verified (1 recoveries in place)"), std::string::npos);
  EXPECT_NE(r.output.find("/job:worker/task:0: 6 steps verified (1 recoveries in place)"), std::string::npos);
  EXPECT_NE(r.output.find("/job:worker/task:1: 6 steps verified (0 recoveries in place)"), std::string::npos);
}

TEST(Cli, RunRecoversTwiceTheSecondTimeFromTheLeadersFailure) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/recovery-twice.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[ringmaster]   worker-0: started 1x, last exit code 0"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[ringmaster]   worker-1: started 2x"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[ringmaster]   chief-0: started 2x"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/job:worker/task:0: 8 steps verified (2 recoveries in place)"), std::string::npos)
      << r.output;
  // The chief's new incarnation hosts formation again and takes a worker's state.
  EXPECT_TRUE(HasLine(r.output,
                      "\\[chief-0\\] ringmaster-worker /job:chief/task:0: joined a running group: resuming "
                      "after step [45] from rank [12] \\(.*"))
      << r.output;
}

TEST(Cli, RunRecoveryStartsOverWhenAMemberFailsDuringIt) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/recovery-fails-again.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[ringmaster]   chief-0: started 1x, last exit code 0"), std::string::npos)
      << r.output;
  EXPECT_NE(
      r.output.find("[worker-0] ringmaster-worker /job:worker/task:0: crashing in the recovery (drill)"),
      std::string::npos)
      << r.output;
  // The chief alone still holds the state (of step 1 or 2): both workers take it.
  EXPECT_TRUE(HasLine(r.output,
                      "\\[chief-0\\] ringmaster: /job:chief/task:0: resuming after step [12] from "
                      "/job:chief/task:0; /job:worker/task:0 and /job:worker/task:1 take its state"))
      << r.output;
  EXPECT_NE(r.output.find("/job:chief/task:0: 6 steps verified (1 recoveries in place)"), std::string::npos)
      << r.output;
}

TEST(Cli, RunTimeoutExampleNamesTheStalledTaskEverywhere) {
  // worker 1 stalls at step 2: both survivors, the stalled task and the
  // summary say that it never entered the collective the others waited in.
  auto r = Ringmaster("run " + Src("examples/timeout.yaml"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string culprit = "/job:worker/task:1 never entered it (its last finished collective is #2)";
  for (const char* who : {"[chief-0] ringmaster-worker /job:chief/task:0: step 2: DeadlineExceeded: ",
                          "[worker-0] ringmaster-worker /job:worker/task:0: step 2: DeadlineExceeded: "}) {
    size_t at = r.output.find(who);
    ASSERT_NE(at, std::string::npos) << who << "\n" << r.output;
    size_t eol = r.output.find('\n', at);
    EXPECT_NE(r.output.substr(at, eol - at).find(culprit), std::string::npos)
        << r.output.substr(at, eol - at);
  }
  EXPECT_NE(r.output.find("[worker-1] ringmaster-worker /job:worker/task:1: stalled; the group ended"),
            std::string::npos)
      << r.output;
  size_t verdict = r.output.rfind("[ringmaster] verdict: ");
  ASSERT_NE(verdict, std::string::npos) << r.output;
  EXPECT_NE(r.output.find(culprit, verdict), std::string::npos) << r.output.substr(verdict);
  EXPECT_NE(r.output.find("/job:chief/task:0 and /job:worker/task:0 waited", verdict), std::string::npos);
}

TEST(Cli, RunRefusesInvalidFiles) {
  std::string path = TempFile("nocmd.yaml",
                              "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\n"
                              "metadata: {name: x}\nspec: {replicaSpecs: {Worker: {}}}\n");
  auto r = Ringmaster("run " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("spec.replicaSpecs.Worker.template: required field is missing"), std::string::npos)
      << r.output;
  EXPECT_EQ(Ringmaster("run /nonexistent.yaml").exit_code, 1);
}

TEST(Cli, RunPrintsTheVerdictAndLetsSurvivorsReport) {
  auto r = Ringmaster("run " + Src("tests/cli/jobs/verdict.yaml") + " --grace-period 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // The survivor had its grace period to report and exit by itself...
  EXPECT_NE(r.output.find("[worker-0] survivor report"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker-0: started 1x, last exit code 2\n"), std::string::npos) << r.output;
  // ...the chief, which would not, then got SIGTERM, and could say so.
  EXPECT_NE(r.output.find("[chief-0] chief got SIGTERM"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("chief-0: started 1x, last exit code 143 (stopped by ringmaster)"),
            std::string::npos)
      << r.output;
  // The verdict of the replica that wrote first, last in the summary.
  EXPECT_TRUE(r.output.ends_with(
      "[ringmaster] verdict: worker-1: DeadlineExceeded: all-reduce collective #3 timed out: "
      "/job:worker/task:1 never entered it\n"))
      << r.output;
}

TEST(Cli, RunLetsWorkersFinishAfterTheChiefSucceeds) {
  std::string path = TempFile("chief-first.yaml", R"(apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: chief-first}
spec:
  replicaSpecs:
    Chief:
      template: {spec: {containers: [{name: c, command: [sh, -c, 'echo chief done']}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: c, command: [sh, -c, 'sleep 0.5; echo worker done']}]}}
)");
  auto r = Ringmaster("run " + path);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(CountLines(r.output, "] worker done"), 2) << r.output;
  EXPECT_EQ(CountLines(r.output, "stopped by ringmaster"), 0) << r.output;
  EXPECT_EQ(CountLines(r.output, "verdict:"), 0) << r.output;
}

TEST(Cli, RunValidatesTheGracePeriod) {
  for (const char* bad : {"-1", "soon", "1e9", ""}) {
    auto r = Ringmaster("run " + Src("tests/cli/jobs/verdict.yaml") + " --grace-period '" + bad + "'");
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.output.find(std::string("--grace-period: must be a number of seconds in [0, 86400], got '") +
                            bad + "'"),
              std::string::npos)
        << r.output;
  }
  auto r = Ringmaster("run " + Src("tests/cli/jobs/verdict.yaml") + " --grace-period");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--grace-period: 1 required"), std::string::npos) << r.output;
}

TEST(Cli, FlightRecorderShowsTheMembersSideBySide) {
  const std::string dir = testing::TempDir() + "flight-recorder/";
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  auto dump = [&](int rank, const std::string& task, const std::string& entries) {
    TempFile("flight-recorder/" + std::to_string(rank) + ".json",
             R"({"ringmaster_flight_recorder":1,"task":")" + task + R"(","rank":)" + std::to_string(rank) +
                 R"(,"size":3,"pid":42,"cause":{"code":"DeadlineExceeded","message":"timed out"},)"
                 R"("dumped_unix_us":1700000000000000,"entries":[)" +
                 entries + "]}\n");
  };
  auto entry = [](int seq, const std::string& outcome, bool done) {
    return R"({"seq":)" + std::to_string(seq) +
           R"(,"kind":"all-reduce","pack":0,"packs":1,"dtype":"float32","bytes":4096,"algorithm":"ring",)"
           R"("heard_from":[],"start_unix_us":1,"end_unix_us":)" +
           (done ? "2" : "null") + R"(,"outcome":")" + outcome + R"("})";
  };
  dump(0, "/job:chief/task:0", entry(1, "ok", true) + "," + entry(2, "DeadlineExceeded", true));
  dump(1, "/job:worker/task:0", entry(1, "ok", true) + "," + entry(2, "running", false));
  dump(2, "/job:worker/task:1", entry(1, "ok", true));
  auto r = Ringmaster("flight-recorder " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 1 /job:worker/task:0 (pid 42): DeadlineExceeded: timed out\n"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(
      std::regex_search(r.output, std::regex(R"( #2  all-reduce[^\n]*  DeadlineExceeded  running  -\n)")))
      << r.output;
  EXPECT_TRUE(r.output.ends_with(
      "#2 all-reduce: never entered by rank 2 /job:worker/task:1 (its last finished collective is #1)\n"
      "#2 in progress: rank 1 running, heard from no one\n"))
      << r.output;
  // --last 1 keeps the newest collective only.
  auto one = Ringmaster("flight-recorder --last 1 " + dir + "0.json " + dir + "1.json");
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(CountLines(one.output, " #1 "), 0) << one.output;
  EXPECT_NE(one.output.find("no dump from rank 2"), std::string::npos) << one.output;
  // A bad file: named, with what is wrong.
  const std::string bad = TempFile("flight-recorder/3.json", R"({"ringmaster_flight_recorder":1,"task":7})");
  auto b = Ringmaster("flight-recorder " + dir);
  EXPECT_EQ(b.exit_code, 1) << b.output;
  EXPECT_NE(b.output.find(bad + ": task: must be a string, got 7"), std::string::npos) << b.output;
  EXPECT_EQ(Ringmaster("flight-recorder").exit_code, 2);
  EXPECT_EQ(Ringmaster("flight-recorder --last 0 " + dir).exit_code, 2);
  EXPECT_EQ(Ringmaster("flight-recorder /nonexistent.json").exit_code, 1);
}

TEST(Cli, RunStopsEveryReplicaOnInterrupt) {
  std::string path = TempFile("sleepy.yaml", R"(apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: sleepy}
spec:
  replicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: c, command: [sh, -c, 'echo up; sleep 300']}]}}
)");
  // Sends SIGINT to ringmaster once both replicas are up, then checks that no
  // (the pattern is "[;]" so that pgrep does not find its own shell)
  // `sleep 300` of ours survives.
  std::string script = "(" + std::string(RINGMASTER_BIN) + " run " + path + " > " + path +
                       ".out 2>&1 & pid=$!; for i in $(seq 100); do [ $(grep -c '] up' " + path +
                       ".out) = 2 ] && break; sleep 0.1; done; kill -INT $pid; wait $pid; echo rc=$?)";
  Result r;
  FILE* p = popen(script.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256];
  while (fgets(buf, sizeof buf, p)) r.output += buf;
  pclose(p);
  std::ifstream out(path + ".out");
  std::string log((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  EXPECT_NE(r.output.find("rc=130"), std::string::npos) << r.output << log;
  EXPECT_NE(log.find("Interrupted"), std::string::npos) << log;
  EXPECT_EQ(CountLines(log, ": stopped"), 2) << log;
  EXPECT_NE(system("pgrep -f 'echo up[;] sleep 300' >/dev/null"), 0) << "a replica outlived ringmaster run";
}

}  // namespace
