#include "ringmaster/replica_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace ringmaster {
namespace {

DistributedJob MakeJob(int chiefs, int workers) {
  DistributedJob job;
  job.name = "j";
  if (chiefs) job.replica_specs[ReplicaType::kChief] = {chiefs, RestartPolicy::kNever, {}};
  if (workers) job.replica_specs[ReplicaType::kWorker] = {workers, RestartPolicy::kNever, {}};
  job.communication.implementation = Implementation::kRing;
  job.communication.bytes_per_pack = 4096;
  job.communication.timeout_seconds = 2.5;
  return job;
}

using Vars = std::map<std::string, std::string>;

Vars ToMap(const EnvList& env) {
  Vars out;
  for (const auto& [k, v] : env) out[k] = v;
  return out;
}

auto EnvOf(Vars vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::vector<std::string> Names(const EnvList& env) {
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k);
  return out;
}

TEST(BuildReplicaEnv, PodHasTfConfigCommOptionsAndTheDefaultAgentPort) {
  const DistributedJob job = MakeJob(1, 2);
  ReplicaEnvOptions opts;
  opts.tf_config.namespace_ = "team";
  auto env = BuildReplicaEnv(job, {ReplicaType::kWorker, 1}, opts);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(Names(*env),
            (std::vector<std::string>{"TF_CONFIG", "RINGMASTER_BYTES_PER_PACK", "RINGMASTER_IMPLEMENTATION",
                                      "RINGMASTER_TIMEOUT_SECONDS", "RINGMASTER_PORT"}));
  Vars vars = ToMap(*env);
  EXPECT_EQ(vars["TF_CONFIG"], *GenerateTfConfig(job, ReplicaType::kWorker, 1, opts.tf_config));
  EXPECT_EQ(vars["RINGMASTER_PORT"], "2223");
  EXPECT_EQ(vars["RINGMASTER_IMPLEMENTATION"], "RING");
  EXPECT_EQ(vars["RINGMASTER_BYTES_PER_PACK"], "4096");
}

TEST(BuildReplicaEnv, RecoveryInPlaceIsSaidToTheProgram) {
  DistributedJob job = MakeJob(1, 2);
  job.run_policy.recovery = RecoveryPolicy::kInPlace;
  auto env = BuildReplicaEnv(job, {ReplicaType::kWorker, 1}, {});
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(ToMap(*env)["RINGMASTER_RECOVERY"], "InPlace");
  job.run_policy.recovery = RecoveryPolicy::kJob;  // the default says nothing
  env = BuildReplicaEnv(job, {ReplicaType::kWorker, 1}, {});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(ToMap(*env).count("RINGMASTER_RECOVERY"), 0u);
}

// runPolicy.elastic: the members the group needs at least (the chief and
// minWorkers workers) and the rejoin bound, read back by the agent.
TEST(BuildReplicaEnv, ElasticSizeIsTheMembersTheGroupNeeds) {
  DistributedJob job = MakeJob(1, 4);
  job.run_policy.recovery = RecoveryPolicy::kInPlace;
  job.run_policy.elastic = ElasticPolicy{2, 12.5};
  auto env = BuildReplicaEnv(job, {ReplicaType::kWorker, 3}, {});
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  Vars vars = ToMap(*env);
  EXPECT_EQ(vars["RINGMASTER_MIN_SIZE"], "3");
  EXPECT_EQ(vars["RINGMASTER_REJOIN_TIMEOUT_SECONDS"], "12.5");
  auto parsed = ParseReplicaEnv(EnvOf(vars));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->min_size, 3);
  EXPECT_EQ(parsed->rejoin_timeout_seconds, 12.5);
  job.run_policy.elastic.reset();  // none says nothing
  env = BuildReplicaEnv(job, {ReplicaType::kWorker, 3}, {});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(ToMap(*env).count("RINGMASTER_MIN_SIZE"), 0u);
}

