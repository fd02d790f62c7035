// A DistributedJob's status to and from its JSON (status_json.h).
#include "status_json.h"

#include "status_fields.h"
#include "time_util.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

int IntField(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int>() : 0;
}

}  // namespace

std::string StateOf(const JobStatus& s) {
  for (ConditionType t : {ConditionType::kSucceeded, ConditionType::kFailed, ConditionType::kSuspended,
                          ConditionType::kQueued, ConditionType::kRecovering, ConditionType::kRestarting,
                          ConditionType::kRunning, ConditionType::kCreated}) {
    if (s.Is(t)) return std::string(ConditionTypeName(t));
  }
  return "";
}

json StatusToJson(const JobStatus& s, int64_t observed_generation) {
  json out = json::object();
  json conditions = json::array();
  for (const auto& c : s.conditions) {
    conditions.push_back({{"type", ConditionTypeName(c.type)},
                          {"status", c.status ? "True" : "False"},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastTransitionTime", FormatRfc3339(c.last_transition_time)}});
  }
  out["conditions"] = std::move(conditions);
  json replicas = json::object();
  for (const auto& [type, counts] : s.replica_statuses) {
    replicas[std::string(ReplicaTypeName(type))] = {
        {"active", counts.active}, {"succeeded", counts.succeeded}, {"failed", counts.failed}};
  }
  out["replicaStatuses"] = std::move(replicas);
  if (s.start_time) out["startTime"] = FormatRfc3339(*s.start_time);
  if (s.completion_time) out["completionTime"] = FormatRfc3339(*s.completion_time);
  out["restartCount"] = s.restart_count;
  out["workersWanted"] = s.workers_wanted;
  out["workersActive"] = s.workers_active;
  // Both in one for kubectl get's column (a printer column is one JSONPath).
  out["workers"] = std::to_string(s.workers_active) + "/" + std::to_string(s.workers_wanted);
  if (!s.replacements.empty()) out["replacements"] = ReplacementsToJson(s.replacements);
  if (!s.counted_failures.empty()) out["countedFailures"] = CountedFailuresToJson(s.counted_failures);
  out["observedGeneration"] = observed_generation;
  out["state"] = StateOf(s);
  return out;
}

JobStatus StatusFromJson(const json& in) {
  JobStatus s;
  if (!in.is_object()) return s;
  for (auto& [c, cond] : KnownConditions(in)) {
    cond.status = c->value("status", "") == "True";
    cond.reason = c->value("reason", "");
    cond.message = c->value("message", "");
    s.conditions.push_back(std::move(cond));
  }
  if (auto it = in.find("replicaStatuses"); it != in.end() && it->is_object()) {
    for (const auto& [name, counts] : it->items()) {
      auto type = ParseReplicaType(name);
      if (!type || !counts.is_object()) continue;
      s.replica_statuses[*type] = {IntField(counts, "active"), IntField(counts, "succeeded"),
                                   IntField(counts, "failed")};
    }
  }
  s.start_time = TimeField(in, "startTime");
  s.completion_time = TimeField(in, "completionTime");
  s.restart_count = IntField(in, "restartCount");
  s.workers_wanted = IntField(in, "workersWanted");
  s.workers_active = IntField(in, "workersActive");
  s.replacements = ReplacementsFromJson(in);
  s.counted_failures = CountedFailuresFromJson(in);
  return s;
}

}  // namespace ringmaster::op
