// CommunicatorSettings from the replica's environment, and their checks. The
// variables are parsed in one place for the whole project (api's
// ParseReplicaEnv, the counterpart of the BuildReplicaEnv the operator and
// `ringmaster run` use); here they only become settings.
#include <cstdlib>

#include "ringmaster/communicator.h"
#include "ringmaster/replica_env.h"
#include "transport/auth.h"
#include "transport/net.h"

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

Status CommunicatorSettings::Validate() const {
  const int size = static_cast<int>(group.members.size());
  const int rank = group.rank.value_or(-1);
  if (size < 1) return InvalidArgumentError("group: no members");
  if (rank < 0 || rank >= size) return InvalidArgumentError("group.rank: not a member of the group");
  if (!(formation_timeout_seconds > 0)) return InvalidArgumentError("formation_timeout_seconds must be > 0");
  if (!(heartbeat_timeout_seconds > 0)) return InvalidArgumentError("heartbeat_timeout_seconds must be > 0");
  if (streams < 1 || streams > 8) return InvalidArgumentError("streams must be in [1, 8]");
  if (flight_recorder_size < 1) return InvalidArgumentError("flight_recorder_size must be >= 1");
  if (min_size < 0 || min_size > size) {
    return InvalidArgumentError("min_size: " + std::to_string(min_size) + " is not in [0, " +
                                std::to_string(size) + "] (the group's members)");
  }
  if (min_size > 0 && !(rejoin_timeout_seconds > 0))
    return InvalidArgumentError("rejoin_timeout_seconds must be > 0");
  RM_RETURN_IF_ERROR(defaults.Validate());
  if (!job_key.empty() &&
      (job_key.size() < internal::kMinKeyBytes || job_key.size() > internal::kMaxKeyBytes)) {
    return InvalidArgumentError("job_key: must be " + std::to_string(internal::kMinKeyBytes) + " to " +
                                std::to_string(internal::kMaxKeyBytes) + " bytes, got " +
                                std::to_string(job_key.size()));
  }
  for (const auto& m : group.members) {
    std::string host;
    int port = 0;
    RM_RETURN_IF_ERROR(internal::SplitHostPort(m.address, &host, &port));
  }
  if (!control_ports.empty() && control_ports.size() != 1 &&
      control_ports.size() != static_cast<size_t>(size)) {
    return InvalidArgumentError("control_ports: " + std::to_string(control_ports.size()) + " ports for " +
                                std::to_string(size) + " members (want 1 or one per member)");
  }
  return OkStatus();
}

}  // namespace ringmaster