TEST(BuildReplicaEnv, LocalRunHasPortListRestartCountTerminationLogAndJobKeyFile) {
  const DistributedJob job = MakeJob(1, 2);
  ReplicaEnvOptions opts;
  opts.address = [](ReplicaType t, int i) {
    return "127.0.0.1:" + std::to_string(t == ReplicaType::kChief ? 40000 : 40001 + i);
  };
  opts.agent_ports = std::vector<int>{41000, 41001, 41002};
  opts.restart_count = 2;
  opts.termination_log = "/tmp/run/worker-0.termination-log";
  opts.job_key_file = "/tmp/run/job-key";
  auto env = BuildReplicaEnv(job, {ReplicaType::kWorker, 0}, opts);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  Vars vars = ToMap(*env);
  EXPECT_NE(vars["TF_CONFIG"].find(R"("worker":["127.0.0.1:40001","127.0.0.1:40002"])"), std::string::npos)
      << vars["TF_CONFIG"];
  EXPECT_EQ(vars["RINGMASTER_PORT"], "41000,41001,41002");
  EXPECT_EQ(vars["RINGMASTER_RESTART_COUNT"], "2");
  EXPECT_EQ(vars["RINGMASTER_TERMINATION_LOG"], "/tmp/run/worker-0.termination-log");
  EXPECT_EQ(vars["RINGMASTER_JOB_KEY_FILE"], "/tmp/run/job-key");
  EXPECT_EQ(Names(*env).back(), "RINGMASTER_JOB_KEY_FILE");  // after the existing variables

  opts.agent_ports = std::vector<int>{};  // no members: no port
  opts.restart_count.reset();
  opts.termination_log.clear();
  opts.job_key_file.clear();
  env = BuildReplicaEnv(job, {ReplicaType::kWorker, 0}, opts);
  ASSERT_TRUE(env.ok());
  vars = ToMap(*env);
  EXPECT_EQ(vars.count("RINGMASTER_PORT"), 0u);
  EXPECT_EQ(vars.count("RINGMASTER_RESTART_COUNT"), 0u);
  EXPECT_EQ(vars.count("RINGMASTER_TERMINATION_LOG"), 0u);
  EXPECT_EQ(vars.count("RINGMASTER_JOB_KEY_FILE"), 0u);
}

TEST(BuildReplicaEnv, UnknownReplicaIsInvalidArgument) {
  auto env = BuildReplicaEnv(MakeJob(0, 2), {ReplicaType::kWorker, 2}, {});
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().code(), StatusCode::kInvalidArgument);
}

TEST(ParseReplicaEnv, RoundTripsWhatBuildGives) {
  const DistributedJob job = MakeJob(1, 2);
  ReplicaEnvOptions opts;
  opts.address = [](ReplicaType t, int i) {
    return "127.0.0.1:" + std::to_string(t == ReplicaType::kChief ? 40000 : 40001 + i);
  };
  opts.agent_ports = std::vector<int>{41000, 41001, 41002};
  opts.termination_log = "/tmp/tl";
  opts.job_key_file = "/var/run/secrets/ringmaster.io/job-key/key";
  auto env = BuildReplicaEnv(job, {ReplicaType::kWorker, 1}, opts);
  ASSERT_TRUE(env.ok());
  Vars vars = ToMap(*env);
  vars["RINGMASTER_FORMATION_TIMEOUT_SECONDS"] = "7.5";
  vars["RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS"] = "3";
  vars["RINGMASTER_STREAMS"] = "4";
  vars["RINGMASTER_FLIGHT_RECORDER_DIR"] = "/tmp/fr";
  vars["RINGMASTER_FLIGHT_RECORDER_SIZE"] = "256";
  auto parsed = ParseReplicaEnv(EnvOf(vars));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->tf_config.task_type, "worker");
  EXPECT_EQ(parsed->tf_config.task_index, 1);
  ASSERT_EQ(parsed->group.members.size(), 3u);
  EXPECT_EQ(parsed->group.rank, 2);
  EXPECT_EQ(parsed->communication, job.communication);
  EXPECT_EQ(parsed->agent_ports, (std::vector<int>{41000, 41001, 41002}));
  EXPECT_EQ(parsed->formation_timeout_seconds, 7.5);
  EXPECT_EQ(parsed->heartbeat_timeout_seconds, 3.0);
  EXPECT_EQ(parsed->streams, 4);
  EXPECT_EQ(parsed->flight_recorder_dir, "/tmp/fr");
  EXPECT_EQ(parsed->flight_recorder_size, 256);
  EXPECT_EQ(parsed->termination_log, "/tmp/tl");
  EXPECT_EQ(parsed->job_key_file, "/var/run/secrets/ringmaster.io/job-key/key");
}

