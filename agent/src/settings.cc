// CommunicatorSettings from TF_CONFIG and the RINGMASTER_* variables.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "ringmaster/communicator.h"

namespace ringmaster {

namespace {

StatusOr<double> EnvSeconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  double d = 0;
  auto [end, ec] = std::from_chars(v, v + std::strlen(v), d);
  if (ec != std::errc() || *end != '\0' || !(d > 0) || std::isinf(d)) {
    return InvalidArgumentError(std::string(name) + ": must be a number > 0, got '" + v + "'");
  }
  return d;
}

StatusOr<int> EnvInt(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  int d = 0;
  auto [end, ec] = std::from_chars(v, v + std::strlen(v), d);
  if (ec != std::errc() || *end != '\0' || d < lo || d > hi) {
    return InvalidArgumentError(std::string(name) + ": must be an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got '" + v + "'");
  }
  return d;
}

}  // namespace

StatusOr<std::vector<int>> CommunicatorSettings::ParseControlPorts(std::string_view v, size_t members) {
  std::vector<int> out;
  if (v.empty()) return out;
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("RINGMASTER_PORT: " + why + ", got '" + std::string(v) +
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

StatusOr<CommunicatorSettings> CommunicatorSettings::FromEnvironment() {
  const char* tf = std::getenv("TF_CONFIG");
  if (!tf || !*tf) return InvalidArgumentError("TF_CONFIG is not set");
  auto config = ParseTfConfig(tf);
  if (!config.ok()) return config.status();
  CommunicatorSettings s;
  s.group = MakeCollectiveGroup(*config);
  if (!s.group.rank) {
    return FailedPreconditionError("TF_CONFIG: task " + config->task_type.value_or("(none)") + ":" +
                                   std::to_string(config->task_index) +
                                   " is not a member of the collective group (chief and workers)");
  }
  auto opts = CommunicationOptions::FromEnv(&std::getenv);
  if (!opts.ok()) return opts.status();
  s.defaults = *opts;
  const char* port_env = std::getenv(kEnvAgentPort);
  auto ports = ParseControlPorts(port_env ? port_env : "", s.group.members.size());
  if (!ports.ok()) return ports.status();
  s.control_ports = *ports;
  auto ft = EnvSeconds("RINGMASTER_FORMATION_TIMEOUT_SECONDS", s.formation_timeout_seconds);
  if (!ft.ok()) return ft.status();
  s.formation_timeout_seconds = *ft;
  auto hb = EnvSeconds("RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS", s.heartbeat_timeout_seconds);
  if (!hb.ok()) return hb.status();
  s.heartbeat_timeout_seconds = *hb;
  auto streams = EnvInt("RINGMASTER_STREAMS", s.streams, 1, 8);
  if (!streams.ok()) return streams.status();
  s.streams = *streams;
  auto fr = EnvInt("RINGMASTER_FLIGHT_RECORDER_SIZE", s.flight_recorder_size, 1, 1 << 20);
  if (!fr.ok()) return fr.status();
  s.flight_recorder_size = *fr;
  if (const char* dir = std::getenv("RINGMASTER_FLIGHT_RECORDER_DIR")) s.flight_recorder_dir = dir;
  if (const char* log = std::getenv("RINGMASTER_TERMINATION_LOG")) s.termination_log = log;
  return s;
}

}  // namespace ringmaster
