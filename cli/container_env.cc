// container_env.h: a replica's environment and command line, as a kubelet
// would give them.
#include "container_env.h"

#include <optional>
#include <string_view>

#include "ringmaster/env_expand.h"

namespace ringmaster::cli {
namespace {

std::function<std::optional<std::string>(std::string_view)> LookupIn(const EnvMap& env) {
  return [&env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

LocalAddresses AssignLocalAddresses(const DistributedJob& job,
                                    const std::function<std::vector<int>(int)>& free_ports) {
  int members = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    if (type != ReplicaType::kEvaluator) members += spec.replicas;
  }
  const std::vector<int> ports = free_ports(2 * members);
  LocalAddresses out;
  size_t next = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; type != ReplicaType::kEvaluator && i < spec.replicas; ++i) {
      out.task[{type, i}] = "127.0.0.1:" + std::to_string(ports.at(next++));
    }
  }
  for (ReplicaType type : {ReplicaType::kChief, ReplicaType::kWorker}) {
    const ReplicaSpec* spec = job.Find(type);
    for (int i = 0; spec && i < spec->replicas; ++i) out.agent_ports.push_back(ports.at(next++));
  }
  return out;
}

StatusOr<EnvMap> ContainerEnv(const DistributedJob& job, const ReplicaKey& key,
                              const nlohmann::json& container, const ReplicaEnvOptions& opts,
                              std::vector<std::string>* warnings) {
  EnvMap env;
  const auto lookup = LookupIn(env);
  if (auto it = container.find("env"); it != container.end() && it->is_array()) {
    for (const auto& var : *it) {
      if (!var.is_object() || !var.contains("name")) continue;
      if (var.contains("value") && var["value"].is_string()) {
        env[var["name"].get<std::string>()] = ExpandKubeVars(var["value"].get<std::string>(), lookup);
      } else if (var.contains("valueFrom")) {
        warnings->push_back(key.Name() + ": env " + var["name"].get<std::string>() +
                            " uses valueFrom, which has no local meaning: not set");
      }
    }
  }
  auto ours = BuildReplicaEnv(job, key, opts);
  if (!ours.ok()) return Status(ours.status().code(), key.Name() + ": " + ours.status().message());
  for (const auto& [k, v] : *ours) {
    if (k == kEnvTfConfig || k == kEnvRestartCount) {
      env[k] = v;
    } else {
      env.emplace(k, v);
    }
  }
  return env;
}

std::vector<std::string> ProcessEnv(const std::vector<std::string>& inherited, const std::string& bin_dir,
                                    const EnvMap& container_env) {
  EnvMap env;
  for (const std::string& kv : inherited) {
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const std::string path = env.count("PATH") ? env["PATH"] : "/usr/bin:/bin";
  if (!bin_dir.empty()) env["PATH"] = bin_dir + ":" + path;
  for (const auto& [k, v] : container_env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<std::string> ContainerArgv(const nlohmann::json& container, const EnvMap& env) {
  const auto lookup = LookupIn(env);
  std::vector<std::string> argv;
  for (const char* list : {"command", "args"}) {
    if (auto it = container.find(list); it != container.end() && it->is_array()) {
      for (const auto& a : *it) argv.push_back(ExpandKubeVars(a.get<std::string>(), lookup));
    }
  }
  return argv;
}

}  // namespace ringmaster::cli
