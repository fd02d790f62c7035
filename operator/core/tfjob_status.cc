// A TFJob's status in Kubeflow's form, to and from the state machine's (tfjob_status.h).
#include "tfjob_status.h"

#include <algorithm>

#include "status_fields.h"
#include "status_json.h"
#include "tfjob_objects.h"
#include "time_util.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

// The state machine's reasons that training-operator has under another name.
struct ReasonPair {
  const char* ours;
  const char* kubeflow;
};
constexpr ReasonPair kReasons[] = {
    {"JobCreated", "TFJobCreated"},           {"JobRunning", "TFJobRunning"},
    {"JobRestarting", "TFJobRestarting"},     {"JobSucceeded", "TFJobSucceeded"},
    {"JobSuspended", "TFJobSuspended"},       {"JobResumed", "TFJobResumed"},
    {"InvalidSpec", "TFJobFailedValidation"},
};
// Why a job fails; training-operator says TFJobFailed for each (the message
// says which).
constexpr const char* kFailureReasons[] = {"ReplicaFailed", "BackoffLimitExceeded", "DeadlineExceeded",
                                           "ScheduleTimeout", "ReplacementTimeout"};

std::string ReasonFromKubeflow(const std::string& reason) {
  for (const auto& r : kReasons) {
    if (reason == r.kubeflow) return r.ours;
  }
  return reason;
}

std::string Namespaced(const TfJob& tfjob) {
  return (tfjob.job.namespace_.empty() ? std::string("default") : tfjob.job.namespace_) + "/" +
         tfjob.job.name;
}

std::string_view SpecKey(const TfJob& tfjob, ReplicaType type) {
  if (type == ReplicaType::kChief && tfjob.chief_is_master) return "Master";
  return ReplicaTypeName(type);
}

}  // namespace

std::string TfJobMessage(const TfJob& tfjob, const std::string& reason, const std::string& message) {
  const std::string& name = tfjob.job.name;
  if (reason == "JobCreated") return "TFJob " + name + " is created.";
  if (reason == "JobRunning") return "TFJob " + Namespaced(tfjob) + " is running.";
  if (reason == "JobSucceeded") return "TFJob " + Namespaced(tfjob) + " successfully completed.";
  if (reason == "JobSuspended") return "TFJob " + name + " is suspended.";
  if (reason == "JobResumed") return "TFJob " + name + " is resumed.";
  return message;
}

std::string TfJobReason(ConditionType, const std::string& reason) {
  for (const auto& r : kReasons) {
    if (reason == r.ours) return r.kubeflow;
  }
  for (const char* f : kFailureReasons) {
    if (reason == f) return "TFJobFailed";
  }
  return reason;
}

json TfJobStatusToJson(const TfJob& tfjob, const JobStatus& s,
                       const std::vector<ReplicaObservation>& observed,
                       std::optional<int64_t> last_reconcile) {
  json out = json::object();
  // In the order they last changed, as training-operator moves a condition
  // it sets to the end: the last is what `kubectl get tfjob` shows (State:
  // the last one's type).
  std::vector<const Condition*> order;
  for (const auto& c : s.conditions) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const Condition* a, const Condition* b) {
    return a->last_transition_time < b->last_transition_time;
  });
  json conditions = json::array();
  for (const Condition* c : order) {
    // training-operator keeps Running and Restarting apart: setting one
    // removes the other; a job that ends turns Running False and leaves
    // its reason.
    if (c->type == ConditionType::kRestarting && !c->status) continue;
    if (c->type == ConditionType::kRunning && s.Is(ConditionType::kRestarting)) continue;
    std::string reason = c->reason;
    if (c->type == ConditionType::kRunning && !c->status && reason != "JobSuspended" &&
        reason != "RunningShrunk")
      reason = "JobRunning";
    const std::string at = FormatRfc3339(c->last_transition_time);
    conditions.push_back({{"type", ConditionTypeName(c->type)},
                          {"status", c->status ? "True" : "False"},
                          {"reason", TfJobReason(c->type, reason)},
                          {"message", TfJobMessage(tfjob, reason, c->message)},
                          {"lastUpdateTime", at},
                          {"lastTransitionTime", at}});
  }
  out["conditions"] = std::move(conditions);

  // Counted as training-operator counts: a Running pod is active (failed
  // when it is on its way out: a lost node's pods never reach Failed), a
  // Pending one is nothing yet.
  std::map<ReplicaType, ReplicaCounts> counts;
  for (const auto& [type, spec] : tfjob.job.replica_specs) counts[type] = {};
  for (const auto& o : observed) {
    auto it = counts.find(o.key.type);
    if (it == counts.end()) continue;
    if (o.phase == ReplicaPhase::kRunning) ++(o.deleting ? it->second.failed : it->second.active);
    if (o.phase == ReplicaPhase::kSucceeded) ++it->second.succeeded;
    if (o.phase == ReplicaPhase::kFailed) ++it->second.failed;
  }
  json replicas = json::object();
  for (auto& [type, c] : counts) {
    // A succeeded job's pods still running (cleanPodPolicy None) count as
    // succeeded, as training-operator counts them.
    if (s.Is(ConditionType::kSucceeded)) {
      c.succeeded += c.active;
      c.active = 0;
    }
    // Go's omitempty: a count of 0 is not written.
    json r = json::object();
    if (c.active) r["active"] = c.active;
    if (c.succeeded) r["succeeded"] = c.succeeded;
    if (c.failed) r["failed"] = c.failed;
    r["selector"] = TfJobSelector(tfjob, type);
    replicas[std::string(SpecKey(tfjob, type))] = std::move(r);
  }
  out["replicaStatuses"] = std::move(replicas);
  if (s.start_time) out["startTime"] = FormatRfc3339(*s.start_time);
  if (s.completion_time) out["completionTime"] = FormatRfc3339(*s.completion_time);
  if (last_reconcile) out["lastReconcileTime"] = FormatRfc3339(*last_reconcile);
  // Ringmaster's own state: what the state machine needs back.
  if (s.restart_count > 0) out["restartCount"] = s.restart_count;
  if (!s.replacements.empty()) out["replacements"] = ReplacementsToJson(s.replacements);
  if (!s.counted_failures.empty()) out["countedFailures"] = CountedFailuresToJson(s.counted_failures);
  return out;
}