TEST(ParseReplicaEnv, OptionalVariablesMayBeUnsetOrEmpty) {
  auto env = BuildReplicaEnv(MakeJob(0, 1), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(env.ok());
  Vars vars = ToMap(*env);
  vars["RINGMASTER_STREAMS"] = "";
  vars["RINGMASTER_JOB_KEY_FILE"] = "";
  auto parsed = ParseReplicaEnv(EnvOf(vars));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->agent_ports, (std::vector<int>{2223}));
  EXPECT_FALSE(parsed->formation_timeout_seconds);
  EXPECT_FALSE(parsed->heartbeat_timeout_seconds);
  EXPECT_FALSE(parsed->streams);
  EXPECT_FALSE(parsed->flight_recorder_dir);
  EXPECT_FALSE(parsed->flight_recorder_size);
  EXPECT_FALSE(parsed->termination_log);
  EXPECT_FALSE(parsed->job_key_file);
}

TEST(ParseReplicaEnv, JobKeyFileUnsetIsNullopt) {
  auto env = BuildReplicaEnv(MakeJob(0, 1), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(env.ok());
  auto parsed = ParseReplicaEnv(EnvOf(ToMap(*env)));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_FALSE(parsed->job_key_file);
}

TEST(ParseReplicaEnv, BadValuesNameTheVariable) {
  auto env = BuildReplicaEnv(MakeJob(1, 2), {ReplicaType::kChief, 0}, {});
  ASSERT_TRUE(env.ok());
  const Vars good = ToMap(*env);
  struct Case {
    const char* name;
    const char* value;
    const char* expect;
  };
  for (const Case& c : std::vector<Case>{
           {"RINGMASTER_FORMATION_TIMEOUT_SECONDS", "0",
            "RINGMASTER_FORMATION_TIMEOUT_SECONDS: must be a number > 0, got '0'"},
           {"RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS", "soon",
            "RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS: must be a number > 0, got 'soon'"},
           {"RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS", "inf", "RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS"},
           {"RINGMASTER_STREAMS", "9", "RINGMASTER_STREAMS: must be an integer in [1, 8], got '9'"},
           {"RINGMASTER_STREAMS", "2x", "RINGMASTER_STREAMS: must be an integer in [1, 8], got '2x'"},
           {"RINGMASTER_FLIGHT_RECORDER_SIZE", "0",
            "RINGMASTER_FLIGHT_RECORDER_SIZE: must be an integer in [1, 1048576], got '0'"},
           {"RINGMASTER_FLIGHT_RECORDER_SIZE", "1048577", "RINGMASTER_FLIGHT_RECORDER_SIZE"},
           {"RINGMASTER_PORT", "2223,2224", "RINGMASTER_PORT: 2 ports for 3 members"},
           {"RINGMASTER_MIN_SIZE", "4", "RINGMASTER_MIN_SIZE: must be an integer in [1, 3], got '4'"},
           {"RINGMASTER_REJOIN_TIMEOUT_SECONDS", "0",
            "RINGMASTER_REJOIN_TIMEOUT_SECONDS: must be a number > 0"},
           {"RINGMASTER_TIMEOUT_SECONDS", "-1", "RINGMASTER_TIMEOUT_SECONDS"},
           {"RINGMASTER_IMPLEMENTATION", "gloo", "RINGMASTER_IMPLEMENTATION"},
           {"TF_CONFIG", "{", "TF_CONFIG"},
       }) {
    Vars vars = good;
    vars[c.name] = c.value;
    auto parsed = ParseReplicaEnv(EnvOf(vars));
    ASSERT_FALSE(parsed.ok()) << c.name << "=" << c.value;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(parsed.status().message().find(c.expect), std::string::npos) << parsed.status().message();
  }
  Vars no_tf = good;
  no_tf.erase("TF_CONFIG");
  auto parsed = ParseReplicaEnv(EnvOf(no_tf));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "TF_CONFIG is not set");
}

TEST(ParseAgentPorts, OneForAllOrOnePerMember) {
  EXPECT_EQ(*ParseAgentPorts("", 3), std::vector<int>{});
  EXPECT_EQ(*ParseAgentPorts("2223", 3), std::vector<int>{2223});
  EXPECT_EQ(*ParseAgentPorts("1,2,65535", 3), (std::vector<int>{1, 2, 65535}));
  for (const char* bad : {"0", "65536", "a", "1,,3", "1,2,", " 1", "1,2"}) {
    auto r = ParseAgentPorts(bad, 3);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind("RINGMASTER_PORT: ", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find(std::string("got '") + bad + "'"), std::string::npos)
        << r.status().message();
  }
  EXPECT_EQ(ParseAgentPorts("1,2", 3).status().message(),
            "RINGMASTER_PORT: 2 ports for 3 members, got '1,2' (one port for every member, or one per member "
            "in rank order: chief, then workers)");
}

}  // namespace
}  // namespace ringmaster
