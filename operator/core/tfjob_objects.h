// The objects the operator creates for a Kubeflow TFJob, as training-operator
// v1.9 creates them (docs/kubeflow.md): per replica a pod and a headless
// Service both named <job>-<type>-<index>, training-operator's labels, a
// controller ownerReference to the TFJob, TF_CONFIG in the tensorflow
// container. Ringmaster's own additions (RINGMASTER_* variables, the job
// key) ride along in that container. Pure: the same TFJob gives
// byte-identical objects.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "names.h"
#include "pod_builder.h"
#include "ringmaster/tfjob.h"

namespace ringmaster::op {

// training-operator's labels, as ObservePod reads them.
inline constexpr ReplicaLabels kTfJobLabels{kTfJobNameLabel, kTfJobReplicaTypeLabel, kTfJobReplicaIndexLabel};
inline constexpr char kTfJobGroup[] = "kubeflow.org";
inline constexpr char kTfJobVersion[] = "v1";
inline constexpr char kTfJobPlural[] = "tfjobs";
// The event training-operator records when a template sets its own
// restartPolicy (the replica's wins).
inline constexpr char kTfJobTemplateRestartPolicyReason[] = "SettedPodTemplateRestartPolicy";

// The controller ownerReference to the TFJob (kubeflow.org/v1, its uid).
nlohmann::json TfJobOwnerReference(const TfJob& tfjob);

// Whether the replica carries job-role: master, the one whose end decides
// success: the chief (or master), else worker 0.
bool TfJobIsMasterRole(const TfJob& tfjob, const ReplicaKey& key);

// The labels of the replica's Service and its selector: job-name,
// operator-name, replica-type, replica-index (the pod has job-role too).
nlohmann::json TfJobReplicaLabels(const TfJob& tfjob, const ReplicaKey& key);

// replicaStatuses.<type>.selector: the type's pods, as a label selector
// string (keys sorted, as Kubernetes' FormatLabelSelector writes them).
std::string TfJobSelector(const TfJob& tfjob, ReplicaType type);

// The pod of replica `key`: the template with the name, labels and
// ownerReference; restartPolicy from the replica's (KubeletRestartPolicy);
// the tensorflow container gets its tfjob-port when it has none (training-
// operator's default), the RINGMASTER_* variables, and TF_CONFIG last (a
// job of one replica gets none; a TF_CONFIG the container sets is replaced,
// as training-operator's, which comes after it, overrides it). The job key's
// volume, Kueue's pod-group marks with a queue, the priority class.
// InvalidArgument when the job has no such replica.
StatusOr<BuiltPod> BuildTfJobPod(const TfJob& tfjob, const ReplicaKey& key, const BuildOptions& opts);

// The replica's headless Service: clusterIP None, selecting its pod, with the
// tensorflow container's ports (by name, sorted).
nlohmann::json BuildTfJobService(const TfJob& tfjob, const ReplicaKey& key);

// With the annotation ringmaster.io/tf-config: ConfigMap, the TFJob's
// ConfigMap holding its TF_CONFIG cluster, as a DistributedJob's
// (BuildTfClusterConfigMap) but labelled with the TFJob and controlled by
// it; each pod's TF_CONFIG then names it (BuildTfJobPod). nullopt without
// the annotation, for a TFJob whose pods get no TF_CONFIG (one replica),
// and with enableDynamicWorker (each pod's TF_CONFIG is then already the
// sparse one: its own task and the PS tasks).
StatusOr<std::optional<nlohmann::json>> BuildTfJobClusterConfigMap(const TfJob& tfjob,
                                                                   const BuildOptions& opts);

// The generated job-key Secret (nullopt when the key-secret-name annotation
// names the user's), labelled with the job and controlled by the TFJob.
std::optional<nlohmann::json> BuildTfJobKeySecret(const TfJob& tfjob);

// Kubernetes' gang scheduling (gang.h) for a TFJob that is not queued: the
// Workload (and PodGroup) of BuildGangObjects, labelled with the TFJob and
// owned by it; the pods point at it (BuildTfJobPod).
std::vector<nlohmann::json> BuildTfJobGangObjects(const TfJob& tfjob, GangApi api);

// --network-policy: the TFJob's NetworkPolicy "<job>-ringmaster", as a
// DistributedJob's (pod_builder.h) but selecting training-operator's job
// label: ingress to the TFJob's pods only from its own pods.
nlohmann::json BuildTfJobNetworkPolicy(const TfJob& tfjob);

}  // namespace ringmaster::op
