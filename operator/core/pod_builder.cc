// The objects of a DistributedJob (pod_builder.h), and the parts of a
// replica's pod that a TFJob's (tfjob_objects.cc) shares.
#include "pod_builder.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "base64.h"
#include "names.h"
#include "ringmaster/replica_env.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

std::string PodRestartPolicy(RestartPolicy p) {
  switch (p) {
    case RestartPolicy::kNever:
    case RestartPolicy::kExitCode:  // the kubelet must not restart: we look at the code
      return "Never";
    case RestartPolicy::kOnFailure:
      return "OnFailure";
    case RestartPolicy::kAlways:
      return "Always";
  }
  return "Never";
}

// Whether `obj` (an object of the user's template, so of any shape) has
// `key` equal to `want`. Not json::value(): it throws when the field has
// another type ("containerPort": "2222").
bool FieldIs(const json& obj, const char* key, const json& want) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  return it != obj.end() && *it == want;
}

bool HasEnv(const json& env, const std::string& name) {
  for (const auto& e : env) {
    if (FieldIs(e, "name", name)) return true;
  }
  return false;
}

bool HasPort(const json& containers, int port) {
  for (const auto& c : containers) {
    if (!c.is_object() || !c.contains("ports") || !c["ports"].is_array()) continue;
    for (const auto& p : c["ports"]) {
      if (FieldIs(p, "containerPort", port)) return true;
    }
  }
  return false;
}

json JobLabels(const DistributedJob& job) {
  return {{kLabelJobName, job.name}};
}

constexpr std::string_view kTfConfigClusterPrefix = "{\"cluster\":";
constexpr std::string_view kTfConfigTaskField = ",\"task\":";

// "$" as the kubelet reads it literally in an env value ("$$").
std::string EscapeKubeVars(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '$') out += '$';
  }
  return out;
}

// FNV-1a, 64 bits: stable across builds and platforms (std::hash is not).
uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::string KubeletRestartPolicy(const DistributedJob& job, RestartPolicy policy) {
  // Recovering in place, the operator replaces a failed pod itself, at once,
  // and so sees, counts and names each restart; the kubelet's own restart
  // waits out its crash-loop backoff (10 s, 20 s, ...) from a container's
  // second failure on, while the survivors wait for the member.
  return job.run_policy.recovery == RecoveryPolicy::kInPlace ? "Never" : PodRestartPolicy(policy);
}

std::string JobNamespace(const DistributedJob& job) {
  return job.namespace_.empty() ? "default" : job.namespace_;
}

json OwnerReference(const DistributedJob& job) {
  std::string uid;
  if (auto it = job.metadata.find("uid"); it != job.metadata.end() && it->is_string()) uid = *it;
  return {{"apiVersion", kApiVersion}, {"kind", kKind},
          {"name", job.name},          {"uid", uid},
          {"controller", true},        {"blockOwnerDeletion", true}};
}

std::string JobKeySecretName(const DistributedJob& job) {
  return job.key_secret_ref ? job.key_secret_ref->name : KeySecretName(job.name);
}

std::optional<json> BuildKeySecret(const DistributedJob& job) {
  if (job.key_secret_ref) return std::nullopt;
  return json{{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata",
               {{"name", KeySecretName(job.name)},
                {"namespace", JobNamespace(job)},
                {"labels", JobLabels(job)},
                {"ownerReferences", json::array({OwnerReference(job)})}}},
              {"type", "Opaque"}};
}

json WithJobKey(json secret, std::string_view key) {
  secret["data"] = {{kJobKeyItem, Base64Encode(key)}};
  return secret;
}

