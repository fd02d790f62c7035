// The objects the operator creates for a job: one pod per replica and one
// headless Service. Pure: the same job gives byte-identical objects.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gang.h"
#include "ringmaster/job.h"
#include "ringmaster/job_state.h"
#include "ringmaster/replica_env.h"

namespace ringmaster::op {

struct BuildOptions {
  std::string cluster_domain;  // "" keeps TF_CONFIG addresses at "...svc"
  // --network-policy: a NetworkPolicy per job admitting ingress to its pods
  // only from its own pods.
  bool network_policy = false;
  // The Workload API the API server serves (discovery at start): a job that
  // is not queued is gang-scheduled by it (gang.h).
  GangApi gang_api = GangApi::kNone;
};

struct BuiltPod {
  nlohmann::json pod;
  // Warnings for the user (a container's own TF_CONFIG kept), as events.
  std::vector<JobEvent> events;
};

// The pod's restartPolicy for a replica's: ExitCode becomes Never (the
// operator decides on restarts from the exit code), and every replica's is
// Never when the job recovers in place.
std::string KubeletRestartPolicy(const DistributedJob& job, RestartPolicy policy);

// The namespace the job's objects live in ("default" when unset).
std::string JobNamespace(const DistributedJob& job);

// How the job's pods get TF_CONFIG (ringmaster.io/tf-config, names.h).
enum class TfConfigSource { kInline, kConfigMap };

// The job's ringmaster.io/tf-config annotation: kInline when it is absent;
// InvalidArgument naming the annotation for a value other than "Inline" or
// "ConfigMap".
StatusOr<TfConfigSource> JobTfConfigSource(const DistributedJob& job);

// The cluster of the job's TF_CONFIG, as every replica's TF_CONFIG spells it
// ({"chief":[...],"worker":[...]}): the same for every replica.
StatusOr<std::string> TfClusterJson(const DistributedJob& job, const BuildOptions& opts);
// The cluster a generated TF_CONFIG of `job` holds (what follows {"cluster":
// up to its task); Internal when it holds none there.
StatusOr<std::string> ClusterOfTfConfig(std::string_view tf_config, const std::string& job);

// "<job>-tf-cluster-<hash of cluster>": a new cluster (the job scaled) gets a
// new ConfigMap, so each one can be immutable and a pod created after the
// change reads the new cluster, as an inline TF_CONFIG would.
std::string TfClusterConfigMapName(const std::string& job, std::string_view cluster);

// With ringmaster.io/tf-config: ConfigMap, the job's ConfigMap holding its
// TF_CONFIG cluster under the key "cluster": immutable (the kubelets need not
// watch it), labelled with the job and controlled by it. nullopt for Inline.
StatusOr<std::optional<nlohmann::json>> BuildTfClusterConfigMap(const DistributedJob& job,
                                                                const BuildOptions& opts);

// TF_CONFIG's value that names the cluster instead of holding it: `tf_config`
// with its cluster, which must be `cluster` right after {"cluster":, written
// as $(RINGMASTER_TF_CLUSTER) and every other "$" escaped as "$$". The
// kubelet's expansion of it, with RINGMASTER_TF_CLUSTER = `cluster`, gives
// `tf_config` byte for byte. nullopt when `tf_config` does not hold `cluster`
// there (the pod then gets the whole value).
std::optional<std::string> TfConfigNamingCluster(std::string_view tf_config, std::string_view cluster);

// Appends to a container's `env` RINGMASTER_TF_CLUSTER, read from ConfigMap
// `cluster_map` when the container starts, then TF_CONFIG naming it
// (TfConfigNamingCluster: the kubelet expands a variable only from one
// defined before it). False, and `env` untouched, when `tf_config` does not
// hold `cluster` where it names it.
bool AppendTfConfigNamingCluster(nlohmann::json& env, std::string_view tf_config, std::string_view cluster,
                                 const std::string& cluster_map);

// The pod of replica `key`, from the replica's template: name, labels,
// controller ownerReference, hostname/subdomain, TF_CONFIG and RINGMASTER_*
// in every container, the job key's volume mounted into every container
// (AddJobKeyVolume), the job's port, restartPolicy mapped for the kubelet
// (ExitCode -> Never: the operator decides on restarts from the exit code).
// With ringmaster.io/tf-config: ConfigMap, TF_CONFIG names the cluster
// (TfConfigNamingCluster) and RINGMASTER_TF_CLUSTER, just before it, is set
// from the job's ConfigMap (BuildTfClusterConfigMap): the pod holds O(1) of
// the cluster instead of O(N).
// InvalidArgument when the job has no such replica or an invalid
// ringmaster.io/tf-config.
StatusOr<BuiltPod> BuildPod(const DistributedJob& job, const ReplicaKey& key, const BuildOptions& opts);

// The parts of a replica's pod that both kinds' pods (BuildPod,
// BuildTfJobPod) share.
// The pod's metadata: the replica's template's, named `name` in the job's
// namespace, with `labels` set over the template's, the controller `owner`
// and, for a queued job, Kueue's pod-group marks (the queue, the group, and
// how many pods it has).
nlohmann::json ReplicaPodMetadata(const DistributedJob& job, const ReplicaSpec& spec, const std::string& name,
                                  const nlohmann::json& labels, const nlohmann::json& owner);
// How BuildReplicaEnv writes the variables of `container`: the job's
// namespace and cluster domain, one agent port, the job key's file, and the
// container's own terminationMessagePath.
ReplicaEnvOptions PodEnvOptions(const DistributedJob& job, const BuildOptions& opts,
                                const nlohmann::json& container);

// The headless Service that gives every pod its stable DNS name.
nlohmann::json BuildService(const DistributedJob& job);

// The controller ownerReference to the job (needs metadata.uid).
nlohmann::json OwnerReference(const DistributedJob& job);

// The Secret the job's pods take their key from: spec.communication
// .keySecretRef's name, else the generated KeySecretName(job).
std::string JobKeySecretName(const DistributedJob& job);

// The key Secret the operator generates for a job without keySecretRef
// (nullopt with one): type Opaque, labelled with the job, controlled by it
// (garbage-collected with it), without its data: the shell adds the random
// key with WithJobKey just before creating it, and never replaces one that
// exists (the members would disagree).
std::optional<nlohmann::json> BuildKeySecret(const DistributedJob& job);

// `secret` with data.key = base64(key).
nlohmann::json WithJobKey(nlohmann::json secret, std::string_view key);

// Adds the job key's volume to `podspec` (the key Secret's one item, as the
// file "key", mode 0400; a template volume of the same name is replaced) and
// mounts it read-only at kJobKeyMountPath in every container that has no
// mount there already.
void AddJobKeyVolume(const DistributedJob& job, nlohmann::json& podspec);

// The job's NetworkPolicy: selects its pods and admits ingress to them, on
// every port, only from its own pods (ringmaster.io/job-name); controlled by
// the job. Egress is untouched. Enforced only by a network plugin that
// implements NetworkPolicy.
nlohmann::json BuildNetworkPolicy(const DistributedJob& job);

}  // namespace ringmaster::op
