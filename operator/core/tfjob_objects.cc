// The objects of a TFJob (tfjob_objects.h), on the parts of a replica's pod
// that a DistributedJob's shares (pod_builder.h).
#include "tfjob_objects.h"

#include <algorithm>
#include <map>

#include "ringmaster/replica_env.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

// The replica's template's container named tensorflow (the loader made sure
// there is one), or nullptr.
json* TensorflowContainer(json& podspec) {
  auto cs = podspec.find("containers");
  if (cs == podspec.end() || !cs->is_array()) return nullptr;
  for (auto& c : *cs) {
    if (c.is_object() && c.value("name", json()) == kTfJobContainerName) return &c;
  }
  return nullptr;
}

const json* TemplateSpec(const ReplicaSpec& spec) {
  const json& t = spec.pod_template;
  if (!t.is_object()) return nullptr;
  auto s = t.find("spec");
  return s != t.end() && s->is_object() ? &*s : nullptr;
}

// Sets name=value in `env`: in place when the container has it, else appended.
void SetEnv(json& env, const std::string& name, const std::string& value) {
  for (auto& e : env) {
    if (e.is_object() && e.value("name", json()) == name) {
      e = {{"name", name}, {"value", value}};
      return;
    }
  }
  env.push_back({{"name", name}, {"value", value}});
}

bool HasEnv(const json& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const json& e) { return e.is_object() && e.value("name", json()) == name; });
}

json BaseLabels(const TfJob& tfjob) {
  return {{kTfJobNameLabel, tfjob.job.name}, {kTfJobOperatorNameLabel, kTfJobOperatorName}};
}

// The TF_CONFIG training-operator gives replica (type, index).
StatusOr<std::string> TfJobTfConfig(const TfJob& tfjob, ReplicaType type, int index,
                                    const BuildOptions& opts) {
  TfConfigOptions tf_opts;
  tf_opts.namespace_ = JobNamespace(tfjob.job);
  tf_opts.cluster_domain = opts.cluster_domain;
  return GenerateTfJobTfConfig(tfjob, type, index, tf_opts);
}

}  // namespace

