// The one planner (planner.h): what both kinds' plans share.
#include "planner.h"

#include <algorithm>
#include <set>

#include "observe.h"
#include "status_json.h"

namespace ringmaster::op {

using nlohmann::json;

namespace {

// The condition this decision just set that a replica's failure explains:
// Failed (not by the job's own deadline), Restarting or Recovering. Null
// when none.
Condition* NewFailureCondition(const JobStatus& old_status, Decision& d) {
  for (auto& c : d.status.conditions) {
    if (!c.status) continue;
    if (c.type == ConditionType::kFailed && !old_status.Is(ConditionType::kFailed) &&
        c.reason != "DeadlineExceeded")
      return &c;
  }
  for (const auto& e : d.events) {
    if (e.reason == "JobRestarting" || e.reason == "Recovering") {
      const auto type = e.reason == "Recovering" ? ConditionType::kRecovering : ConditionType::kRestarting;
      for (auto& c : d.status.conditions) {
        if (c.type == type && c.status) return &c;
      }
    }
  }
  return nullptr;
}

// A job that had ended before this look: its end event, told again while it
// is recent. The operator that wrote the end may have been killed before its
// event was posted; told again under the same name (JobEvent::once), it
// exists once whoever tells it. Past kRetellEndFor (about an Event's life in
// the API server, an hour by default) it is left alone.
constexpr int64_t kRetellEndFor = 3000;
void RetellEnd(const JobStatus& old_status, int64_t now, Decision& d) {
  if (!old_status.Finished()) return;
  const bool failed = old_status.Is(ConditionType::kFailed);
  const Condition* c = old_status.Find(failed ? ConditionType::kFailed : ConditionType::kSucceeded);
  const int64_t ended = old_status.completion_time.value_or(c->last_transition_time);
  if (now - ended > kRetellEndFor) return;
  d.events.push_back({failed, c->reason, c->message, /*once=*/"end"});
}

bool HasFinalizer(const json& pod, std::string_view finalizer) {
  const json& meta = pod["metadata"];
  auto it = meta.find("finalizers");
  if (it == meta.end() || !it->is_array()) return false;
  return std::any_of(it->begin(), it->end(), [&](const json& f) { return f.is_string() && f == finalizer; });
}

}  // namespace

void PlanKind::DeleteReplica(const ReplicaKey& key, std::vector<ApiAction>& deletions) const {
  deletions.push_back({ApiActionKind::kDeletePod, ReplicaName(key), json(), "SuccessfulDeletePod"});
}

Plan PlanReplicas(const PlanKind& kind, const json& job_obj, const std::vector<json>& pods,
                  const Pending& pending, int64_t now, const BuildOptions& opts) {
  const DistributedJob& job = kind.Job();
  const std::string uid = MetadataString(job_obj, "uid");

  std::vector<ReplicaObservation> observed;
  std::map<ReplicaKey, ReplicaExit> failures;
  std::set<std::string> seen;
  std::vector<const json*> ours;
  for (const auto& pod : pods) {
    if (!ControlledBy(pod, uid)) continue;
    auto o = ObservePod(pod, kind.Labels());
    if (!o) continue;
    const std::string name = MetadataString(pod, "name");
    if (name != kind.ReplicaName(o->key)) continue;  // not a name we would give
    seen.insert(name);
    ours.push_back(&pod);
    if (pending.deleting.count(name)) o->deleting = true;
    if (auto failure = ObserveFailure(pod, kind.Labels())) failures[o->key] = std::move(*failure);
    observed.push_back(*o);
  }
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i) {
      const ReplicaKey key{type, i};
      const std::string name = kind.ReplicaName(key);
      if (pending.creating.count(name) && !seen.count(name)) {
        ReplicaObservation o;
        o.key = key;
        o.phase = ReplicaPhase::kPending;
        // A queued job's pod is created gated (Kueue's webhook): seen ungated
        // while in flight, it would read as the queue's admission (Queued,
        // then Admitted, then Queued again at the next look).
        o.gated = !job.run_policy.scheduling_policy.queue.empty();
        observed.push_back(o);
      }
    }
  }
  kind.AdjustObserved(observed);

  const JobStatus old_status = kind.OldStatus();
  Decision d = Reconcile(job, old_status, observed, now);
  AddVerdict(old_status, failures, d);
  RetellEnd(old_status, now, d);

  Plan plan;
  plan.requeue_after_seconds = d.requeue_after_seconds;
  plan.state = StateOf(d.status);

  std::vector<ApiAction> prerequisites, creations, deletions;
  const bool wants_pods = !d.status.Finished() && !job.run_policy.suspend;
  if (wants_pods) creations = kind.MissingServices();
  const bool creates_pods = std::any_of(d.actions.begin(), d.actions.end(),
                                        [](const Action& a) { return a.kind == ActionKind::kCreate; });
  if (creates_pods) {
    // What the pods need before they start: the key they mount, and the
    // policy that fences them in.
    if (auto secret = kind.KeySecret()) {
      prerequisites.push_back({ApiActionKind::kCreateKeySecret, KeySecretName(job.name), std::move(*secret),
                               "SuccessfulCreateKeySecret"});
    }
    if (opts.network_policy) {
      prerequisites.push_back({ApiActionKind::kCreateNetworkPolicy, NetworkPolicyName(job.name),
                               kind.NetworkPolicy(), "SuccessfulCreateNetworkPolicy"});
    }
    // The cluster their TF_CONFIG names (ringmaster.io/tf-config:
    // ConfigMap; the kubelet holds back a container whose variable names a
    // ConfigMap that does not exist). Built only here: it is O(N) for a job
    // of N replicas.
    if (auto map = kind.ClusterConfigMap(opts); map.ok() && *map) {
      std::string name = (**map)["metadata"]["name"];
      prerequisites.push_back(
          {ApiActionKind::kCreateConfigMap, std::move(name), std::move(**map), "SuccessfulCreateConfigMap"});
    }
    // The gang the pods point at (the scheduler holds them until it exists).
    for (json& object : kind.GangObjects(opts.gang_api)) {
      const std::string reason = "SuccessfulCreate" + object.value("kind", std::string());
      prerequisites.push_back({ApiActionKind::kCreateGangObject, job.name, std::move(object), reason});
    }
  }
  std::vector<JobEvent> build_events;
  for (const Action& a : d.actions) {
    switch (a.kind) {
      case ActionKind::kCreate: {
        auto built = kind.Pod(a.key, opts);
        if (!built.ok()) {
          build_events.push_back({true, "FailedCreatePod", built.status().message()});
          continue;
        }
        build_events.insert(build_events.end(), built->events.begin(), built->events.end());
        creations.push_back({ApiActionKind::kCreatePod, kind.ReplicaName(a.key), std::move(built->pod),
                             "SuccessfulCreatePod"});
        break;
      }
      case ActionKind::kDelete:
        kind.DeleteReplica(a.key, deletions);
        break;
      case ActionKind::kRestart:
        deletions.push_back({ApiActionKind::kDeletePod, kind.ReplicaName(a.key), json(), "RestartingPod"});
        break;
      case ActionKind::kDeleteJob:
        deletions.push_back({ApiActionKind::kDeleteJob, job.name, json(), "TTLExpired"});
        break;
    }
  }
  plan.events = kind.Events(d, old_status, observed);
  plan.events.insert(plan.events.end(), build_events.begin(), build_events.end());

  std::vector<ApiAction> patches = KueuePatches(ours, d.status.Finished());
  plan.status = kind.NewStatus(d, old_status, observed, plan.state, now);
  OrderPlan(plan, std::move(prerequisites), std::move(creations), std::move(patches), std::move(deletions));
  kind.FinishPlan(d, plan);
  return plan;
}