JobStatus TfJobStatusFromJson(const json& in) {
  JobStatus s;
  if (!in.is_object()) return s;
  for (auto& [c, cond] : KnownConditions(in)) {
    const json status = c->value("status", json());
    cond.status = status == "True";
    const json reason = c->value("reason", json()), message = c->value("message", json());
    cond.reason = ReasonFromKubeflow(reason.is_string() ? reason.get<std::string>() : "");
    cond.message = message.is_string() ? message.get<std::string>() : "";
    // A type written twice (not by us): the last one stands.
    auto same = std::find_if(s.conditions.begin(), s.conditions.end(),
                             [&, type = cond.type](const Condition& o) { return o.type == type; });
    if (same != s.conditions.end()) s.conditions.erase(same);
    s.conditions.push_back(std::move(cond));
  }
  // In the order the state machine adds them (a status of ours keeps it).
  std::stable_sort(s.conditions.begin(), s.conditions.end(), [](const Condition& a, const Condition& b) {
    return a.last_transition_time < b.last_transition_time;
  });
  s.start_time = TimeField(in, "startTime");
  s.completion_time = TimeField(in, "completionTime");
  if (auto it = in.find("restartCount"); it != in.end() && it->is_number_integer())
    s.restart_count = it->get<int>();
  s.replacements = ReplacementsFromJson(in);
  s.counted_failures = CountedFailuresFromJson(in);
  return s;
}

std::string TfJobStateAnnotation(const JobStatus& s) {
  if (s.restart_count == 0 && s.replacements.empty() && s.counted_failures.empty()) return "";
  json state = {{"restartCount", s.restart_count}};
  if (!s.replacements.empty()) state["replacements"] = ReplacementsToJson(s.replacements);
  if (!s.counted_failures.empty()) state["countedFailures"] = CountedFailuresToJson(s.counted_failures);
  return state.dump();
}

void MergeTfJobStateAnnotation(const json& tfjob, JobStatus& s) {
  if (!tfjob.is_object()) return;
  auto meta = tfjob.find("metadata");
  if (meta == tfjob.end() || !meta->is_object()) return;
  auto annotations = meta->find("annotations");
  if (annotations == meta->end() || !annotations->is_object()) return;
  auto it = annotations->find(kTfJobStateAnnotation);
  if (it == annotations->end() || !it->is_string()) return;
  const json state = json::parse(it->get<std::string>(), nullptr, false);
  if (!state.is_object()) return;
  // The same reader as the status's (restartCount, replacements,
  // countedFailures).
  const JobStatus kept = TfJobStatusFromJson(state);
  // The status is written first, the annotation right after: when they
  // differ, the larger count is the newer one.
  if (kept.restart_count > s.restart_count) {
    s.restart_count = kept.restart_count;
    if (s.replacements.empty()) s.replacements = kept.replacements;
    s.counted_failures = kept.counted_failures;
  } else if (kept.restart_count == s.restart_count && s.counted_failures.empty()) {
    s.counted_failures = kept.counted_failures;  // a status whose CRD dropped them
  }
}

json TfJobMetricsStatus(const json& status) {
  if (!status.is_object()) return json();
  json out = {{"state", StateOf(TfJobStatusFromJson(status))}};
  if (auto it = status.find("replacements"); it != status.end()) out["replacements"] = *it;
  return out;
}

bool TfJobStatusChanged(const json& old_status, const json& new_status) {
  if (!old_status.is_object()) return true;
  json a = old_status, b = new_status;
  // Ringmaster's own fields count only through the state annotation, which
  // keeps them: training-operator's CRD drops them from every status
  // written, and comparing them would write the status at every look.
  for (const char* field : {"lastReconcileTime", "restartCount", "replacements", "countedFailures"}) {
    a.erase(field);
    b.erase(field);
  }
  return a != b;
}

}  // namespace ringmaster::op
