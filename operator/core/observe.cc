#include "observe.h"

#include <algorithm>
#include <charconv>

#include "names.h"
#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;

std::optional<ReplicaObservation> ObservePod(const json& pod, const ReplicaLabels& replica_labels) {
  if (!pod.is_object() || !pod.contains("metadata")) return std::nullopt;
  const json& meta = pod["metadata"];
  if (!meta.contains("labels") || !meta["labels"].is_object()) return std::nullopt;
  const json& labels = meta["labels"];
  auto type_it = labels.find(replica_labels.replica_type);
  auto index_it = labels.find(replica_labels.replica_index);
  if (type_it == labels.end() || index_it == labels.end() || !type_it->is_string() || !index_it->is_string())
    return std::nullopt;
  auto type = ParseReplicaType(type_it->get<std::string>());
  const std::string index_text = index_it->get<std::string>();
  int index = -1;
  auto [ptr, ec] = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
  if (!type || ec != std::errc() || ptr != index_text.data() + index_text.size() || index < 0)
    return std::nullopt;

  ReplicaObservation o;
  o.key = {*type, index};
  o.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  if (auto uid = meta.find("uid"); uid != meta.end() && uid->is_string()) o.uid = uid->get<std::string>();
  const json empty = json::object();
  const json& status = pod.contains("status") && pod["status"].is_object() ? pod["status"] : empty;
  // Kueue stops a preempted or evicted group's pods: it marks them, then
  // deletes them. Marked, a pod is already on its way out, and its exit is
  // no failure of the job; the mark tells the queue's deletions from the
  // job's own (job_state's Queued).
  if (auto conds = status.find("conditions"); conds != status.end() && conds->is_array()) {
    for (const auto& c : *conds) {
      if (c.is_object() && c.value("type", "") == kKueueTerminationTargetCondition &&
          c.value("status", "") == "True")
        o.deleting = o.evicted = true;
    }
  }
  const std::string phase = status.value("phase", "Pending");
  if (phase == "Running") {
    o.phase = ReplicaPhase::kRunning;
  } else if (phase == "Succeeded") {
    o.phase = ReplicaPhase::kSucceeded;
  } else if (phase == "Failed") {
    o.phase = ReplicaPhase::kFailed;
  } else {
    o.phase = ReplicaPhase::kPending;  // Pending, Unknown
  }
  std::optional<int> first_exit, first_nonzero;
  if (auto it = status.find("containerStatuses"); it != status.end() && it->is_array()) {
    for (const auto& cs : *it) {
      if (!cs.is_object()) continue;
      if (cs.contains("restartCount") && cs["restartCount"].is_number_integer())
        o.restarts += cs["restartCount"].get<int>();
      if (!cs.contains("state") || !cs["state"].is_object()) continue;
      const json& state = cs["state"];
      if (!state.contains("terminated") || !state["terminated"].is_object()) continue;
      const json& term = state["terminated"];
      if (!term.contains("exitCode") || !term["exitCode"].is_number_integer()) continue;
      int code = term["exitCode"].get<int>();
      if (!first_exit) first_exit = code;
      if (code != 0 && !first_nonzero) first_nonzero = code;
    }
  }
  if (const auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    // Kueue's admission gate only: another gate (a user's, another
    // scheduler's) holds the pod back, but says nothing of the queue.
    const auto gates = spec->find("schedulingGates");
    o.gated = gates != spec->end() && gates->is_array() &&
              std::any_of(gates->begin(), gates->end(), [](const json& g) {
                const auto name = g.is_object() ? g.find("name") : g.end();
                return name != g.end() && name->is_string() && *name == kKueueAdmissionGate;
              });
  }
  o.exit_code = first_nonzero.value_or(first_exit.value_or(0));
  if (o.phase == ReplicaPhase::kFailed && !first_nonzero && !first_exit) o.exit_code = 1;
  return o;
}

std::optional<ReplicaExit> ObserveFailure(const json& pod, const ReplicaLabels& labels) {
  auto o = ObservePod(pod, labels);
  if (!o) return std::nullopt;
  auto status = pod.find("status");
  if (status == pod.end() || !status->is_object()) return std::nullopt;
  auto statuses = status->find("containerStatuses");
  if (statuses == status->end() || !statuses->is_array()) return std::nullopt;
  std::optional<ReplicaExit> first, with_message;
  for (const auto& cs : *statuses) {
    if (!cs.is_object()) continue;
    for (const char* which : {"state", "lastState"}) {
      auto st = cs.find(which);
      if (st == cs.end() || !st->is_object()) continue;
      auto term = st->find("terminated");
      if (term == st->end() || !term->is_object()) continue;
      auto code = term->find("exitCode");
      if (code == term->end() || !code->is_number_integer() || code->get<int>() == 0) continue;
      ReplicaExit e;
      e.replica = o->key.Name();
      e.exit_code = code->get<int>();
      if (auto m = term->find("message"); m != term->end() && m->is_string())
        e.message = m->get<std::string>();
      if (auto f = term->find("finishedAt"); f != term->end() && f->is_string()) {
        e.finished = ParseRfc3339(f->get<std::string>()).value_or(0);
      }
      if (!first) first = e;
      if (!with_message && ChooseVerdict({e})) with_message = e;
      break;  // the current state is the newer one
    }
  }
  return with_message ? with_message : first;
}

std::string MetadataString(const nlohmann::json& obj, const char* field) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  auto it = obj["metadata"].find(field);
  return it != obj["metadata"].end() && it->is_string() ? it->get<std::string>() : "";
}

bool ControlledBy(const json& object, const std::string& uid) {
  if (uid.empty() || !object.is_object() || !object.contains("metadata") || !object["metadata"].is_object())
    return false;
  auto refs = object["metadata"].find("ownerReferences");
  if (refs == object["metadata"].end() || !refs->is_array()) return false;
  for (const auto& ref : *refs) {
    if (ref.is_object() && ref.value("controller", false)) return ref.value("uid", "") == uid;
  }
  return false;
}

std::string JobKeyOf(const json& object, const char* job_label) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) return "";
  const json& meta = object["metadata"];
  auto labels = meta.find("labels");
  if (labels == meta.end() || !labels->is_object()) return "";
  auto it = labels->find(job_label);
  if (it == labels->end() || !it->is_string()) return "";
  return ObjectKey(MetadataString(object, "namespace"), it->get<std::string>());
}

}  // namespace ringmaster::op
