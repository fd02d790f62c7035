// TF_CONFIG as the agent reads it (ParseTfConfig, MakeCollectiveGroup), and
// the replica's whole environment (ParseReplicaEnv) through a fake getenv.
//
// The input is the TF_CONFIG itself. Its lines, split at '\n', are also the
// values of the variables ParseReplicaEnv reads, in the order of kVars
// (line 0 is TF_CONFIG; an empty or missing line leaves a variable unset),
// so a one-line TF_CONFIG seed serves both.
#include "ringmaster/tf_config.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "ringmaster/replica_env.h"

namespace {

using namespace ringmaster;
using fuzz::CheckError;

constexpr const char* kVars[] = {
    kEnvTfConfig,
    kEnvImplementation,
    kEnvBytesPerPack,
    kEnvTimeoutSeconds,
    kEnvAgentPort,
    kEnvFormationTimeoutSeconds,
    kEnvHeartbeatTimeoutSeconds,
    kEnvStreams,
    kEnvFlightRecorderDir,
    kEnvFlightRecorderSize,
    kEnvTerminationLog,
    kEnvAlgorithm,
    kEnvJobKeyFile,
};

void CheckConfig(const TfConfig& config) {
  if (config.task_type && *config.task_type != "evaluator") {
    auto it = config.cluster.find(*config.task_type);
    FUZZ_CHECK(it != config.cluster.end());
    FUZZ_CHECK(it->second.count(config.task_index) == 1);
  }
  FUZZ_CHECK(config.task_index >= 0);
  CollectiveGroup group = MakeCollectiveGroup(config);
  if (group.rank) {
    FUZZ_CHECK(*group.rank >= 0 && *group.rank < static_cast<int>(group.members.size()));
    const GroupMember& me = group.members[*group.rank];
    FUZZ_CHECK(config.task_type && me.task_type == *config.task_type && me.task_index == config.task_index);
    FUZZ_CHECK(me.TaskName().rfind("/job:", 0) == 0);
  }
  for (const auto& m : group.members) {
    FUZZ_CHECK(m.task_type == "chief" || m.task_type == "master" || m.task_type == "worker");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto config = ParseTfConfig(text);
  if (config.ok()) {
    CheckConfig(*config);
  } else {
    CheckError(config.status());
    FUZZ_CHECK(config.status().code() == StatusCode::kInvalidArgument);
    FUZZ_CHECK(config.status().message().rfind("TF_CONFIG", 0) == 0);
  }

  // The environment: one variable per line. Values are C strings, so a NUL
  // byte ends a value early, as it would in a real environment.
  std::map<std::string, std::string> vars;
  size_t start = 0;
  for (const char* name : kVars) {
    if (start > text.size()) break;
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    vars[name] = std::string(text.substr(start, end - start));
    start = end + 1;
  }
  auto env = ParseReplicaEnv([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() || it->second.empty() ? nullptr : it->second.c_str();
  });
  if (!env.ok()) {
    CheckError(env.status());
    return 0;
  }
  CheckConfig(env->tf_config);
  FUZZ_CHECK(env->communication.Validate().ok());
  FUZZ_CHECK(env->communication.bytes_per_pack >= 0);
  const size_t members = env->group.members.size();
  FUZZ_CHECK(env->agent_ports.size() <= 1 || env->agent_ports.size() == members);
  for (int port : env->agent_ports) FUZZ_CHECK(port >= 1 && port <= 65535);
  if (env->streams) FUZZ_CHECK(*env->streams >= 1 && *env->streams <= 8);
  if (env->flight_recorder_size)
    FUZZ_CHECK(*env->flight_recorder_size >= 1 && *env->flight_recorder_size <= (1 << 20));
  for (const auto& t : {env->formation_timeout_seconds, env->heartbeat_timeout_seconds}) {
    if (t) FUZZ_CHECK(*t > 0);
  }
  if (env->job_key_file) FUZZ_CHECK(!env->job_key_file->empty());
  return 0;
}
