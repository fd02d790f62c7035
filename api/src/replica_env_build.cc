// The operator's and the CLI's side of replica_env.h: a replica's
// environment from its job (replica_env.cc reads it back in the replica).
#include <algorithm>
#include <charconv>

#include "ringmaster/replica_env.h"

namespace ringmaster {
namespace {

std::string JoinPorts(const std::vector<int>& ports) {
  std::string out;
  for (int p : ports) out += (out.empty() ? "" : ",") + std::to_string(p);
  return out;
}

// Shortest text that reads back as the same double ("30", "0.5").
std::string SecondsText(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

StatusOr<EnvList> BuildReplicaEnv(const DistributedJob& job, const ReplicaKey& key,
                                  const ReplicaEnvOptions& opts) {
  auto tf_config = GenerateTfConfig(job, key.type, key.index, opts.tf_config, opts.address);
  if (!tf_config.ok()) return tf_config.status();
  EnvList env;
  env.emplace_back(kEnvTfConfig, *tf_config);
  for (const auto& [name, value] : job.communication.ToEnv()) env.emplace_back(name, value);
  if (!opts.agent_ports) {
    env.emplace_back(kEnvAgentPort, std::to_string(DefaultAgentPort(job.port)));
  } else if (!opts.agent_ports->empty()) {
    env.emplace_back(kEnvAgentPort, JoinPorts(*opts.agent_ports));
  }
  if (job.run_policy.recovery == RecoveryPolicy::kInPlace) env.emplace_back(kEnvRecovery, "InPlace");
  if (const auto& e = job.run_policy.elastic) {
    const int members = job.Replicas(ReplicaType::kChief) + job.Replicas(ReplicaType::kWorker);
    const int may_leave = std::max(0, job.Replicas(ReplicaType::kWorker) - e->min_workers);
    env.emplace_back(kEnvMinSize, std::to_string(std::max(1, members - may_leave)));
    env.emplace_back(kEnvRejoinTimeoutSeconds, SecondsText(e->rejoin_timeout_seconds));
  }
  if (opts.restart_count) env.emplace_back(kEnvRestartCount, std::to_string(*opts.restart_count));
  if (!opts.termination_log.empty()) env.emplace_back(kEnvTerminationLog, opts.termination_log);
  if (!opts.job_key_file.empty()) env.emplace_back(kEnvJobKeyFile, opts.job_key_file);
  return env;
}

}  // namespace ringmaster
