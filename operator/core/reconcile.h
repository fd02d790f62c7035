// The operator's functional core: from the job object, its observed pods and
// Service, and what the operator is still waiting to see (expectations), to
// the API calls to make and the status to write. The decisions themselves
// (restarts, backoff, success, deadlines, suspend, TTL) are api/'s shared
// state machine; this file only translates between it and Kubernetes objects.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pod_builder.h"
#include "ringmaster/job_state.h"

namespace ringmaster::op {

// kCreateKeySecret and kCreateNetworkPolicy come before the pods they serve,
// whenever pods are to be created: the shell creates them first (one that
// exists and is controlled by the job is fine; it is never replaced) and
// creates no pod when either fails.
enum class ApiActionKind {
  kCreateService,
  kCreateKeySecret,
  kCreateNetworkPolicy,
  kCreatePod,
  kDeletePod,
  kDeleteJob
};

struct ApiAction {
  ApiActionKind kind = ApiActionKind::kCreatePod;
  std::string name;       // the object's name
  nlohmann::json object;  // the object to create (kCreate*; the key Secret without its data)
  std::string reason;     // why, for the event the shell records on success
};

// Creations and deletions the operator made but its cache has not shown yet.
// A pending creation counts as a Pending pod, a pending deletion as a pod on
// its way out: so a lagging cache neither duplicates pods nor restarts twice.
struct Pending {
  std::set<std::string> creating;  // pod names
  std::set<std::string> deleting;  // pod names
};

struct Plan {
  std::vector<ApiAction> actions;
  // The new status subresource when it differs from the job's.
  std::optional<nlohmann::json> status;
  std::vector<JobEvent> events;
  std::optional<int64_t> requeue_after_seconds;
  std::string state;  // the job's one-word state after this step
};

Plan PlanJob(const nlohmann::json& job, const std::vector<nlohmann::json>& pods,
             const nlohmann::json* service, const Pending& pending, int64_t now, const BuildOptions& opts);

// Whether the shell writes plan.status before it makes plan.actions. Before,
// when the plan deletes anything: a failed pod is the evidence of a restart
// (and a finished job of its TTL), so what it implies (the restart count,
// the condition) is stored before the evidence goes; a crash in between then
// repeats the deletion, never the count. After, otherwise: a new job's
// creations then wait for no status round trip, and the status is the same.
bool StatusBeforeActions(const Plan& plan);

}  // namespace ringmaster::op