json TfJobOwnerReference(const TfJob& tfjob) {
  std::string uid;
  if (auto it = tfjob.job.metadata.find("uid"); it != tfjob.job.metadata.end() && it->is_string()) uid = *it;
  return {{"apiVersion", kTfJobApiVersion},
          {"kind", kTfJobKind},
          {"name", tfjob.job.name},
          {"uid", uid},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

bool TfJobIsMasterRole(const TfJob& tfjob, const ReplicaKey& key) {
  if (tfjob.job.Find(ReplicaType::kChief)) return key.type == ReplicaType::kChief;
  return key.type == ReplicaType::kWorker && key.index == 0;
}

json TfJobReplicaLabels(const TfJob& tfjob, const ReplicaKey& key) {
  json labels = BaseLabels(tfjob);
  labels[kTfJobReplicaTypeLabel] = std::string(TfJobReplicaTypeLower(tfjob, key.type));
  labels[kTfJobReplicaIndexLabel] = std::to_string(key.index);
  return labels;
}

std::string TfJobSelector(const TfJob& tfjob, ReplicaType type) {
  // json objects iterate in key order, as FormatLabelSelector sorts.
  json labels = BaseLabels(tfjob);
  labels[kTfJobReplicaTypeLabel] = std::string(TfJobReplicaTypeLower(tfjob, type));
  std::string out;
  for (const auto& [k, v] : labels.items()) out += (out.empty() ? "" : ",") + k + "=" + v.get<std::string>();
  return out;
}

StatusOr<BuiltPod> BuildTfJobPod(const TfJob& tfjob, const ReplicaKey& key, const BuildOptions& opts) {
  const DistributedJob& job = tfjob.job;
  const ReplicaSpec* spec = job.Find(key.type);
  if (!spec || key.index < 0 || key.index >= spec->replicas) {
    return InvalidArgumentError("TFJob " + job.name + " has no replica " + key.Name());
  }
  const std::string name = TfJobReplicaName(tfjob, key.type, key.index);
  BuiltPod out;

  json labels = TfJobReplicaLabels(tfjob, key);
  if (TfJobIsMasterRole(tfjob, key)) labels[kTfJobRoleLabel] = "master";
  json meta = ReplicaPodMetadata(job, *spec, name, labels, TfJobOwnerReference(tfjob));
  const SchedulingPolicy& sched = job.run_policy.scheduling_policy;

  const json* tspec = TemplateSpec(*spec);
  json podspec = tspec ? *tspec : json::object();
  if (auto rp = podspec.find("restartPolicy"); rp != podspec.end() && rp->is_string() && !rp->empty()) {
    out.events.push_back(
        {true, kTfJobTemplateRestartPolicyReason,
         "Restart policy in pod template will be overwritten by restart policy in replica spec"});
  }
  podspec["restartPolicy"] = KubeletRestartPolicy(job, spec->restart_policy);
  if (!sched.priority_class.empty()) podspec["priorityClassName"] = sched.priority_class;
  AddGangReference(job, opts.gang_api, podspec);

  json* tf = TensorflowContainer(podspec);
  if (!tf) return InvalidArgumentError("replica " + key.Name() + " has no container named tensorflow");
  json& c = *tf;
  // training-operator's default: the tfjob-port, when the container names none.
  if (!c.contains("ports") || !c["ports"].is_array()) c["ports"] = json::array();
  const bool has_port = std::any_of(c["ports"].begin(), c["ports"].end(), [](const json& p) {
    return p.is_object() && p.value("name", json()) == kTfJobPortName;
  });
  if (!has_port) c["ports"].push_back({{"name", kTfJobPortName}, {"containerPort", kTfJobDefaultPort}});
  // The agent's verdict when its group aborts (as in a DistributedJob's pod).
  if (!c.contains("terminationMessagePolicy")) c["terminationMessagePolicy"] = kTerminationMessagePolicy;

  auto replica_env = BuildReplicaEnv(job, key, PodEnvOptions(job, opts, c));
  if (!replica_env.ok()) return replica_env.status();
  if (!c.contains("env") || !c["env"].is_array()) c["env"] = json::array();
  json& env = c["env"];
  // Ringmaster's variables (a container's own value is kept), then
  // TF_CONFIG, training-operator's, which replaces one the container sets.
  for (const auto& [var, value] : *replica_env) {
    if (var == kEnvTfConfig || HasEnv(env, var)) continue;
    env.push_back({{"name", var}, {"value", value}});
  }
  if (TfJobSetsTfConfig(tfjob)) {
    auto cluster_map = BuildTfJobClusterConfigMap(tfjob, opts);
    if (!cluster_map.ok()) return cluster_map.status();
    auto tf_config = TfJobTfConfig(tfjob, key.type, key.index, opts);
    if (!tf_config.ok()) return tf_config.status();
    if (HasEnv(env, kEnvTfConfig)) {
      out.events.push_back({true, "TfConfigReplaced",
                            "container tensorflow of pod " + name +
                                " sets its own TF_CONFIG; it is replaced by the generated one, as "
                                "training-operator's overrides it"});
    }
    bool named = false;
    if (*cluster_map) {
      // The pod names the TFJob's ConfigMap instead of holding the cluster.
      const json& map = **cluster_map;
      const std::string cluster = map["data"][kTfClusterKey];
      json rest = json::array();
      for (const auto& e : env) {
        const std::string var = e.is_object() ? e.value("name", std::string()) : std::string();
        if (var != kEnvTfConfig && var != kEnvTfCluster) rest.push_back(e);
      }
      if (AppendTfConfigNamingCluster(rest, *tf_config, cluster, map["metadata"]["name"])) {
        env = std::move(rest);
        named = true;
      }
    }
    if (!named) SetEnv(env, kEnvTfConfig, *tf_config);
  }
  AddJobKeyVolume(job, podspec);

  out.pod = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(meta)}, {"spec", std::move(podspec)}};
  return out;
}

