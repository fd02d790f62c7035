// The planner of a TFJob (tfjob_reconcile.h): its hooks into the one planner
// (planner.h) and the plan of a TFJob the loader refuses.
#include "tfjob_reconcile.h"

#include <algorithm>
#include <map>
#include <set>

#include "observe.h"
#include "planner.h"
#include "status_json.h"
#include "tfjob_objects.h"
#include "tfjob_status.h"
#include "time_util.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

constexpr char kFailedValidation[] = "TFJobFailedValidation";

bool LeftToMultiKueue(const json& obj) {
  const json* at = &obj;
  for (const char* key : {"spec", "runPolicy", "managedBy"}) {
    if (!at->is_object()) return false;
    auto it = at->find(key);
    if (it == at->end()) return false;
    at = &*it;
  }
  return *at == kManagedByMultiKueue;
}

// A TFJob the loader refuses: Failed, every refused field named (Kubeflow's
// webhook would have refused it at admission; without one, the status says
// why). Once Failed it stays so, as a finished job does.
Plan InvalidTfJob(const json& obj, const std::vector<FieldError>& errors, int64_t now) {
  Plan plan;
  plan.state = "Failed";
  const json empty = json::object();
  json status = obj.contains("status") && obj["status"].is_object() ? obj["status"] : empty;
  const JobStatus old = TfJobStatusFromJson(status);
  if (old.Is(ConditionType::kFailed)) {
    OrderPlan(plan, {}, {}, {}, {});
    return plan;
  }
  std::string message = "invalid TFJob:";
  for (const auto& e : errors) message += " " + e.path + ": " + e.message + ";";
  if (!status.contains("conditions") || !status["conditions"].is_array())
    status["conditions"] = json::array();
  const std::string at = FormatRfc3339(now);
  json& conditions = status["conditions"];
  for (auto it = conditions.begin(); it != conditions.end();) {
    it = it->is_object() && it->value("type", json()) == "Failed" ? conditions.erase(it) : it + 1;
  }
  conditions.push_back({{"type", "Failed"},
                        {"status", "True"},
                        {"reason", kFailedValidation},
                        {"message", message},
                        {"lastUpdateTime", at},
                        {"lastTransitionTime", at}});
  if (!status.contains("completionTime")) status["completionTime"] = at;
  if (!status.contains("replicaStatuses")) status["replicaStatuses"] = json::object();
  status["lastReconcileTime"] = at;
  plan.status = std::move(status);
  plan.events.push_back({true, kFailedValidation, message});
  OrderPlan(plan, {}, {}, {}, {});
  return plan;
}

// enableDynamicWorker: a Worker that failed for good (its restartPolicy
// does not restart it) does not fail the job, as in training-operator; its
// pod stays, counted as failed, and is not replaced. To the state machine
// it is a replica on its way out: nothing to decide about it.
void KeepFailedWorkers(const DistributedJob& job, std::vector<ReplicaObservation>& observed) {
  const ReplicaSpec* workers = job.Find(ReplicaType::kWorker);
  if (!workers) return;
  for (auto& o : observed) {
    if (o.key.type != ReplicaType::kWorker || o.phase != ReplicaPhase::kFailed) continue;
    const RestartPolicy p = workers->restart_policy;
    const bool restarts = p == RestartPolicy::kOnFailure || p == RestartPolicy::kAlways ||
                          (p == RestartPolicy::kExitCode && o.exit_code >= 128);
    if (!restarts) o.deleting = true;
  }
}

// The state annotation, when it is behind the new status: patched right
// after the status write (before any deletion: a restart's count is stored
// before its failed pod goes), or first when the status is not written.
void KeepState(const json& obj, const JobStatus& status, Plan& plan) {
  const std::string want = TfJobStateAnnotation(status);
  const json* at = &obj;
  for (const char* key : {"metadata", "annotations", kTfJobStateAnnotation}) {
    at = at->is_object() && at->contains(key) ? &(*at)[key] : nullptr;
    if (!at) break;
  }
  const std::string have = at && at->is_string() ? at->get<std::string>() : "";
  if (want == have) return;
  json patch = {
      {"metadata", {{"annotations", {{kTfJobStateAnnotation, want.empty() ? json() : json(want)}}}}}};
  Step step{{{ApiActionKind::kPatchJob, MetadataString(obj, "name"), std::move(patch), "KeptState"}},
            OnFailure::kStop};
  auto write = std::find_if(plan.steps.begin(), plan.steps.end(), [](const Step& s) {
    return !s.actions.empty() && s.actions[0].kind == ApiActionKind::kWriteStatus;
  });
  plan.steps.insert(write == plan.steps.end() ? plan.steps.begin() : write + 1, std::move(step));
}

// The state machine's events under training-operator's reasons and words.
std::vector<JobEvent> TfJobEvents(const TfJob& tfjob, std::vector<JobEvent> events) {
  for (auto& e : events) {
    e.message = TfJobMessage(tfjob, e.reason, e.message);
    e.reason = TfJobReason(ConditionType::kCreated, e.reason);
  }
  return events;
}

