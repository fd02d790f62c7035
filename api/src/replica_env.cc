// The replica's side of replica_env.h: reading the environment
// (ParseReplicaEnv, ParseAgentPorts). The agent links this, and libringmaster
// carries it; building the environment (replica_env_build.cc) needs the job
// model and TF_CONFIG generation, which only the operator and the CLI link.
#include "ringmaster/replica_env.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace ringmaster {
namespace {

using GetEnv = std::function<const char*(const char*)>;

// The variable's value, nullopt when unset or empty.
std::optional<std::string> Get(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

StatusOr<std::optional<double>> Seconds(const GetEnv& getenv, const char* name) {
  auto v = Get(getenv, name);
  if (!v) return std::optional<double>();
  double d = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
  if (ec != std::errc() || end != v->data() + v->size() || !(d > 0) || std::isinf(d)) {
    return InvalidArgumentError(std::string(name) + ": must be a number > 0, got '" + *v + "'");
  }
  return std::optional<double>(d);
}

StatusOr<std::optional<int>> Int(const GetEnv& getenv, const char* name, int lo, int hi) {
  auto v = Get(getenv, name);
  if (!v) return std::optional<int>();
  int d = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
  if (ec != std::errc() || end != v->data() + v->size() || d < lo || d > hi) {
    return InvalidArgumentError(std::string(name) + ": must be an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got '" + *v + "'");
  }
  return std::optional<int>(d);
}

}  // namespace

StatusOr<std::vector<int>> ParseAgentPorts(std::string_view v, size_t members) {
  std::vector<int> out;
  if (v.empty()) return out;
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError(std::string(kEnvAgentPort) + ": " + why + ", got '" + std::string(v) +
                                "' (one port for every member, or one per member in rank order: chief, then "
                                "workers)");
  };
  size_t start = 0;
  while (start <= v.size()) {
    size_t end = v.find(',', start);
    if (end == std::string_view::npos) end = v.size();
    std::string_view item = v.substr(start, end - start);
    int port = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), port);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || port < 1 || port > 65535) {
      return bad("'" + std::string(item) + "' is not a port in [1, 65535]");
    }
    out.push_back(port);
    start = end + 1;
  }
  if (out.size() != 1 && out.size() != members) {
    return bad(std::to_string(out.size()) + " ports for " + std::to_string(members) + " members");
  }
  return out;
}

StatusOr<ReplicaEnv> ParseReplicaEnv(const std::function<const char*(const char*)>& getenv) {
  ReplicaEnv env;
  auto tf = Get(getenv, kEnvTfConfig);
  if (!tf) return InvalidArgumentError("TF_CONFIG is not set");
  auto config = ParseTfConfig(*tf);
  if (!config.ok()) return config.status();
  env.tf_config = std::move(*config);
  env.group = MakeCollectiveGroup(env.tf_config);

  auto comm = CommunicationOptions::FromEnv(getenv);
  if (!comm.ok()) return comm.status();
  env.communication = *comm;

  auto ports = ParseAgentPorts(Get(getenv, kEnvAgentPort).value_or(""), env.group.members.size());
  if (!ports.ok()) return ports.status();
  env.agent_ports = std::move(*ports);

  auto formation = Seconds(getenv, kEnvFormationTimeoutSeconds);
  if (!formation.ok()) return formation.status();
  env.formation_timeout_seconds = *formation;
  auto heartbeat = Seconds(getenv, kEnvHeartbeatTimeoutSeconds);
  if (!heartbeat.ok()) return heartbeat.status();
  env.heartbeat_timeout_seconds = *heartbeat;
  auto min_size =
      Int(getenv, kEnvMinSize, 1, static_cast<int>(std::max<size_t>(1, env.group.members.size())));
  if (!min_size.ok()) return min_size.status();
  env.min_size = *min_size;
  auto rejoin = Seconds(getenv, kEnvRejoinTimeoutSeconds);
  if (!rejoin.ok()) return rejoin.status();
  env.rejoin_timeout_seconds = *rejoin;
  auto streams = Int(getenv, kEnvStreams, 1, 8);
  if (!streams.ok()) return streams.status();
  env.streams = *streams;
  env.flight_recorder_dir = Get(getenv, kEnvFlightRecorderDir);
  auto size = Int(getenv, kEnvFlightRecorderSize, 1, 1 << 20);
  if (!size.ok()) return size.status();
  env.flight_recorder_size = *size;
  env.termination_log = Get(getenv, kEnvTerminationLog);
  env.job_key_file = Get(getenv, kEnvJobKeyFile);
  return env;
}

}  // namespace ringmaster
