#include "tfjob_reconcile.h"

#include <algorithm>
#include <map>
#include <set>

#include "observe.h"
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
// it (both happen once per exit).
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
                          " exited with code " + std::to_string(o.exit_code)});
  }
}

}  // namespace

Plan PlanTfJob(const json& obj, const std::vector<json>& pods, const std::vector<json>& services,
               const Pending& pending, int64_t now, const BuildOptions& opts) {
  if (LeftToMultiKueue(obj)) return Plan{};
  LoadedTfJob loaded = DecodeTfJob(obj);
  if (!loaded.tfjob) return InvalidTfJob(obj, loaded.errors, now);
  const TfJob& tfjob = *loaded.tfjob;
  const DistributedJob& job = tfjob.job;
  const std::string uid = MetadataString(obj, "uid");
  auto name_of = [&](const ReplicaKey& key) { return TfJobReplicaName(tfjob, key.type, key.index); };

  std::vector<ReplicaObservation> observed;
  std::map<ReplicaKey, ReplicaExit> failures;
  std::set<std::string> seen;
  std::vector<const json*> ours;
  for (const auto& pod : pods) {
    if (!ControlledBy(pod, uid)) continue;
    auto o = ObservePod(pod, kTfJobLabels);
    if (!o) continue;
    const std::string name = MetadataString(pod, "name");
    if (name != name_of(o->key)) continue;  // not a name we would give
    seen.insert(name);
    ours.push_back(&pod);
    if (pending.deleting.count(name)) o->deleting = true;
    if (auto failure = ObserveFailure(pod, kTfJobLabels)) failures[o->key] = std::move(*failure);
    observed.push_back(*o);
  }
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i) {
      const ReplicaKey key{type, i};
      const std::string name = name_of(key);
      if (pending.creating.count(name) && !seen.count(name)) {
        ReplicaObservation o;
        o.key = key;
        o.phase = ReplicaPhase::kPending;
        o.gated = !job.run_policy.scheduling_policy.queue.empty();  // see PlanJob
        observed.push_back(o);
      }
    }
  }

  if (tfjob.enable_dynamic_worker) KeepFailedWorkers(job, observed);

  const json empty = json::object();
  const json& status_obj = obj.contains("status") && obj["status"].is_object() ? obj["status"] : empty;
  JobStatus old_status = TfJobStatusFromJson(status_obj);
  MergeTfJobStateAnnotation(obj, old_status);
  Decision d = Reconcile(job, old_status, observed, now);
  AddVerdict(old_status, failures, d);

  Plan plan;
  plan.requeue_after_seconds = d.requeue_after_seconds;
  plan.state = StateOf(d.status);

  std::vector<ApiAction> prerequisites, creations, deletions;
  const bool wants_pods = !d.status.Finished() && !job.run_policy.suspend;
  if (wants_pods) {
    // One Service per replica, each before (or with) its pod.
    std::set<std::string> have;
    for (const auto& s : services) {
      if (ControlledBy(s, uid)) have.insert(MetadataString(s, "name"));
    }
    for (const auto& [type, spec] : job.replica_specs) {
      for (int i = 0; i < spec.replicas; ++i) {
        const ReplicaKey key{type, i};
        if (have.count(name_of(key))) continue;
        creations.push_back({ApiActionKind::kCreateService, name_of(key), BuildTfJobService(tfjob, key),
                             "SuccessfulCreateService"});
      }
    }
  }
  const bool creates_pods = std::any_of(d.actions.begin(), d.actions.end(),
                                        [](const Action& a) { return a.kind == ActionKind::kCreate; });
  if (creates_pods) {
    if (auto secret = BuildTfJobKeySecret(tfjob)) {
      prerequisites.push_back({ApiActionKind::kCreateKeySecret, KeySecretName(job.name), std::move(*secret),
                               "SuccessfulCreateKeySecret"});
    }
    if (opts.network_policy) {
      prerequisites.push_back({ApiActionKind::kCreateNetworkPolicy, NetworkPolicyName(job.name),
                               BuildTfJobNetworkPolicy(tfjob), "SuccessfulCreateNetworkPolicy"});
    }
    // The cluster their TF_CONFIG names (ringmaster.io/tf-config:
    // ConfigMap; the kubelet holds back a container whose variable names a
    // ConfigMap that does not exist). Built only here: it is O(N).
    if (auto map = BuildTfJobClusterConfigMap(tfjob, opts); map.ok() && *map) {
      std::string name = (**map)["metadata"]["name"];
      prerequisites.push_back(
          {ApiActionKind::kCreateConfigMap, std::move(name), std::move(**map), "SuccessfulCreateConfigMap"});
    }
    // The gang the pods point at (the scheduler holds them until it exists).
    for (json& object : BuildTfJobGangObjects(tfjob, opts.gang_api)) {
      const std::string reason = "SuccessfulCreate" + object.value("kind", std::string());
      prerequisites.push_back({ApiActionKind::kCreateGangObject, job.name, std::move(object), reason});
    }
  }
  std::vector<JobEvent> build_events;
  for (const Action& a : d.actions) {
    switch (a.kind) {
      case ActionKind::kCreate: {
        auto built = BuildTfJobPod(tfjob, a.key, opts);
        if (!built.ok()) {
          build_events.push_back({true, "FailedCreatePod", built.status().message()});
          continue;
        }
        build_events.insert(build_events.end(), built->events.begin(), built->events.end());
        creations.push_back(
            {ApiActionKind::kCreatePod, name_of(a.key), std::move(built->pod), "SuccessfulCreatePod"});
        break;
      }
      case ActionKind::kDelete:
        // Gone for good (cleanPodPolicy, suspend, scaled away): its Service
        // goes with it, as training-operator deletes both.
        deletions.push_back({ApiActionKind::kDeletePod, name_of(a.key), json(), "SuccessfulDeletePod"});
        deletions.push_back(
            {ApiActionKind::kDeleteService, name_of(a.key), json(), "SuccessfulDeleteService"});
        break;
      case ActionKind::kRestart:
        deletions.push_back({ApiActionKind::kDeletePod, name_of(a.key), json(), "RestartingPod"});
        break;
      case ActionKind::kDeleteJob:
        deletions.push_back({ApiActionKind::kDeleteJob, job.name, json(), "TTLExpired"});
        break;
    }
  }
  plan.events = TfJobEvents(tfjob, d.events);
  AddExitEvents(obj, tfjob, observed, d, old_status, plan.events);
  plan.events.insert(plan.events.end(), build_events.begin(), build_events.end());

  std::vector<ApiAction> patches = KueuePatches(ours, d.status.Finished());

  json status = TfJobStatusToJson(tfjob, d.status, observed, now);
  if (TfJobStatusChanged(status_obj.empty() ? json() : status_obj, status)) plan.status = std::move(status);
  OrderPlan(plan, std::move(prerequisites), std::move(creations), std::move(patches), std::move(deletions));
  KeepState(obj, d.status, plan);
  return plan;
}

}  // namespace ringmaster::op
