// Gang scheduling without Kueue: Kubernetes' own Workload API (KEP-4671).
// When the API server serves it, a job that is not queued gets a Workload
// (and, from 1.36, a PodGroup) whose gang policy's minCount is the job's
// schedulingPolicy.minAvailable (default: all its pods), and every pod
// points at it, so the scheduler binds all of them or none. Pure: the shell
// asks discovery once and passes the answer in BuildOptions.
//
// The API changed shape in each release; the operator speaks all three:
//   1.35  scheduling.k8s.io/v1alpha1  Workload{podGroups[{name, policy.gang}]},
//         pod spec.workloadRef{name, podGroup}
//   1.36  scheduling.k8s.io/v1alpha2  Workload{podGroupTemplates[...]} + PodGroup
//         {podGroupTemplateRef.workload, schedulingPolicy}, pod spec.schedulingGroup
//   1.37  scheduling.k8s.io/v1beta1   as 1.36, PodGroup's reference is
//         workloadRef{workloadName, templateName}
// Each needs its feature gates on (GenericWorkload; GangScheduling in the
// scheduler before 1.37): a served API with the scheduler's side off leaves
// the pods waiting, which is the cluster's configuration, not ours to guess.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/job.h"

namespace ringmaster::op {

enum class GangApi { kNone, kV1Alpha1, kV1Alpha2, kV1Beta1 };
std::string_view GangApiName(GangApi api);  // "none", "scheduling.k8s.io/v1alpha1", ...

// From GET /apis/scheduling.k8s.io (an APIGroup: versions[].version), the
// newest version the operator speaks; kNone when none (or not an APIGroup).
GangApi GangApiFromDiscovery(const nlohmann::json& api_group);

// Whether `job` is gang-scheduled natively: the API is there and the job is
// not queued (a queue's admission is already all or nothing).
bool UsesNativeGang(const DistributedJob& job, GangApi api);

// The objects to create before the job's pods (the Workload, then the
// PodGroup where the version has one), owned by the job; empty when the job
// is not gang-scheduled natively.
std::vector<nlohmann::json> BuildGangObjects(const DistributedJob& job, GangApi api);

// The reference a pod of the job carries to its group (spec.workloadRef or
// spec.schedulingGroup); nothing when the job is not gang-scheduled natively.
void AddGangReference(const DistributedJob& job, GangApi api, nlohmann::json& podspec);

// The collection an object of BuildGangObjects is created in:
// /apis/<apiVersion>/namespaces/<ns>/<workloads|podgroups>.
std::string GangCollectionPath(const nlohmann::json& object, const std::string& ns);

}  // namespace ringmaster::op
