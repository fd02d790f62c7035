// The DistributedJob resource (ringmaster.io/v1alpha1): the model, its
// defaults and validation, and loading it from the YAML or JSON a user would
// `kubectl apply`. Field names follow Kubeflow's TFJob where the meaning is
// the same.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/comm_options.h"
#include "ringmaster/enums.h"
#include "ringmaster/status.h"

namespace ringmaster {

inline constexpr char kApiVersion[] = "ringmaster.io/v1alpha1";
inline constexpr char kKind[] = "DistributedJob";
inline constexpr int kDefaultPort = 2222;

// The enums below are declared from their tables in enums.h, which also
// give their names (ringmaster/enum_names.h).

// Declaration order is the collective group's order (chief first) and the
// order replicas are started and listed in.
enum class ReplicaType { RM_REPLICA_TYPE_TABLE(RM_ENUM_CXX_ENUMERATOR) };
#define RM_REPLICA_TYPE_VALUE(c_name, cxx_name, value, name) ReplicaType::cxx_name,
inline constexpr ReplicaType kAllReplicaTypes[] = {RM_REPLICA_TYPE_TABLE(RM_REPLICA_TYPE_VALUE)};
#undef RM_REPLICA_TYPE_VALUE

// "Chief", "Worker", "PS", "Evaluator": the spelling of spec.replicaSpecs keys.
std::string_view ReplicaTypeName(ReplicaType t);
// "chief", "worker", "ps", "evaluator": TF_CONFIG and pod names.
std::string_view ReplicaTypeLower(ReplicaType t);
// Accepts the spec keys ("Master" as an alias of Chief) and the lower-case
// TF_CONFIG names, case-insensitively.
std::optional<ReplicaType> ParseReplicaType(std::string_view text);

enum class RestartPolicy { RM_RESTART_POLICY_TABLE(RM_ENUM_CXX_ENUMERATOR) };
std::string_view RestartPolicyName(RestartPolicy p);

enum class CleanPodPolicy { RM_CLEAN_POD_POLICY_TABLE(RM_ENUM_CXX_ENUMERATOR) };
std::string_view CleanPodPolicyName(CleanPodPolicy p);

// spec.runPolicy.recovery: what a member's failure costs. Job (the
// default): the failed replica restarts per its restartPolicy and, in most
// programs, the others fail with it and restart too. InPlace: the program
// recovers in place (Python's elastic.run, ringmaster-worker --recover):
// the others keep running, the operator replaces the failed pod alone
// (its restartPolicy decides whether; the kubelet's crash-loop backoff on
// repeated failures is skipped), the job's condition is Recovering, naming
// it, and each replacement counts against backoffLimit as a restart does.
enum class RecoveryPolicy { RM_RECOVERY_POLICY_TABLE(RM_ENUM_CXX_ENUMERATOR) };
std::string_view RecoveryPolicyName(RecoveryPolicy p);

enum class SuccessPolicy { kDefault, kAllWorkers };

struct ReplicaSpec {
  int replicas = 1;
  RestartPolicy restart_policy = RestartPolicy::kNever;
  // The PodTemplateSpec as written: the operator copies it into pods and the
  // local runner reads containers[0].command/args/env from it.
  nlohmann::json pod_template = nlohmann::json::object();
};

// ringmaster.io/tf-config on a DistributedJob: how its pods get TF_CONFIG.
// DecodeJob refuses any other value, naming the annotation.
// "Inline" (the default) writes the whole value into every pod, so a job's
// pods hold its cluster N times (N² bytes in etcd); "ConfigMap" writes the
// cluster once, into an immutable ConfigMap of the job, and every pod's
// TF_CONFIG refers to it through a variable the kubelet expands
// (the operator's pod_builder.h). TensorFlow and the agent read the same TF_CONFIG either way.
inline constexpr char kTfConfigAnnotation[] = "ringmaster.io/tf-config";
inline constexpr char kTfConfigInline[] = "Inline";
inline constexpr char kTfConfigConfigMap[] = "ConfigMap";
// Kueue's names, on pods and on the job (sigs.k8s.io/kueue, plain pod groups).
inline constexpr char kKueueQueueLabel[] = "kueue.x-k8s.io/queue-name";
inline constexpr char kKueuePodGroupLabel[] = "kueue.x-k8s.io/pod-group-name";
inline constexpr char kKueuePodGroupCountAnnotation[] = "kueue.x-k8s.io/pod-group-total-count";
inline constexpr char kKueueAdmissionGate[] = "kueue.x-k8s.io/admission";
// Kueue's finalizer on the pods it manages: it holds a deleted pod of an
// admitted group until a replacement exists, and a replacement of the same
// name cannot exist until the pod is gone, so the operator drops it.
inline constexpr char kKueueFinalizer[] = "kueue.x-k8s.io/managed";
// "false" on a pod finishes its group once no pod of it runs (the quota is
// released); the operator sets it when the job has ended.
inline constexpr char kKueueRetriableInGroupAnnotation[] = "kueue.x-k8s.io/retriable-in-group";
// The pod condition Kueue sets (True) on a pod it is about to delete because
// its Workload was preempted or evicted.
inline constexpr char kKueueTerminationTargetCondition[] = "TerminationTarget";

// spec.runPolicy.schedulingPolicy, with TFJob's names: where the job waits
// for admission on a shared cluster and how it is placed. A queue makes
// every pod of the job one Kueue pod group, admitted (and preempted) whole.
struct SchedulingPolicy {
  // A Kueue LocalQueue in the job's namespace; "" when the job is not queued.
  // Also taken from the job's own kueue.x-k8s.io/queue-name label (Kueue's
  // convention for its integrations); the two may not disagree.
  std::string queue;
  // A PriorityClass: every pod's priorityClassName (Kueue orders and
  // preempts by it).
  std::string priority_class;
  // How many pods must be placed together (the gang's size, a native
  // PodGroup's minCount); nullopt: all of the job's pods.
  std::optional<int> min_available;
  // With a queue: how long each wait for admission (the job Queued) may
  // last before the job fails (ScheduleTimeout); nullopt: it waits as long
  // as its queue makes it. Not acted on for a native gang (no per-group
  // timeout exists there).
  std::optional<int64_t> schedule_timeout_seconds;