void AddJobKeyVolume(const DistributedJob& job, json& podspec) {
  const std::string item = job.key_secret_ref ? job.key_secret_ref->key : kJobKeyItem;
  json volume = {{"name", kJobKeyVolume},
                 {"secret",
                  {{"secretName", JobKeySecretName(job)},
                   {"items", json::array({{{"key", item}, {"path", kJobKeyItem}}})},
                   {"defaultMode", kJobKeyFileMode}}}};
  if (!podspec.contains("volumes") || !podspec["volumes"].is_array()) podspec["volumes"] = json::array();
  json& volumes = podspec["volumes"];
  for (auto it = volumes.begin(); it != volumes.end();) {
    it = FieldIs(*it, "name", kJobKeyVolume) ? volumes.erase(it) : it + 1;
  }
  volumes.push_back(std::move(volume));
  if (!podspec.contains("containers") || !podspec["containers"].is_array()) return;
  for (auto& c : podspec["containers"]) {
    if (!c.is_object()) continue;
    if (!c.contains("volumeMounts") || !c["volumeMounts"].is_array()) c["volumeMounts"] = json::array();
    json& mounts = c["volumeMounts"];
    const bool taken = std::any_of(mounts.begin(), mounts.end(), [](const json& m) {
      return FieldIs(m, "mountPath", kJobKeyMountPath) || FieldIs(m, "name", kJobKeyVolume);
    });
    if (!taken)
      mounts.push_back({{"name", kJobKeyVolume}, {"mountPath", kJobKeyMountPath}, {"readOnly", true}});
  }
}

json BuildNetworkPolicy(const DistributedJob& job) {
  return {
      {"apiVersion", "networking.k8s.io/v1"},
      {"kind", "NetworkPolicy"},
      {"metadata",
       {{"name", NetworkPolicyName(job.name)},
        {"namespace", JobNamespace(job)},
        {"labels", JobLabels(job)},
        {"ownerReferences", json::array({OwnerReference(job)})}}},
      {"spec",
       {{"podSelector", {{"matchLabels", JobLabels(job)}}},
        {"policyTypes", json::array({"Ingress"})},
        {"ingress",
         json::array({{{"from", json::array({{{"podSelector", {{"matchLabels", JobLabels(job)}}}}})}}})}}}};
}

StatusOr<TfConfigSource> JobTfConfigSource(const DistributedJob& job) {
  auto annotations = job.metadata.find("annotations");
  if (annotations == job.metadata.end() || !annotations->is_object()) return TfConfigSource::kInline;
  auto it = annotations->find(kTfConfigAnnotation);
  if (it == annotations->end()) return TfConfigSource::kInline;
  if (*it == kTfConfigInline) return TfConfigSource::kInline;
  if (*it == kTfConfigConfigMap) return TfConfigSource::kConfigMap;
  return InvalidArgumentError("annotation " + std::string(kTfConfigAnnotation) + " must be " +
                              kTfConfigInline + " or " + kTfConfigConfigMap + ", got " + it->dump());
}

StatusOr<std::string> TfClusterJson(const DistributedJob& job, const BuildOptions& opts) {
  // Any replica's TF_CONFIG holds the cluster; the first one's is taken.
  for (const auto& [type, spec] : job.replica_specs) {
    if (spec.replicas <= 0) continue;
    TfConfigOptions tf;
    tf.namespace_ = JobNamespace(job);
    tf.cluster_domain = opts.cluster_domain;
    auto tf_config = GenerateTfConfig(job, type, 0, tf);
    if (!tf_config.ok()) return tf_config.status();
    return ClusterOfTfConfig(*tf_config, job.name);
  }
  return InvalidArgumentError("job " + job.name + " has no replicas");
}

StatusOr<std::string> ClusterOfTfConfig(std::string_view tf_config, const std::string& job) {
  const size_t end = tf_config.rfind(kTfConfigTaskField);
  if (tf_config.substr(0, kTfConfigClusterPrefix.size()) != kTfConfigClusterPrefix ||
      end == std::string::npos || end < kTfConfigClusterPrefix.size())
    return InternalError("TF_CONFIG of job " + job + " has no cluster: " + std::string(tf_config));
  return std::string(tf_config.substr(kTfConfigClusterPrefix.size(), end - kTfConfigClusterPrefix.size()));
}

bool AppendTfConfigNamingCluster(json& env, std::string_view tf_config, std::string_view cluster,
                                 const std::string& cluster_map) {
  auto named = TfConfigNamingCluster(tf_config, cluster);
  if (!named) return false;
  env.push_back({{"name", kEnvTfCluster},
                 {"valueFrom", {{"configMapKeyRef", {{"name", cluster_map}, {"key", kTfClusterKey}}}}}});
  env.push_back({{"name", kEnvTfConfig}, {"value", std::move(*named)}});
  return true;
}

std::string TfClusterConfigMapName(const std::string& job, std::string_view cluster) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(Fnv1a64(cluster)));
  return job + "-tf-cluster-" + std::string(hash, 10);
}

