// CommunicatorSettings from the replica's environment. The variables are
// parsed in one place for the whole project (api's ParseReplicaEnv, the
// counterpart of the BuildReplicaEnv the operator and `ringmaster run` use);
// here they only become settings.
#include <cstdlib>

#include "ringmaster/communicator.h"
#include "ringmaster/replica_env.h"
#include "transport/auth.h"

namespace ringmaster {

StatusOr<std::vector<int>> CommunicatorSettings::ParseControlPorts(std::string_view value, size_t members) {
  return ParseAgentPorts(value, members);
}

StatusOr<CommunicatorSettings> CommunicatorSettings::FromEnvironment() {
  auto env = ParseReplicaEnv(&std::getenv);
  if (!env.ok()) return env.status();
  CommunicatorSettings s;
  s.group = env->group;
  if (!s.group.rank) {
    const TfConfig& tf = env->tf_config;
    return FailedPreconditionError("TF_CONFIG: task " + tf.task_type.value_or("(none)") + ":" +
                                   std::to_string(tf.task_index) +
                                   " is not a member of the collective group (chief and workers)");
  }
  s.defaults = env->communication;
  s.control_ports = env->agent_ports;
  s.formation_timeout_seconds = env->formation_timeout_seconds.value_or(s.formation_timeout_seconds);
  s.heartbeat_timeout_seconds = env->heartbeat_timeout_seconds.value_or(s.heartbeat_timeout_seconds);
  s.min_size = env->min_size.value_or(s.min_size);
  s.rejoin_timeout_seconds = env->rejoin_timeout_seconds.value_or(s.rejoin_timeout_seconds);
  s.streams = env->streams.value_or(s.streams);
  s.flight_recorder_size = env->flight_recorder_size.value_or(s.flight_recorder_size);
  s.flight_recorder_dir = env->flight_recorder_dir.value_or("");
  s.termination_log = env->termination_log.value_or("");
  if (env->job_key_file) {
    auto key = internal::ReadJobKeyFile(*env->job_key_file);
    if (!key.ok()) return key.status();
    s.job_key = std::move(*key);
  }
  return s;
}

}  // namespace ringmaster
