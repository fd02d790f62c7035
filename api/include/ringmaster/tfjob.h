// Kubeflow's TFJob (kubeflow.org/v1), as training-operator v1.9 reads it:
// loading one into the DistributedJob the rest of Ringmaster runs, with
// every field it cannot honour refused by name, and the TF_CONFIG
// training-operator injects into each replica, byte for byte. Ringmaster's
// own settings ride on annotations (kTfJobAnnotation*). docs/kubeflow.md
// describes the format and the mapping for users.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/job.h"
#include "ringmaster/status.h"
#include "ringmaster/tf_config_gen.h"

namespace ringmaster {

inline constexpr char kTfJobApiVersion[] = "kubeflow.org/v1";
inline constexpr char kTfJobKind[] = "TFJob";
// The container that gets TF_CONFIG, and its port named tfjob-port (2222
// when absent): every replica type needs one container of that name.
inline constexpr char kTfJobContainerName[] = "tensorflow";
inline constexpr char kTfJobPortName[] = "tfjob-port";
inline constexpr int kTfJobDefaultPort = 2222;

// training-operator's labels on each pod and Service (the operator wiring
// uses them; the values are TfJobReplicaTypeLower's, the index, "master").
inline constexpr char kTfJobNameLabel[] = "training.kubeflow.org/job-name";
inline constexpr char kTfJobReplicaTypeLabel[] = "training.kubeflow.org/replica-type";
inline constexpr char kTfJobReplicaIndexLabel[] = "training.kubeflow.org/replica-index";
inline constexpr char kTfJobRoleLabel[] = "training.kubeflow.org/job-role";
inline constexpr char kTfJobOperatorNameLabel[] = "training.kubeflow.org/operator-name";
inline constexpr char kTfJobOperatorName[] = "tfjob-controller";

// spec.runPolicy.managedBy's values: the default controller (now Ringmaster),
// or MultiKueue, which the job is left to.
inline constexpr char kManagedByKubeflow[] = "kubeflow.org/training-operator";
inline constexpr char kManagedByMultiKueue[] = "kueue.x-k8s.io/multikueue";

// Ringmaster's settings on a TFJob, as metadata.annotations (strings). Each
// is the DistributedJob field named beside it; any other annotation with the
// ringmaster.io/ prefix is refused (a typo must not be silently ignored).
inline constexpr char kTfJobAnnotationPrefix[] = "ringmaster.io/";
inline constexpr char kTfJobAnnotationImplementation[] =
    "ringmaster.io/implementation";  // spec.communication.implementation
inline constexpr char kTfJobAnnotationBytesPerPack[] =
    "ringmaster.io/bytes-per-pack";  // spec.communication.bytesPerPack
inline constexpr char kTfJobAnnotationTimeoutSeconds[] =
    "ringmaster.io/timeout-seconds";  // spec.communication.timeoutSeconds
inline constexpr char kTfJobAnnotationKeySecretName[] =
    "ringmaster.io/key-secret-name";  // spec.communication.keySecretRef.name
inline constexpr char kTfJobAnnotationKeySecretKey[] =
    "ringmaster.io/key-secret-key";  // spec.communication.keySecretRef.key
inline constexpr char kTfJobAnnotationRecovery[] = "ringmaster.io/recovery";  // spec.runPolicy.recovery
inline constexpr char kTfJobAnnotationMinWorkers[] =
    "ringmaster.io/elastic-min-workers";  // spec.runPolicy.elastic.minWorkers
inline constexpr char kTfJobAnnotationRejoinTimeout[] =
    "ringmaster.io/elastic-rejoin-timeout-seconds";  // spec.runPolicy.elastic.rejoinTimeoutSeconds
inline constexpr char kTfJobAnnotationReplacementTimeout[] =
    "ringmaster.io/elastic-replacement-timeout-seconds";  // ...elastic.replacementTimeoutSeconds

// Something that changes meaning when the TFJob runs as its DistributedJob
// (`ringmaster convert` prints them): the TFJob field and what changes.
struct ConversionNote {
  std::string path;
  std::string message;
  int line = 0, column = 0;  // where `path` is written; 0 when unknown
};

struct TfJob {
  // The job the rest of Ringmaster runs (validate, run, the planner).
  DistributedJob job;
  // Its DistributedJob document (ringmaster.io/v1alpha1), what `ringmaster
  // convert` prints: TFJob's defaults written out (cleanPodPolicy None),
  // the annotations as fields, each tensorflow container first.
  nlohmann::json distributed_job;