StatusOr<std::optional<json>> BuildTfClusterConfigMap(const DistributedJob& job, const BuildOptions& opts) {
  auto source = JobTfConfigSource(job);
  if (!source.ok()) return source.status();
  if (*source != TfConfigSource::kConfigMap) return std::optional<json>();
  auto cluster = TfClusterJson(job, opts);
  if (!cluster.ok()) return cluster.status();
  return std::optional<json>(json{{"apiVersion", "v1"},
                                  {"kind", "ConfigMap"},
                                  {"metadata",
                                   {{"name", TfClusterConfigMapName(job.name, *cluster)},
                                    {"namespace", JobNamespace(job)},
                                    {"labels", JobLabels(job)},
                                    {"ownerReferences", json::array({OwnerReference(job)})}}},
                                  {"immutable", true},
                                  {"data", {{kTfClusterKey, *cluster}}}});
}

std::optional<std::string> TfConfigNamingCluster(std::string_view tf_config, std::string_view cluster) {
  const size_t prefix = kTfConfigClusterPrefix.size();
  if (tf_config.substr(0, prefix) != kTfConfigClusterPrefix ||
      tf_config.substr(prefix, cluster.size()) != cluster ||
      tf_config.substr(prefix + cluster.size(), kTfConfigTaskField.size()) != kTfConfigTaskField) {
    return std::nullopt;
  }
  return EscapeKubeVars(kTfConfigClusterPrefix) + "$(" + kEnvTfCluster + ")" +
         EscapeKubeVars(tf_config.substr(prefix + cluster.size()));
}

json ReplicaPodMetadata(const DistributedJob& job, const ReplicaSpec& spec, const std::string& name,
                        const json& labels, const json& owner) {
  const json& tmpl = spec.pod_template;
  json meta = tmpl.is_object() && tmpl.contains("metadata") && tmpl["metadata"].is_object() ? tmpl["metadata"]
                                                                                            : json::object();
  meta["name"] = name;
  meta["namespace"] = JobNamespace(job);
  if (!meta.contains("labels") || !meta["labels"].is_object()) meta["labels"] = json::object();
  for (const auto& [k, v] : labels.items()) meta["labels"][k] = v;
  meta["ownerReferences"] = json::array({owner});
  const SchedulingPolicy& sched = job.run_policy.scheduling_policy;
  if (!sched.queue.empty()) {
    // Kueue's plain pod group: the queue, the group, and how many pods it
    // has (Kueue makes the group's Workload once that many exist).
    meta["labels"][kKueueQueueLabel] = sched.queue;
    meta["labels"][kKueuePodGroupLabel] = PodGroupName(job);
    if (!meta.contains("annotations") || !meta["annotations"].is_object())
      meta["annotations"] = json::object();
    meta["annotations"][kKueuePodGroupCountAnnotation] = std::to_string(job.TotalReplicas());
  }
  return meta;
}

ReplicaEnvOptions PodEnvOptions(const DistributedJob& job, const BuildOptions& opts, const json& container) {
  ReplicaEnvOptions env_opts;
  env_opts.tf_config.namespace_ = JobNamespace(job);
  env_opts.tf_config.cluster_domain = opts.cluster_domain;
  // Every pod has its own IP: one agent port (spec.port's neighbour) for all.
  env_opts.agent_ports.reset();
  // The job key's volume (AddJobKeyVolume) projects its one item as "key".
  env_opts.job_key_file = kJobKeyFile;
  // A container's own terminationMessagePath: the agent writes there (by
  // default it writes /dev/termination-log, the kubelet's default path).
  if (auto it = container.find("terminationMessagePath");
      it != container.end() && it->is_string() && *it != kDefaultTerminationMessagePath) {
    env_opts.termination_log = it->get<std::string>();
  }
  return env_opts;
}

