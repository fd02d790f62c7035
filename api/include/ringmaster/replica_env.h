// A replica's environment: built in one place for the operator's pods and
// for `ringmaster run`'s processes, and parsed in one place by the agent.
// TF_CONFIG, the job's communication options and the RINGMASTER_* variables.
// Pure: no getenv, no I/O.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/comm_options.h"
#include "ringmaster/env_vars.h"
#include "ringmaster/job.h"
#include "ringmaster/job_state.h"
#include "ringmaster/status.h"
#include "ringmaster/tf_config.h"
#include "ringmaster/tf_config_gen.h"

namespace ringmaster {

// The variables (kEnvTfConfig, kEnvRestartCount, ...) and what each means
// are in env_vars.h's table.

// Name/value pairs in the order they are given to the replica.
using EnvList = std::vector<std::pair<std::string, std::string>>;

// Where the operator's pods and the local runner differ: each difference is
// one field here.
struct ReplicaEnvOptions {
  // TF_CONFIG: the namespace and cluster domain of the stable DNS names...
  TfConfigOptions tf_config;
  // ...or, when set, where each replica is reached (local runs: 127.0.0.1).
  AddressFn address;
  // RINGMASTER_PORT. nullopt: DefaultAgentPort(spec.port) for every member
  // (pods: every pod has its own IP). A list: one port per member in rank
  // order (local runs: every task shares the host); an empty list sets none.
  std::optional<std::vector<int>> agent_ports;
  // RINGMASTER_RESTART_COUNT (local runs: the start of this process, 0 for
  // the first); nullopt sets none.
  std::optional<int> restart_count;
  // RINGMASTER_TERMINATION_LOG; "" sets none.
  std::string termination_log;
  // RINGMASTER_JOB_KEY_FILE; "" sets none.
  std::string job_key_file;
};

// The environment of replica `key`: TF_CONFIG, the job's communication
// options (CommunicationOptions::ToEnv, in its order), RINGMASTER_PORT, then
// RINGMASTER_RECOVERY (and with an elastic policy RINGMASTER_MIN_SIZE and
// RINGMASTER_REJOIN_TIMEOUT_SECONDS), RINGMASTER_RESTART_COUNT, RINGMASTER_TERMINATION_LOG and
// RINGMASTER_JOB_KEY_FILE when given.
// InvalidArgument when the job has no such replica.
StatusOr<EnvList> BuildReplicaEnv(const DistributedJob& job, const ReplicaKey& key,
                                  const ReplicaEnvOptions& opts);

// RINGMASTER_PORT's value: one port for every member, or one per member in
// rank order. "" gives an empty list; anything else that is not 1 or
// `members` ports in [1, 65535] is InvalidArgument naming RINGMASTER_PORT.
StatusOr<std::vector<int>> ParseAgentPorts(std::string_view value, size_t members);

// What a replica reads from its environment. Optional fields are nullopt
// when the variable is unset or empty: the reader keeps its own default.
struct ReplicaEnv {
  TfConfig tf_config;
  CollectiveGroup group;  // from tf_config
  CommunicationOptions communication;
  std::vector<int> agent_ports;  // empty when RINGMASTER_PORT is unset
  std::optional<double> formation_timeout_seconds;
  std::optional<double> heartbeat_timeout_seconds;
  std::optional<int> min_size;  // 1..members
  std::optional<double> rejoin_timeout_seconds;
  std::optional<int> streams;  // 1..8
  std::optional<std::string> flight_recorder_dir;
  std::optional<int> flight_recorder_size;  // 1..1048576 entries
  std::optional<std::string> termination_log;
  std::optional<std::string> job_key_file;
};

// Parses the variables through `getenv` (e.g. &std::getenv). TF_CONFIG is
// required; a malformed value fails with InvalidArgument naming the variable.
// Whether this task is a member of the group is the caller's question.
StatusOr<ReplicaEnv> ParseReplicaEnv(const std::function<const char*(const char*)>& getenv);

}  // namespace ringmaster