  // What training-operator's names and TF_CONFIG need beyond `job`:
  // the chief was written as Master (its names and TF_CONFIG say "master");
  bool chief_is_master = false;
  // each type's tfjob-port;
  std::map<ReplicaType, int> ports;
  // spec.enableDynamicWorker: the sparse TF_CONFIG, and failed workers do
  // not fail the job;
  bool enable_dynamic_worker = false;
  // spec.runPolicy.managedBy ("" when absent).
  std::string managed_by;

  std::vector<ConversionNote> notes;
};

struct LoadedTfJob {
  std::optional<TfJob> tfjob;
  std::vector<FieldError> errors;  // paths are the TFJob's own
  int document_index = 0;
};

// Decodes, defaults (as training-operator does) and validates one TFJob
// object, then its DistributedJob; every error names the TFJob field.
LoadedTfJob DecodeTfJob(const nlohmann::json& object);

// Every TFJob document of a YAML or JSON file, with errors and notes
// located. Fails only when the text does not parse or holds no TFJob.
StatusOr<std::vector<LoadedTfJob>> LoadTfJobs(std::string_view text, std::string_view source_name);

// A document of either kind, as the CLI takes a file.
struct LoadedAnyJob {
  std::string kind;            // kKind or kTfJobKind
  LoadedJob loaded;            // the DistributedJob (a TFJob's converted) or the errors
  std::optional<TfJob> tfjob;  // a valid TFJob's own
};

// Every DistributedJob and TFJob document of the file, in file order
// (documents of other kinds are skipped). Fails only when the text does not
// parse or holds neither kind.
StatusOr<std::vector<LoadedAnyJob>> LoadAnyJobs(std::string_view text, std::string_view source_name);

// "chief", "master" (a chief written as Master), "worker", "ps",
// "evaluator": the TF_CONFIG job, and in pod and Service names and labels.
std::string_view TfJobReplicaTypeLower(const TfJob& tfjob, ReplicaType type);

// "<job>-<type>-<index>": the pod's and its own headless Service's name.
std::string TfJobReplicaName(const TfJob& tfjob, ReplicaType type, int index);

// "<job>-<type>-<index>.<ns>.svc[.<domain>]:<tfjob-port of the type>":
// one headless Service per replica, as training-operator creates.
std::string TfJobReplicaAddress(const TfJob& tfjob, ReplicaType type, int index, const TfConfigOptions& opts);

// training-operator sets no TF_CONFIG in a job of one replica in all.
bool TfJobSetsTfConfig(const TfJob& tfjob);

// The TF_CONFIG training-operator v1.9 injects into that replica's
// tensorflow container: every replica type in the cluster (the Evaluator
// too), Go's key order, one Service per replica; the sparse form when
// enableDynamicWorker is set (or opts.sparse). InvalidArgument when the job
// has no such replica. Callers check TfJobSetsTfConfig first.
StatusOr<std::string> GenerateTfJobTfConfig(const TfJob& tfjob, ReplicaType type, int index,
                                            const TfConfigOptions& opts);

// The DistributedJob as YAML (`ringmaster convert`): a file `ringmaster
// validate` accepts and that loads into the same job.
std::string DistributedJobYaml(const TfJob& tfjob);

}  // namespace ringmaster
