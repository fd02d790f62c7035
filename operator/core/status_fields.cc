// The fields both kinds' statuses share (status_fields.h).
#include "status_fields.h"

#include <charconv>

#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;

std::optional<ConditionType> ParseConditionType(const std::string& s) {
  for (ConditionType t : kAllConditionTypes) {
    if (ConditionTypeName(t) == s) return t;
  }
  return std::nullopt;
}

std::optional<int64_t> TimeField(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return std::nullopt;
  return ParseRfc3339(it->get<std::string>());
}

std::vector<std::pair<const json*, Condition>> KnownConditions(const json& in) {
  std::vector<std::pair<const json*, Condition>> out;
  auto it = in.find("conditions");
  if (it == in.end() || !it->is_array()) return out;
  for (const auto& c : *it) {
    if (!c.is_object() || !c.contains("type") || !c["type"].is_string()) continue;
    auto type = ParseConditionType(c["type"].get<std::string>());
    if (!type) continue;
    Condition cond;
    cond.type = *type;
    cond.last_transition_time = TimeField(c, "lastTransitionTime").value_or(0);
    out.emplace_back(&c, std::move(cond));
  }
  return out;
}

namespace {

// "worker-1" back to its key; nullopt when it is not one.
std::optional<ReplicaKey> ParseReplicaName(const std::string& name) {
  const auto dash = name.rfind('-');
  if (dash == std::string::npos) return std::nullopt;
  auto type = ParseReplicaType(name.substr(0, dash));
  const std::string index_text = name.substr(dash + 1);
  int index = -1;
  auto [ptr, ec] = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
  if (!type || ec != std::errc() || ptr != index_text.data() + index_text.size() || index < 0)
    return std::nullopt;
  return ReplicaKey{*type, index};
}

}  // namespace

json ReplacementsToJson(const std::map<ReplicaKey, int64_t>& replacements) {
  json out = json::object();
  for (const auto& [key, since] : replacements) out[key.Name()] = FormatRfc3339(since);
  return out;
}

std::map<ReplicaKey, int64_t> ReplacementsFromJson(const json& in) {
  std::map<ReplicaKey, int64_t> out;
  auto it = in.find("replacements");
  if (it == in.end() || !it->is_object()) return out;
  for (const auto& [name, since] : it->items()) {
    auto key = ParseReplicaName(name);
    auto at = since.is_string() ? ParseRfc3339(since.get<std::string>()) : std::nullopt;
    if (key && at) out[*key] = *at;
  }
  return out;
}

json CountedFailuresToJson(const std::map<ReplicaKey, std::string>& counted) {
  json out = json::object();
  for (const auto& [key, uid] : counted) out[key.Name()] = uid;
  return out;
}

std::map<ReplicaKey, std::string> CountedFailuresFromJson(const json& in) {
  std::map<ReplicaKey, std::string> out;
  auto it = in.find("countedFailures");
  if (it == in.end() || !it->is_object()) return out;
  for (const auto& [name, uid] : it->items()) {
    auto key = ParseReplicaName(name);
    if (key && uid.is_string() && !uid.get<std::string>().empty()) out[*key] = uid.get<std::string>();
  }
  return out;
}

}  // namespace ringmaster::op
