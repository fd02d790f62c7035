// The fields both kinds' statuses share (status_json.h: a DistributedJob's,
// tfjob_status.h: a TFJob's), read and written once: condition types, RFC
// 3339 times, and Ringmaster's replacements and counted failures. Tolerant readers: a malformed
// entry is skipped.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/job_state.h"

namespace ringmaster::op {

std::optional<ConditionType> ParseConditionType(const std::string& s);

// obj[key] as an RFC 3339 time; nullopt when absent or not one.
std::optional<int64_t> TimeField(const nlohmann::json& obj, const char* key);

// status.conditions' entries of a known type, in order, each with its
// condition's type and lastTransitionTime read (0 when absent); the rest of
// the condition is the caller's to read from the entry.
std::vector<std::pair<const nlohmann::json*, Condition>> KnownConditions(const nlohmann::json& status);

// replacements: {"worker-1": "<RFC 3339 time it failed>", ...}.
nlohmann::json ReplacementsToJson(const std::map<ReplicaKey, int64_t>& replacements);
// status.replacements, back.
std::map<ReplicaKey, int64_t> ReplacementsFromJson(const nlohmann::json& status);

// countedFailures: {"worker-1": "<the uid of the pod whose failure
// restartCount counted>", ...}.
nlohmann::json CountedFailuresToJson(const std::map<ReplicaKey, std::string>& counted);
// status.countedFailures, back.
std::map<ReplicaKey, std::string> CountedFailuresFromJson(const nlohmann::json& status);

}  // namespace ringmaster::op
