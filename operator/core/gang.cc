#include "gang.h"

#include "names.h"
#include "pod_builder.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

constexpr char kSchedulingGroup[] = "scheduling.k8s.io";
// The job's one group of pods (every replica type together: the chief and
// the workers form one collective group, PS and evaluator start with them).
constexpr char kGroupName[] = "job";

int MinCount(const DistributedJob& job) {
  return job.run_policy.scheduling_policy.min_available.value_or(job.TotalReplicas());
}

json Metadata(const DistributedJob& job) {
  return {{"name", job.name},
          {"namespace", JobNamespace(job)},
          {"labels", {{kLabelJobName, job.name}}},
          {"ownerReferences", json::array({OwnerReference(job)})}};
}

json Gang(const DistributedJob& job) {
  return {{"gang", {{"minCount", MinCount(job)}}}};
}

json ControllerRef(const DistributedJob& job) {
  return {{"apiGroup", "ringmaster.io"}, {"kind", kKind}, {"name", job.name}};
}

}  // namespace

std::string_view GangApiName(GangApi api) {
  switch (api) {
    case GangApi::kNone:
      return "none";
    case GangApi::kV1Alpha1:
      return "scheduling.k8s.io/v1alpha1";
    case GangApi::kV1Alpha2:
      return "scheduling.k8s.io/v1alpha2";
    case GangApi::kV1Beta1:
      return "scheduling.k8s.io/v1beta1";
  }
  return "none";
}

GangApi GangApiFromDiscovery(const json& api_group) {
  if (!api_group.is_object() || api_group.value("name", "") != kSchedulingGroup) return GangApi::kNone;
  auto versions = api_group.find("versions");
  if (versions == api_group.end() || !versions->is_array()) return GangApi::kNone;
  GangApi best = GangApi::kNone;
  for (const auto& v : *versions) {
    const std::string version = v.is_object() ? v.value("version", "") : "";
    GangApi api = version == "v1beta1"    ? GangApi::kV1Beta1
                  : version == "v1alpha2" ? GangApi::kV1Alpha2
                  : version == "v1alpha1" ? GangApi::kV1Alpha1
                                          : GangApi::kNone;
    // Newer is better (the enum's order); 1.35's scheduling.k8s.io/v1 (its
    // PriorityClass) alone is not the Workload API.
    if (static_cast<int>(api) > static_cast<int>(best)) best = api;
  }
  return best;
}

bool UsesNativeGang(const DistributedJob& job, GangApi api) {
  return api != GangApi::kNone && job.run_policy.scheduling_policy.queue.empty();
}

std::vector<json> BuildGangObjects(const DistributedJob& job, GangApi api) {
  if (!UsesNativeGang(job, api)) return {};
  const std::string api_version(GangApiName(api));
  json workload = {{"apiVersion", api_version}, {"kind", "Workload"}, {"metadata", Metadata(job)}};
  if (api == GangApi::kV1Alpha1) {
    workload["spec"] = {{"controllerRef", ControllerRef(job)},
                        {"podGroups", json::array({{{"name", kGroupName}, {"policy", Gang(job)}}})}};
    return {workload};
  }
  workload["spec"] = {
      {"controllerRef", ControllerRef(job)},
      {"podGroupTemplates", json::array({{{"name", kGroupName}, {"schedulingPolicy", Gang(job)}}})}};
  json ref = api == GangApi::kV1Alpha2
                 ? json{{"podGroupTemplateRef",
                         {{"workload", {{"workloadName", job.name}, {"podGroupTemplateName", kGroupName}}}}}}
                 : json{{"workloadRef", {{"workloadName", job.name}, {"templateName", kGroupName}}}};
  ref["schedulingPolicy"] = Gang(job);
  json group = {
      {"apiVersion", api_version}, {"kind", "PodGroup"}, {"metadata", Metadata(job)}, {"spec", ref}};
  return {workload, group};
}

void AddGangReference(const DistributedJob& job, GangApi api, json& podspec) {
  if (!UsesNativeGang(job, api)) return;
  if (api == GangApi::kV1Alpha1) {
    podspec["workloadRef"] = {{"name", job.name}, {"podGroup", kGroupName}};
  } else {
    podspec["schedulingGroup"] = {{"podGroupName", job.name}};
  }
}

std::string GangCollectionPath(const json& object, const std::string& ns) {
  const std::string kind = object.value("kind", "");
  return "/apis/" + object.value("apiVersion", "") + "/namespaces/" + ns + "/" +
         (kind == "PodGroup" ? "podgroups" : "workloads");
}

}  // namespace ringmaster::op
