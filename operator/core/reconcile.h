// The operator's functional core: from the job object, its observed pods and
// Service, and what the operator is still waiting to see (expectations), to
// a plan: the API calls and the status write in the order the shell makes
// them. The decisions themselves
// (restarts, backoff, success, deadlines, suspend, TTL) are api/'s shared
// state machine; the planner (planner.h, shared with the TFJob's) only
// translates between it and Kubernetes objects. Here: the plan's vocabulary
// and the DistributedJob's planner.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pod_builder.h"
#include "ringmaster/job_state.h"
#include "ringmaster/verdict.h"

namespace ringmaster::op {

// One thing the shell does for a plan. Most are API calls on one object;
// kWriteStatus and kRecordEvents carry no object of their own: they stand
// for the plan's `status` and `events`, so the plan says when they happen.
enum class ApiActionKind {
  kWriteStatus,   // PUT plan.status (with the job's resourceVersion)
  kRecordEvents,  // record plan.events on the job
  kCreateService,
  kCreateKeySecret,
  kCreateNetworkPolicy,
  kCreateConfigMap,   // the job's TF_CONFIG cluster (ringmaster.io/tf-config: ConfigMap)
  kCreateGangObject,  // a Workload or PodGroup of Kubernetes' gang scheduling (gang.h)
  kCreatePod,
  // A strategic merge patch of one pod (`object`): Kueue's finalizer dropped
  // from a pod on its way out, its end-of-group mark once the job has ended.
  kPatchPod,
  // A merge patch of the job object itself (`object`): a TFJob's
  // Ringmaster state, kept where a CRD's schema cannot prune it
  // (tfjob_status.h).
  kPatchJob,
  kDeletePod,
  // A TFJob's replica that goes for good (not restarted) loses its Service
  // with its pod, as under training-operator.
  kDeleteService,
  kDeleteJob
};
std::string_view ApiActionKindName(ApiActionKind kind);

struct ApiAction {
  ApiActionKind kind = ApiActionKind::kCreatePod;
  std::string name;       // the object's name
  nlohmann::json object;  // the object to create (kCreate*; the key Secret without its data)
  std::string reason;     // why, for the event the shell records on success
};

// What a failed action of a step means for the rest of the plan. Every
// failure requeues the job (with backoff); the steps after it run unless
// the step says otherwise.
enum class OnFailure {
  kContinue,
  // The later steps run but create no pod: a pod without its key Secret
  // could not join, one without its NetworkPolicy would be open.
  kNoNewPods,
  // Nothing later runs: a status write refused (409: the plan was made from
  // a stale status) must not be followed by what that status decided.
  kStop,
};
std::string_view OnFailureName(OnFailure on_failure);

// Actions that do not depend on each other: the shell may run them
// concurrently.
struct Step {
  std::vector<ApiAction> actions;
  OnFailure on_failure = OnFailure::kContinue;
};

// Creations and deletions the operator made but its cache has not shown yet.
// A pending creation counts as a Pending pod, a pending deletion as a pod on
// its way out: so a lagging cache neither duplicates pods nor restarts twice.
struct Pending {
  std::set<std::string> creating;  // pod names
  std::set<std::string> deleting;  // pod names
};

// What to do for one job, in order: the shell runs `steps` one after the
// other and decides nothing itself.
//
// The order: the status first when the plan deletes anything (a failed pod
// is the evidence of a restart, and a finished job of its TTL: what it
// implies, the restart count or the condition, is stored before the
// evidence goes, so a crash in between repeats the deletion, never the
// count), else last (a new job's creations wait for no status round trip).
// The events right after the status write (a refused one, a 409 from a
// reconcile on an outdated cache, is planned again, events included: so
// they are told once), else first. Then the key Secret, the NetworkPolicy
// and the TF_CONFIG cluster's ConfigMap before any pod; then the Service with the pods (they need it only to
// be found by name, which the agent's formation waits for anyway); then the pods' patches (Kueue's marks: a
// group is finished before its pods go); deletions last.
struct Plan {
  std::vector<Step> steps;
  // The new status subresource when it differs from the job's (the
  // kWriteStatus action writes it).
  std::optional<nlohmann::json> status;
  std::vector<JobEvent> events;  // the kRecordEvents action records them
  // Look again after this long even if nothing changes (a deadline or a
  // TTL is pending): once the steps have run, unless a kStop step failed
  // (the job is retried sooner then anyway).
  std::optional<int64_t> requeue_after_seconds;
  std::string state;  // the job's one-word state after this step
};

// The pods left by a job that is gone or going (`kubectl delete djob`): the
// garbage collector deletes them, and Kueue's finalizer would keep a queued
// job's pods there for good (its group waits for replacements). Drops it
// from each one on its way out: kPatchPod actions only.
std::vector<ApiAction> PlanDeletedJob(const std::vector<nlohmann::json>& pods);

Plan PlanJob(const nlohmann::json& job, const std::vector<nlohmann::json>& pods,
             const nlohmann::json* service, const Pending& pending, int64_t now, const BuildOptions& opts);

}  // namespace ringmaster::op
