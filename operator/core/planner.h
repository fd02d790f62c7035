// The one planner of both job kinds (PlanJob: DistributedJob, PlanTfJob:
// TFJob): from the decoded job, its observed pods and what the operator is
// still waiting to see, through the shared state machine (api/job_state), to
// a plan in the plan's order (reconcile.h's Plan). What differs between the
// kinds (the replicas' names and labels, the objects built for them, the
// events' words, the status's form) is the kind's: a PlanKind, whose hooks
// are pure functions of the job object it was made from.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "names.h"
#include "reconcile.h"

namespace ringmaster::op {

class PlanKind {
 public:
  virtual ~PlanKind() = default;

  // The job as the state machine reads it.
  virtual const DistributedJob& Job() const = 0;
  // The name of replica `key`'s pod (and of a TFJob's Service for it).
  virtual std::string ReplicaName(const ReplicaKey& key) const = 0;
  // The labels that tie a pod to the job (ObservePod reads them).
  virtual const ReplicaLabels& Labels() const = 0;
  // The observed replicas as the state machine is to see them.
  virtual void AdjustObserved(std::vector<ReplicaObservation>& observed) const {}
  // The job's status as the state machine reads it.
  virtual JobStatus OldStatus() const = 0;

  // The Services missing for a job that wants its pods.
  virtual std::vector<ApiAction> MissingServices() const = 0;
  // What the pods need before they start (pod_builder.h, tfjob_objects.h).
  virtual std::optional<nlohmann::json> KeySecret() const = 0;
  virtual nlohmann::json NetworkPolicy() const = 0;
  virtual StatusOr<std::optional<nlohmann::json>> ClusterConfigMap(const BuildOptions& opts) const = 0;
  virtual std::vector<nlohmann::json> GangObjects(GangApi api) const = 0;
  virtual StatusOr<BuiltPod> Pod(const ReplicaKey& key, const BuildOptions& opts) const = 0;
  // The deletions of a replica that goes for good (not restarted): its pod.
  virtual void DeleteReplica(const ReplicaKey& key, std::vector<ApiAction>& deletions) const;

  // The decision's events as the kind tells them (before those of building
  // the pods).
  virtual std::vector<JobEvent> Events(const Decision& d, const JobStatus& old_status,
                                       const std::vector<ReplicaObservation>& observed) const = 0;
  // The status to write for the decision (`state` is plan.state), nullopt
  // when the job's holds.
  virtual std::optional<nlohmann::json> NewStatus(const Decision& d, const JobStatus& old_status,
                                                  const std::vector<ReplicaObservation>& observed,
                                                  const std::string& state, int64_t now) const = 0;
  // Last words on the ordered plan.
  virtual void FinishPlan(const Decision& d, Plan& plan) const {}
};

// The plan for the job object `job` (its metadata.uid owns its pods) of
// kind `kind`.
Plan PlanReplicas(const PlanKind& kind, const nlohmann::json& job, const std::vector<nlohmann::json>& pods,
                  const Pending& pending, int64_t now, const BuildOptions& opts);

// metadata.generation (0 when absent).
int64_t Generation(const nlohmann::json& job);

// Puts the actions into plan.steps in the plan's order (see Plan): the
// status first when anything is deleted, else last; the events right after
// the status write, else first; then prerequisites, creations, patches,
// deletions.
void OrderPlan(Plan& plan, std::vector<ApiAction> prerequisites, std::vector<ApiAction> creations,
               std::vector<ApiAction> patches, std::vector<ApiAction> deletions);

// The failed replicas' last words (their termination messages) in the
// condition that their failure set, and as an Event. When it restarts
// replicas, only theirs count; when it fails the job, every failed one.
void AddVerdict(const JobStatus& old_status, const std::map<ReplicaKey, ReplicaExit>& failures, Decision& d);

// Kueue's hold on the job's pods (job.h has the names and why). A pod on its
// way out loses Kueue's finalizer: Kueue keeps a deleted pod of an admitted
// group until its replacement exists, and the replacement, under the same
// name, cannot exist before the pod is gone. Once the job has ended, each
// pod of its group is marked not retriable, so Kueue finishes the group and
// releases its quota as soon as no pod of it runs, whatever cleanPodPolicy
// keeps.
std::vector<ApiAction> KueuePatches(const std::vector<const nlohmann::json*>& pods, bool finished);

}  // namespace ringmaster::op