  bool operator==(const SchedulingPolicy&) const = default;
};

// spec.runPolicy.elastic, with recovery InPlace: the group may go on with
// fewer workers. When a failed worker has not come back rejoinTimeoutSeconds
// after the others began re-forming (its replacement cannot be scheduled,
// its node is gone), they continue without it as long as at least
// minWorkers workers are there (ranks renumbered; the program's reset
// callbacks adjust its batch and learning rate); when it comes back, the
// others let it in at their next commit. The chief, or worker 0 without
// one, leads formation and is never left out.
struct ElasticPolicy {
  int min_workers = 1;
  double rejoin_timeout_seconds = 30;
  // How long a failed replica's replacement may take to run again (Pending:
  // unschedulable, its node gone, its image pulling) before the job fails
  // (ReplacementTimeout): the group, shrunk, would otherwise wait for it
  // for good. nullopt: no bound.
  std::optional<int64_t> replacement_timeout_seconds;

  bool operator==(const ElasticPolicy&) const = default;
};

struct RunPolicy {
  std::optional<int> backoff_limit;  // nullopt: no limit on restarts
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int64_t> ttl_seconds_after_finished;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
  bool suspend = false;
  SchedulingPolicy scheduling_policy;
  RecoveryPolicy recovery = RecoveryPolicy::kJob;
  std::optional<ElasticPolicy> elastic;
};

// spec.communication.keySecretRef: the user's own Secret holding the job's
// key (the file its members authenticate each other with), instead of the
// one the operator generates. `name` is a DNS-1123 subdomain, `key` the
// Secret's item (Kubernetes' Secret key rule: [-._a-zA-Z0-9]+, at most 253).
struct KeySecretRef {
  std::string name;
  std::string key = "key";

  friend bool operator==(const KeySecretRef&, const KeySecretRef&) = default;
};

struct DistributedJob {
  std::string name;
  std::string namespace_;  // "" when the file names none
  nlohmann::json metadata = nlohmann::json::object();
  std::map<ReplicaType, ReplicaSpec> replica_specs;
  CommunicationOptions communication;
  // nullopt: the operator generates the job's key Secret.
  std::optional<KeySecretRef> key_secret_ref;
  RunPolicy run_policy;
  SuccessPolicy success_policy = SuccessPolicy::kDefault;
  int port = kDefaultPort;

  const ReplicaSpec* Find(ReplicaType t) const;
  int Replicas(ReplicaType t) const;  // 0 when the type is absent
  int TotalReplicas() const;          // every pod of the job, all types
};

// One problem found in a document: the field path ("spec.replicaSpecs.Worker
// .replicas") and, for YAML, where it is (1-based; 0 when unknown).
struct FieldError {
  std::string path;
  std::string message;
  int line = 0;
  int column = 0;
  // The problem is the key itself (an unknown field or replica type), so
  // the location is the key's, not its value's.
  bool at_key = false;
};

// Renders "file:line:col: path: message" (location parts omitted when unknown).
std::string FormatFieldError(const FieldError& e, std::string_view source);

// A loaded document, or every error found in it.
struct LoadedJob {
  std::optional<DistributedJob> job;
  std::vector<FieldError> errors;
  int document_index = 0;  // 0-based position in a multi-document file
};

// Parses YAML or JSON (one or several `---` documents) into jobs with defaults
// applied and validated. Documents of another kind are skipped (a file may
// hold a Namespace next to the job). Fails only when the text itself does not
// parse; per-document problems are in LoadedJob::errors.
StatusOr<std::vector<LoadedJob>> LoadJobs(std::string_view text, std::string_view source_name);

// Decodes, defaults and validates one object (e.g. from the API server).
// Errors carry paths but no line numbers.
LoadedJob DecodeJob(const nlohmann::json& object);

// Convenience for callers that want exactly one job: the errors of all
// documents rendered as one InvalidArgument, each on its own line.
StatusOr<DistributedJob> LoadSingleJob(std::string_view text, std::string_view source_name);

}  // namespace ringmaster
