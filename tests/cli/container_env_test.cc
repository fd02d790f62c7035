// What a replica gets under `ringmaster run` (container_env.h): its
// addresses on the one host, its environment as a kubelet would build it,
// and its command line.
#include "container_env.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace ringmaster::cli {
namespace {

DistributedJob Job(const std::string& container) {
  const std::string replica = "      template: {spec: {containers: [" + container + "]}}\n";
  auto job = LoadSingleJob(
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata: {name: d}\n"
      "spec:\n  replicaSpecs:\n    Chief:\n      replicas: 1\n" +
          replica + "    Worker:\n      replicas: 2\n" + replica + "    Evaluator:\n      replicas: 1\n" +
          replica,
      "job.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : DistributedJob{};
}

std::vector<int> Ports(int n) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(41000 + i);
  return out;
}

const nlohmann::json& Container(const DistributedJob& job, ReplicaType type) {
  return job.Find(type)->pod_template["spec"]["containers"][0];
}

TEST(AssignLocalAddresses, TwoPortsPerMemberAndTheAgentsInRankOrder) {
  const DistributedJob job = Job("{name: c, command: [w]}");
  int asked = -1;
  const LocalAddresses a = AssignLocalAddresses(job, [&](int n) {
    asked = n;
    return Ports(n);
  });
  EXPECT_EQ(asked, 6) << "chief and two workers, two ports each; the evaluator is no member";
  ASSERT_EQ(a.task.size(), 3u);
  std::set<std::string> distinct;
  for (const auto& [key, address] : a.task) {
    EXPECT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
    distinct.insert(address);
  }
  EXPECT_EQ(distinct.size(), 3u);
  EXPECT_EQ(a.task.count({ReplicaType::kEvaluator, 0}), 0u);
  ASSERT_EQ(a.agent_ports.size(), 3u);
  for (int p : a.agent_ports) {
    for (const auto& [key, address] : a.task) EXPECT_NE(address, "127.0.0.1:" + std::to_string(p));
  }
}

ReplicaEnvOptions Options(const LocalAddresses& a, int restart) {
  ReplicaEnvOptions o;
  o.address = [&a](ReplicaType t, int i) { return a.task.at({t, i}); };
  o.agent_ports = a.agent_ports;
  o.restart_count = restart;
  o.termination_log = "/run/x/worker-1.termination-log";
  o.job_key_file = "/run/x/job-key";
  return o;
}

TEST(ContainerEnv, TheContainersOwnFirstThenOursWhereItSetsNone) {
  const DistributedJob job =
      Job("{name: c, command: [w], env: [{name: A, value: one}, {name: B, value: '$(A)-two'}, "
          "{name: RINGMASTER_STREAMS, value: '4'}, {name: TF_CONFIG, value: mine}, "
          "{name: RINGMASTER_RESTART_COUNT, value: '9'}, {name: S, valueFrom: {secretKeyRef: {name: s, key: "
          "k}}}]}");
  const LocalAddresses a = AssignLocalAddresses(job, Ports);
  std::vector<std::string> warnings;
  auto env = ContainerEnv(job, {ReplicaType::kWorker, 1}, Container(job, ReplicaType::kWorker), Options(a, 2),
                          &warnings);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->at("A"), "one");
  EXPECT_EQ(env->at("B"), "one-two") << "$(VAR) expands against the entries before it";
  EXPECT_EQ(env->at("RINGMASTER_STREAMS"), "4") << "the container's own value stays";
  EXPECT_NE(env->at("TF_CONFIG"), "mine") << "TF_CONFIG is always ours: only loopback works locally";
  EXPECT_NE(env->at("TF_CONFIG").find("127.0.0.1:"), std::string::npos);
  EXPECT_EQ(env->at("RINGMASTER_RESTART_COUNT"), "2") << "the count is the runner's";
  EXPECT_EQ(env->at("RINGMASTER_TERMINATION_LOG"), "/run/x/worker-1.termination-log");
  EXPECT_EQ(env->at("RINGMASTER_JOB_KEY_FILE"), "/run/x/job-key");
  EXPECT_EQ(env->at("RINGMASTER_PORT"), "41003,41004,41005");
  EXPECT_EQ(env->count("S"), 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "worker-1: env S uses valueFrom, which has no local meaning: not set");
}

TEST(ContainerEnv, NoSuchReplicaIsAnErrorNamingIt) {
  const DistributedJob job = Job("{name: c, command: [w]}");
  const LocalAddresses a = AssignLocalAddresses(job, Ports);
  std::vector<std::string> warnings;
  auto env = ContainerEnv(job, {ReplicaType::kWorker, 7}, Container(job, ReplicaType::kWorker), Options(a, 0),
                          &warnings);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().message().rfind("worker-7: ", 0), 0u) << env.status().message();
}

TEST(ProcessEnv, TheShellsWithPathLedByTheBinDirAndTheContainersOnTop) {
  const std::vector<std::string> shell = {"HOME=/root", "PATH=/usr/local/bin:/usr/bin", "X=shell",
                                          "NOEQUALS"};
  const auto env = ProcessEnv(shell, "/opt/rm/bin", {{"X", "container"}, {"Y", "y=1"}});
  EXPECT_EQ(env, (std::vector<std::string>{"HOME=/root", "PATH=/opt/rm/bin:/usr/local/bin:/usr/bin",
                                           "X=container", "Y=y=1"}));
  EXPECT_EQ(ProcessEnv({}, "/b", {}), std::vector<std::string>{"PATH=/b:/usr/bin:/bin"});
  EXPECT_EQ(ProcessEnv({"PATH=/p"}, "", {}), std::vector<std::string>{"PATH=/p"});
}

TEST(ContainerArgv, CommandThenArgsExpandedAgainstTheEnvironment) {
  const nlohmann::json c = {{"command", {"python", "$(SCRIPT)"}},
                            {"args", {"--n=$(N)", "$(UNSET)", "$$(N)"}}};
  EXPECT_EQ(ContainerArgv(c, {{"SCRIPT", "train.py"}, {"N", "3"}}),
            (std::vector<std::string>{"python", "train.py", "--n=3", "$(UNSET)", "$(N)"}));
  EXPECT_TRUE(ContainerArgv(nlohmann::json::object(), {}).empty());
}

}  // namespace
}  // namespace ringmaster::cli
