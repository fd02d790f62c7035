#include "reconcile.h"

#include <algorithm>
#include <map>

#include "names.h"
#include "observe.h"
#include "status_json.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

std::string StringAt(const json& obj, const char* a, const char* b) {
  if (!obj.is_object() || !obj.contains(a) || !obj[a].is_object()) return "";
  const json& inner = obj[a];
  auto it = inner.find(b);
  return it != inner.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t Generation(const json& job) {
  if (!job.contains("metadata") || !job["metadata"].is_object()) return 0;
  auto it = job["metadata"].find("generation");
  return it != job["metadata"].end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// A pod controlled by another object (e.g. an earlier job of the same name)
// is not ours to count.
bool OwnedBy(const json& pod, const std::string& uid) {
  if (uid.empty() || !pod.contains("metadata")) return true;
  const json& meta = pod["metadata"];
  if (!meta.contains("ownerReferences") || !meta["ownerReferences"].is_array()) return true;
  for (const auto& ref : meta["ownerReferences"]) {
    if (ref.is_object() && ref.value("controller", false)) return ref.value("uid", "") == uid;
  }
  return true;
}

std::string PodNameOf(const json& pod) {
  return StringAt(pod, "metadata", "name");
}

Plan InvalidJob(const json& job_obj, const std::vector<FieldError>& errors, int64_t now) {
  Plan plan;
  JobStatus status = StatusFromJson(job_obj.value("status", json::object()));
  std::string message = "invalid spec:";
  for (const auto& e : errors) message += " " + e.path + ": " + e.message + ";";
  if (!status.Is(ConditionType::kFailed)) {
    status.conditions.push_back({ConditionType::kFailed, true, "InvalidSpec", message, now});
    if (!status.completion_time) status.completion_time = now;
    plan.events.push_back({true, "InvalidSpec", message});
    plan.status = StatusToJson(status, Generation(job_obj));
  }
  plan.state = StateOf(status);
  return plan;
}

// The condition this decision just set that a replica's failure explains:
// Failed (not by the job's own deadline) or Restarting. Null when none.
Condition* NewFailureCondition(const JobStatus& old_status, Decision& d) {
  for (auto& c : d.status.conditions) {
    if (!c.status) continue;
    if (c.type == ConditionType::kFailed && !old_status.Is(ConditionType::kFailed) &&
        c.reason != "DeadlineExceeded")
      return &c;
  }
  for (const auto& e : d.events) {
    if (e.reason == "JobRestarting") {
      for (auto& c : d.status.conditions) {
        if (c.type == ConditionType::kRestarting && c.status) return &c;
      }
    }
  }
  return nullptr;
}

// The failed replicas' last words (their termination messages) in the
// condition that their failure set, and as an Event. When it restarts
// replicas, only theirs count; when it fails the job, every failed one.
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

}  // namespace

bool StatusBeforeActions(const Plan& plan) {
  for (const ApiAction& a : plan.actions) {
    if (a.kind == ApiActionKind::kDeletePod || a.kind == ApiActionKind::kDeleteJob) return true;
  }
  return false;
}

Plan PlanJob(const json& job_obj, const std::vector<json>& pods, const json* service, const Pending& pending,
             int64_t now, const BuildOptions& opts) {
  LoadedJob loaded = DecodeJob(job_obj);
  if (!loaded.job) return InvalidJob(job_obj, loaded.errors, now);
  const DistributedJob& job = *loaded.job;
  const std::string uid = StringAt(job_obj, "metadata", "uid");

  std::vector<ReplicaObservation> observed;
  std::map<ReplicaKey, ReplicaExit> failures;
  std::set<std::string> seen;
  for (const auto& pod : pods) {
    if (!OwnedBy(pod, uid)) continue;
    auto o = ObservePod(pod);
    if (!o) continue;
    const std::string name = PodNameOf(pod);
    if (name != PodName(job.name, o->key)) continue;  // not a name we would give
    seen.insert(name);
    if (pending.deleting.count(name)) o->deleting = true;
    if (auto failure = ObserveFailure(pod)) failures[o->key] = std::move(*failure);
    observed.push_back(*o);
  }
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i) {
      const ReplicaKey key{type, i};
      const std::string name = PodName(job.name, key);
      if (pending.creating.count(name) && !seen.count(name)) {
        ReplicaObservation o;
        o.key = key;
        o.phase = ReplicaPhase::kPending;
        observed.push_back(o);
      }
    }
  }

  const json empty = json::object();
  const json& status_obj = job_obj.contains("status") ? job_obj["status"] : empty;
  const JobStatus old_status = StatusFromJson(status_obj);
  Decision d = Reconcile(job, old_status, observed, now);
  AddVerdict(old_status, failures, d);

  Plan plan;
  plan.events = d.events;
  plan.requeue_after_seconds = d.requeue_after_seconds;
  plan.state = StateOf(d.status);

  const bool wants_pods = !d.status.Finished() && !job.run_policy.suspend;
  if (service == nullptr && wants_pods) {
    plan.actions.push_back(
        {ApiActionKind::kCreateService, job.name, BuildService(job), "SuccessfulCreateService"});
  }
  const bool creates_pods = std::any_of(d.actions.begin(), d.actions.end(),
                                        [](const Action& a) { return a.kind == ActionKind::kCreate; });
  if (creates_pods) {
    // What the pods need before they start: the key they mount, and the
    // policy that fences them in.
    if (auto secret = BuildKeySecret(job)) {
      plan.actions.push_back({ApiActionKind::kCreateKeySecret, KeySecretName(job.name), std::move(*secret),
                              "SuccessfulCreateKeySecret"});
    }
    if (opts.network_policy) {
      plan.actions.push_back({ApiActionKind::kCreateNetworkPolicy, NetworkPolicyName(job.name),
                              BuildNetworkPolicy(job), "SuccessfulCreateNetworkPolicy"});
    }
  }
  for (const Action& a : d.actions) {
    switch (a.kind) {
      case ActionKind::kCreate: {
        auto built = BuildPod(job, a.key, opts);
        if (!built.ok()) {
          plan.events.push_back({true, "FailedCreatePod", built.status().message()});
          continue;
        }
        plan.events.insert(plan.events.end(), built->events.begin(), built->events.end());
        plan.actions.push_back({ApiActionKind::kCreatePod, PodName(job.name, a.key), std::move(built->pod),
                                "SuccessfulCreatePod"});
        break;
      }
      case ActionKind::kDelete:
        plan.actions.push_back(
            {ApiActionKind::kDeletePod, PodName(job.name, a.key), json(), "SuccessfulDeletePod"});
        break;
      case ActionKind::kRestart:
        plan.actions.push_back(
            {ApiActionKind::kDeletePod, PodName(job.name, a.key), json(), "RestartingPod"});
        break;
      case ActionKind::kDeleteJob:
        plan.actions.push_back({ApiActionKind::kDeleteJob, job.name, json(), "TTLExpired"});
        break;
    }
  }

  const int64_t generation = Generation(job_obj);
  const bool same_generation =
      status_obj.is_object() && status_obj.value("observedGeneration", int64_t{-1}) == generation;
  if (!(d.status == old_status) || !same_generation || !status_obj.is_object() ||
      status_obj.value("state", "") != plan.state) {
    plan.status = StatusToJson(d.status, generation);
  }
  return plan;
}

}  // namespace ringmaster::op