// training-operator's ExitedWithCode ("Pod: ns.name exited with code N"),
// a Normal event for a pod whose container ended. training-operator writes
// it on every reconcile that sees the ended pod; here it is written once,
// when the exit is acted on: the pod is restarted, or the job finishes with
// it (both happen once per exit; a once-event of the pod, so that a new
// leader's telling of a restart it finds half done is the same Event).
void AddExitEvents(const json& obj, const TfJob& tfjob, const std::vector<ReplicaObservation>& observed,
                   const Decision& d, const JobStatus& old_status, std::vector<JobEvent>& events) {
  std::set<ReplicaKey> restarted;
  for (const Action& a : d.actions) {
    if (a.kind == ActionKind::kRestart) restarted.insert(a.key);
  }
  const bool finishing = !old_status.Finished() && d.status.Finished();
  const std::string ns = MetadataString(obj, "namespace");
  for (const ReplicaObservation& o : observed) {
    const bool ended = o.phase == ReplicaPhase::kSucceeded || o.phase == ReplicaPhase::kFailed;
    if (!ended || !(finishing || restarted.count(o.key))) continue;
    events.push_back({false, "ExitedWithCode",
                      "Pod: " + ns + "." + TfJobReplicaName(tfjob, o.key.type, o.key.index) +
                          " exited with code " + std::to_string(o.exit_code),
                      o.uid.empty() ? "" : "exit." + o.uid});
  }
}

class TfJobPlan final : public PlanKind {
 public:
  TfJobPlan(const json& obj, const TfJob& tfjob, const std::vector<json>& services)
      : obj_(obj),
        tfjob_(tfjob),
        services_(services),
        status_obj_(obj.contains("status") && obj["status"].is_object() ? obj["status"] : empty_) {}

  const DistributedJob& Job() const override { return tfjob_.job; }
  std::string ReplicaName(const ReplicaKey& key) const override {
    return TfJobReplicaName(tfjob_, key.type, key.index);
  }
  const ReplicaLabels& Labels() const override { return kTfJobLabels; }
  void AdjustObserved(std::vector<ReplicaObservation>& observed) const override {
    if (tfjob_.enable_dynamic_worker) KeepFailedWorkers(tfjob_.job, observed);
  }
  JobStatus OldStatus() const override {
    JobStatus status = TfJobStatusFromJson(status_obj_);
    MergeTfJobStateAnnotation(obj_, status);
    return status;
  }

  // One Service per replica, each before (or with) its pod.
  std::vector<ApiAction> MissingServices() const override {
    const std::string uid = MetadataString(obj_, "uid");
    std::set<std::string> have;
    for (const auto& s : services_) {
      if (ControlledBy(s, uid)) have.insert(MetadataString(s, "name"));
    }
    std::vector<ApiAction> out;
    for (const auto& [type, spec] : tfjob_.job.replica_specs) {
      for (int i = 0; i < spec.replicas; ++i) {
        const ReplicaKey key{type, i};
        if (have.count(ReplicaName(key))) continue;
        out.push_back({ApiActionKind::kCreateService, ReplicaName(key), BuildTfJobService(tfjob_, key),
                       "SuccessfulCreateService"});
      }
    }
    return out;
  }
  // Gone for good (cleanPodPolicy, suspend, scaled away): its Service goes
  // with it, as training-operator deletes both.
  void DeleteReplica(const ReplicaKey& key, std::vector<ApiAction>& deletions) const override {
    PlanKind::DeleteReplica(key, deletions);
    deletions.push_back({ApiActionKind::kDeleteService, ReplicaName(key), json(), "SuccessfulDeleteService"});
  }

  StatusOr<BuiltPod> Pod(const ReplicaKey& key, const BuildOptions& opts) const override {
    return BuildTfJobPod(tfjob_, key, opts);
  }
  // The job-wide objects, labelled with the TFJob and controlled by it.
  std::vector<json> GangObjects(GangApi api) const override { return BuildTfJobGangObjects(tfjob_, api); }
  StatusOr<std::optional<json>> ClusterConfigMap(const BuildOptions& opts) const override {
    return BuildTfJobClusterConfigMap(tfjob_, opts);
  }
  json NetworkPolicy() const override { return BuildTfJobNetworkPolicy(tfjob_); }
  std::optional<json> KeySecret() const override { return BuildTfJobKeySecret(tfjob_); }

  std::vector<JobEvent> Events(const Decision& d, const JobStatus& old_status,
                               const std::vector<ReplicaObservation>& observed) const override {
    std::vector<JobEvent> events = TfJobEvents(tfjob_, d.events);
    AddExitEvents(obj_, tfjob_, observed, d, old_status, events);
    return events;
  }
  std::optional<json> NewStatus(const Decision& d, const JobStatus&,
                                const std::vector<ReplicaObservation>& observed, const std::string&,
                                int64_t now) const override {
    json status = TfJobStatusToJson(tfjob_, d.status, observed, now);
    if (TfJobStatusChanged(status_obj_.empty() ? json() : status_obj_, status)) return status;
    return std::nullopt;
  }
  void FinishPlan(const Decision& d, Plan& plan) const override { KeepState(obj_, d.status, plan); }

 private:
  const json empty_ = json::object();
  const json& obj_;
  const TfJob& tfjob_;
  const std::vector<json>& services_;
  const json& status_obj_;
};

}  // namespace

Plan PlanTfJob(const json& obj, const std::vector<json>& pods, const std::vector<json>& services,
               const Pending& pending, int64_t now, const BuildOptions& opts) {
  if (LeftToMultiKueue(obj)) return Plan{};
  LoadedTfJob loaded = DecodeTfJob(obj);
  if (!loaded.tfjob) return InvalidTfJob(obj, loaded.errors, now);
  return PlanReplicas(TfJobPlan(obj, *loaded.tfjob, services), obj, pods, pending, now, opts);
}

}  // namespace ringmaster::op