int64_t Generation(const json& job) {
  if (!job.contains("metadata") || !job["metadata"].is_object()) return 0;
  auto it = job["metadata"].find("generation");
  return it != job["metadata"].end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

void OrderPlan(Plan& plan, std::vector<ApiAction> prerequisites, std::vector<ApiAction> creations,
               std::vector<ApiAction> patches, std::vector<ApiAction> deletions) {
  const bool status_first = plan.status && !deletions.empty();
  auto add = [&plan](std::vector<ApiAction> actions, OnFailure on_failure) {
    if (!actions.empty()) plan.steps.push_back({std::move(actions), on_failure});
  };
  auto write_status = [&] { add({{ApiActionKind::kWriteStatus, "", json(), ""}}, OnFailure::kStop); };
  // A once-event (a restart's, the end's) is told again only while its
  // evidence is there (the failed pod, a recent end): one that cannot be
  // delivered stops the plan before the deletions remove it.
  const bool once =
      std::any_of(plan.events.begin(), plan.events.end(), [](const JobEvent& e) { return !e.once.empty(); });
  auto record_events = [&] {
    if (!plan.events.empty())
      add({{ApiActionKind::kRecordEvents, "", json(), ""}}, once ? OnFailure::kStop : OnFailure::kContinue);
  };
  if (status_first) write_status();
  if (status_first || !plan.status) record_events();
  add(std::move(prerequisites), OnFailure::kNoNewPods);
  add(std::move(creations), OnFailure::kContinue);
  add(std::move(patches), OnFailure::kContinue);
  add(std::move(deletions), OnFailure::kContinue);
  if (plan.status && !status_first) {
    write_status();
    record_events();
  }
}

void AddVerdict(const JobStatus& old_status, const std::map<ReplicaKey, ReplicaExit>& failures, Decision& d) {
  Condition* c = NewFailureCondition(old_status, d);
  if (!c) return;
  std::set<ReplicaKey> restarting;
  for (const Action& a : d.actions) {
    if (a.kind == ActionKind::kRestart) restarting.insert(a.key);
  }
  std::vector<ReplicaExit> exits;
  for (const auto& [key, exit] : failures) {  // rank order: chief, then workers by index
    if (c->type == ConditionType::kFailed || restarting.count(key)) exits.push_back(exit);
  }
  auto chosen = ChooseVerdict(exits);
  if (!chosen) return;
  const std::string verdict = FormatVerdict(exits[*chosen]);
  c->message += "; " + verdict;
  d.events.push_back({true, "TerminationMessage", verdict});
}

std::vector<ApiAction> KueuePatches(const std::vector<const json*>& pods, bool finished) {
  std::vector<ApiAction> out;
  for (const json* pod : pods) {
    const json& meta = (*pod)["metadata"];
    const std::string name = MetadataString(*pod, "name");
    const bool deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
    if (deleting) {
      if (HasFinalizer(*pod, kKueueFinalizer)) {
        json patch = {
            {"metadata", {{"$deleteFromPrimitiveList/finalizers", json::array({kKueueFinalizer})}}}};
        out.push_back({ApiActionKind::kPatchPod, name, std::move(patch), "DroppedKueueFinalizer"});
      }
      continue;
    }
    const bool grouped =
        meta.contains("labels") && meta["labels"].is_object() && meta["labels"].contains(kKueuePodGroupLabel);
    if (!finished || !grouped) continue;
    const json annotations = meta.value("annotations", json::object());
    if (annotations.is_object() && annotations.value(kKueueRetriableInGroupAnnotation, "") == "false")
      continue;
    json patch = {{"metadata", {{"annotations", {{kKueueRetriableInGroupAnnotation, "false"}}}}}};
    out.push_back({ApiActionKind::kPatchPod, name, std::move(patch), "FinishedKueueGroup"});
  }
  return out;
}

}  // namespace ringmaster::op
