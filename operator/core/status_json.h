// The job's status as the API server stores it (status subresource) and back.
// The JSON follows TFJob's: conditions with "True"/"False", replicaStatuses
// keyed by the spec's replica type, RFC 3339 times. `state` is ours: the
// printer column's one-word summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ringmaster/job_state.h"

namespace ringmaster::op {

nlohmann::json StatusToJson(const JobStatus& status, int64_t observed_generation);
// Tolerant: unknown fields and malformed entries are skipped, so a status
// written by an older operator never blocks reconciling.
JobStatus StatusFromJson(const nlohmann::json& status);
// "Succeeded", "Failed", "Suspended", "Queued", "Recovering", "Restarting",
// "Running", "Created" or "".
std::string StateOf(const JobStatus& status);

}  // namespace ringmaster::op
