// The names the operator writes into Kubernetes objects: labels, object
// names and the API paths of the DistributedJob resource. One place, so the
// pod builder, the informers and the tests agree.
#pragma once

#include <string>

#include "ringmaster/job.h"
#include "ringmaster/job_state.h"

namespace ringmaster::op {

inline constexpr char kLabelJobName[] = "ringmaster.io/job-name";
inline constexpr char kLabelReplicaType[] = "ringmaster.io/replica-type";
inline constexpr char kLabelReplicaIndex[] = "ringmaster.io/replica-index";

// The labels that tie a pod (or Service) to its job and replica: ours on a
// DistributedJob's objects, training-operator's on a TFJob's (tfjob.h).
struct ReplicaLabels {
  const char* job_name;
  const char* replica_type;
  const char* replica_index;
};
inline constexpr ReplicaLabels kDistributedJobLabels{kLabelJobName, kLabelReplicaType, kLabelReplicaIndex};

inline constexpr char kGroup[] = "ringmaster.io";
inline constexpr char kVersion[] = "v1alpha1";
inline constexpr char kPlural[] = "distributedjobs";
// The port's name in the Service and in a container that had none.
inline constexpr char kPortName[] = "ringmaster";
// The agent's control port (RINGMASTER_PORT) in a container (<= 15 chars).
inline constexpr char kAgentPortName[] = "rm-agent";
// Given to containers that set none: the agent's verdict when its group
// aborts is the termination message, and a crash without one still leaves
// the end of its log there.
inline constexpr char kTerminationMessagePolicy[] = "FallbackToLogsOnError";
// The kubelet's default terminationMessagePath (where the agent writes
// without RINGMASTER_TERMINATION_LOG).
inline constexpr char kDefaultTerminationMessagePath[] = "/dev/termination-log";

// The job key (members authenticate each other with it; NewJobKey in
// ringmaster/job_key.h makes one): the Secret the operator generates for a
// job without spec.communication.keySecretRef, its item, and where every
// container finds it (RINGMASTER_JOB_KEY_FILE names the file: the volume
// projects the one item as "key", whatever its name in the Secret).
inline constexpr char kJobKeyItem[] = "key";
inline constexpr char kJobKeyVolume[] = "ringmaster-job-key";
inline constexpr char kJobKeyMountPath[] = "/var/run/secrets/ringmaster.io/job-key";
inline constexpr char kJobKeyFile[] = "/var/run/secrets/ringmaster.io/job-key/key";
// Readable by every user of the pod's containers, as the kubelet's own
// service-account token (0644): the kubelet writes Secret files owned by
// root (unless the pod sets an fsGroup, which is the user's to choose), and
// training images run as non-root (ours as 65532), so 0400 locked them out.
// The file exists only inside the job's own pods.
inline constexpr int kJobKeyFileMode = 0444;

// ringmaster.io/tf-config (kTfConfigAnnotation and its values) is the
// loader's (ringmaster/job.h), which checks it.
// With "ConfigMap": the variable holding the cluster (set from the
// ConfigMap's key), which TF_CONFIG's value names as $(RINGMASTER_TF_CLUSTER).
inline constexpr char kEnvTfCluster[] = "RINGMASTER_TF_CLUSTER";
inline constexpr char kTfClusterKey[] = "cluster";

// "<job>-ringmaster-key": the generated key Secret.
inline std::string KeySecretName(const std::string& job) {
  return job + "-ringmaster-key";
}

// "<job>-ringmaster": the job's NetworkPolicy (--network-policy).
inline std::string NetworkPolicyName(const std::string& job) {
  return job + "-ringmaster";
}

// "<job>-<type>-<index>": deterministic, so a lagging cache cannot make a
// second pod for one replica (the API server answers AlreadyExists).
inline std::string PodName(const std::string& job, const ReplicaKey& key) {
  return job + "-" + key.Name();
}

// The job's Kueue pod group: every pod of the job is one group, admitted and
// preempted whole. The job's name and its uid (a job deleted and created
// again under the same name is a new group: the old group's Workload may
// still be there); at most 40 + 1 + 8 characters, within a label value's 63.
inline std::string PodGroupName(const DistributedJob& job) {
  std::string uid;
  if (auto it = job.metadata.find("uid"); it != job.metadata.end() && it->is_string()) uid = *it;
  std::string tag;
  for (char c : uid) {
    if (c != '-') tag += c;
    if (tag.size() == 8) break;
  }
  return tag.empty() ? job.name : job.name + "-" + tag;
}

// "namespace/name", the work queue's key.
inline std::string ObjectKey(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

}  // namespace ringmaster::op
