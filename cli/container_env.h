// A replica's environment and command line under `ringmaster run`, as a
// kubelet would give its container. Pure: no getenv, no I/O (the runner
// passes the shell's environment in).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringmaster/job.h"
#include "ringmaster/replica_env.h"
#include "ringmaster/status.h"

namespace ringmaster::cli {

using EnvMap = std::map<std::string, std::string>;

// Where each replica is reached when every task shares this host: two
// ports per member of the group (chief and workers; evaluators get none),
// TF_CONFIG's (TensorFlow's server takes it) and the agent's, since each
// agent then needs its own. The agents' ports go to every task as
// RINGMASTER_PORT's per-member list, in the group's rank order (chief, then
// workers), so that members find the leader.
struct LocalAddresses {
  std::map<ReplicaKey, std::string> task;  // "127.0.0.1:PORT" per member
  std::vector<int> agent_ports;            // rank order
};
// `free_ports(n)` gives n distinct free ports.
LocalAddresses AssignLocalAddresses(const DistributedJob& job,
                                    const std::function<std::vector<int>(int)>& free_ports);

// The container's environment: its env list in order (each value expanded
// against the entries before it, $(VAR) as the kubelet does), then the
// replica environment the operator injects (BuildReplicaEnv with `opts`)
// where the container does not set it. TF_CONFIG and RINGMASTER_RESTART_COUNT
// are always ours: locally only loopback addresses work, and the count is
// the runner's. An entry with valueFrom has no local meaning: it is not set,
// and *warnings gets a line naming it. BuildReplicaEnv's error is returned
// with the replica's name in front.
StatusOr<EnvMap> ContainerEnv(const DistributedJob& job, const ReplicaKey& key,
                              const nlohmann::json& container, const ReplicaEnvOptions& opts,
                              std::vector<std::string>* warnings);

// The process's environment, "NAME=value" sorted by name: `inherited` (the
// shell's "NAME=value" entries), with PATH led by `bin_dir` when it is not
// empty (PATH itself defaulting to /usr/bin:/bin), and the container's on top.
std::vector<std::string> ProcessEnv(const std::vector<std::string>& inherited, const std::string& bin_dir,
                                    const EnvMap& container_env);

// The container's command then args, each $(VAR) expanded against `env`;
// empty when it has neither.
std::vector<std::string> ContainerArgv(const nlohmann::json& container, const EnvMap& env);

}  // namespace ringmaster::cli