StatusOr<BuiltPod> BuildPod(const DistributedJob& job, const ReplicaKey& key, const BuildOptions& opts) {
  const ReplicaSpec* spec = job.Find(key.type);
  if (!spec || key.index < 0 || key.index >= spec->replicas) {
    return InvalidArgumentError("job " + job.name + " has no replica " + key.Name());
  }
  auto source = JobTfConfigSource(job);
  if (!source.ok()) return source.status();
  // With a ConfigMap: the cluster that TF_CONFIG names, and where it lies.
  std::string cluster, cluster_map;
  if (*source == TfConfigSource::kConfigMap) {
    auto c = TfClusterJson(job, opts);
    if (!c.ok()) return c.status();
    cluster = std::move(*c);
    cluster_map = TfClusterConfigMapName(job.name, cluster);
  }

  BuiltPod out;
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  const json& tmpl = spec->pod_template;
  const json labels = {{kLabelJobName, job.name},
                       {kLabelReplicaType, std::string(ReplicaTypeLower(key.type))},
                       {kLabelReplicaIndex, std::to_string(key.index)}};
  pod["metadata"] = ReplicaPodMetadata(job, *spec, PodName(job.name, key), labels, OwnerReference(job));
  const SchedulingPolicy& sched = job.run_policy.scheduling_policy;

  json podspec =
      tmpl.is_object() && tmpl.contains("spec") && tmpl["spec"].is_object() ? tmpl["spec"] : json::object();
  podspec["hostname"] = PodName(job.name, key);
  podspec["subdomain"] = job.name;
  podspec["restartPolicy"] = KubeletRestartPolicy(job, spec->restart_policy);
  if (!sched.priority_class.empty()) podspec["priorityClassName"] = sched.priority_class;
  AddGangReference(job, opts.gang_api, podspec);
  if (!podspec.contains("containers") || !podspec["containers"].is_array())
    podspec["containers"] = json::array();
  json& containers = podspec["containers"];
  for (auto& c : containers) {
    if (!c.is_object()) continue;
    if (!c.contains("env") || !c["env"].is_array()) c["env"] = json::array();
    json& env = c["env"];
    const std::string cname = c.value("name", "");
    // The agent's verdict when its group aborts; a crash without one still
    // leaves the end of the log as the termination message.
    if (!c.contains("terminationMessagePolicy")) c["terminationMessagePolicy"] = kTerminationMessagePolicy;
    auto replica_env = BuildReplicaEnv(job, key, PodEnvOptions(job, opts, c));
    if (!replica_env.ok()) return replica_env.status();
    // What the container sets itself is kept (a user's TF_CONFIG with a
    // warning: it decides the group).
    for (const auto& [name, value] : *replica_env) {
      if (!HasEnv(env, name)) {
        if (name == kEnvTfConfig && !cluster_map.empty() && !HasEnv(env, kEnvTfCluster)) {
          // The kubelet reads a valueFrom when the container starts: the
          // pod object holds the ConfigMap's name, not the cluster.
          if (AppendTfConfigNamingCluster(env, value, cluster, cluster_map)) continue;
        }
        env.push_back({{"name", name}, {"value", value}});
      } else if (name == kEnvTfConfig) {
        out.events.push_back(
            {true, "TfConfigKept",
             "container " + cname + " of pod " + PodName(job.name, key) +
                 " sets its own TF_CONFIG; it is kept and the generated one is not injected"});
      }
    }
  }
  if (!containers.empty() && containers[0].is_object()) {
    json& c0 = containers[0];
    if (!c0.contains("ports") || !c0["ports"].is_array()) c0["ports"] = json::array();
    if (!HasPort(containers, job.port)) {
      c0["ports"].push_back({{"name", kPortName}, {"containerPort", job.port}, {"protocol", "TCP"}});
    }
    if (const int agent = DefaultAgentPort(job.port); !HasPort(containers, agent)) {
      c0["ports"].push_back({{"name", kAgentPortName}, {"containerPort", agent}, {"protocol", "TCP"}});
    }
  }
  AddJobKeyVolume(job, podspec);
  pod["spec"] = std::move(podspec);
  out.pod = std::move(pod);
  return out;
}

json BuildService(const DistributedJob& job) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata",
       {{"name", job.name},
        {"namespace", JobNamespace(job)},
        {"labels", JobLabels(job)},
        {"ownerReferences", json::array({OwnerReference(job)})}}},
      {"spec",
       {{"clusterIP", "None"},
        {"publishNotReadyAddresses", true},
        {"selector", JobLabels(job)},
        {"ports",
         json::array(
             {{{"name", kPortName}, {"port", job.port}, {"targetPort", job.port}, {"protocol", "TCP"}}})}}}};
}

}  // namespace ringmaster::op