json BuildTfJobService(const TfJob& tfjob, const ReplicaKey& key) {
  const json labels = TfJobReplicaLabels(tfjob, key);
  // The tensorflow container's ports by name (training-operator collects
  // them into a map; a name written twice keeps the last).
  std::map<std::string, json> by_name;
  if (const ReplicaSpec* spec = tfjob.job.Find(key.type)) {
    if (const json* tspec = TemplateSpec(*spec)) {
      json copy = *tspec;
      if (json* c = TensorflowContainer(copy)) {
        if (auto ps = c->find("ports"); ps != c->end() && ps->is_array()) {
          for (const auto& p : *ps) {
            if (!p.is_object() || !p.contains("containerPort")) continue;
            const json n = p.value("name", json(""));
            by_name[n.is_string() ? n.get<std::string>() : ""] = p["containerPort"];
          }
        }
      }
    }
  }
  if (!by_name.count(kTfJobPortName)) by_name[kTfJobPortName] = kTfJobDefaultPort;
  json ports = json::array();
  for (const auto& [n, port] : by_name) ports.push_back({{"name", n}, {"port", port}});
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", TfJobReplicaName(tfjob, key.type, key.index)},
            {"namespace", JobNamespace(tfjob.job)},
            {"labels", labels},
            {"ownerReferences", json::array({TfJobOwnerReference(tfjob)})}}},
          {"spec", {{"clusterIP", "None"}, {"selector", labels}, {"ports", std::move(ports)}}}};
}

StatusOr<std::optional<json>> BuildTfJobClusterConfigMap(const TfJob& tfjob, const BuildOptions& opts) {
  auto source = JobTfConfigSource(tfjob.job);
  if (!source.ok()) return source.status();
  if (*source != TfConfigSource::kConfigMap || !TfJobSetsTfConfig(tfjob) || tfjob.enable_dynamic_worker)
    return std::optional<json>();
  // Any replica's TF_CONFIG holds the cluster; the first one's is taken.
  for (const auto& [type, spec] : tfjob.job.replica_specs) {
    if (spec.replicas <= 0) continue;
    auto tf_config = TfJobTfConfig(tfjob, type, 0, opts);
    if (!tf_config.ok()) return tf_config.status();
    auto cluster = ClusterOfTfConfig(*tf_config, tfjob.job.name);
    if (!cluster.ok()) return cluster.status();
    return std::optional<json>(json{{"apiVersion", "v1"},
                                    {"kind", "ConfigMap"},
                                    {"metadata",
                                     {{"name", TfClusterConfigMapName(tfjob.job.name, *cluster)},
                                      {"namespace", JobNamespace(tfjob.job)},
                                      {"labels", BaseLabels(tfjob)},
                                      {"ownerReferences", json::array({TfJobOwnerReference(tfjob)})}}},
                                    {"immutable", true},
                                    {"data", {{kTfClusterKey, *cluster}}}});
  }
  return std::optional<json>();
}

std::optional<json> BuildTfJobKeySecret(const TfJob& tfjob) {
  auto secret = BuildKeySecret(tfjob.job);
  if (!secret) return secret;
  (*secret)["metadata"]["labels"] = BaseLabels(tfjob);
  (*secret)["metadata"]["ownerReferences"] = json::array({TfJobOwnerReference(tfjob)});
  return secret;
}

std::vector<json> BuildTfJobGangObjects(const TfJob& tfjob, GangApi api) {
  std::vector<json> objects = BuildGangObjects(tfjob.job, api);
  for (json& o : objects) {
    o["metadata"]["labels"] = BaseLabels(tfjob);
    o["metadata"]["ownerReferences"] = json::array({TfJobOwnerReference(tfjob)});
    if (o.contains("spec") && o["spec"].contains("controllerRef")) {
      o["spec"]["controllerRef"] = {
          {"apiGroup", kTfJobGroup}, {"kind", kTfJobKind}, {"name", tfjob.job.name}};
    }
  }
  return objects;
}

json BuildTfJobNetworkPolicy(const TfJob& tfjob) {
  json policy = BuildNetworkPolicy(tfjob.job);
  const json selector = {{kTfJobNameLabel, tfjob.job.name}};
  policy["metadata"]["labels"] = BaseLabels(tfjob);
  policy["metadata"]["ownerReferences"] = json::array({TfJobOwnerReference(tfjob)});
  policy["spec"]["podSelector"] = {{"matchLabels", selector}};
  policy["spec"]["ingress"] =
      json::array({{{"from", json::array({{{"podSelector", {{"matchLabels", selector}}}}})}}});
  return policy;
}

}  // namespace ringmaster::op
