// What the state machine needs to know of a pod, read from the pod object.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ringmaster/job_state.h"

namespace ringmaster::op {

// nullopt for a pod without our replica labels (not one of the job's).
// The exit code is the first non-zero one of a terminated container (or the
// first terminated one's); restarts are the kubelet's, summed over containers.
std::optional<ReplicaObservation> ObservePod(const nlohmann::json& pod);

// metadata.<field> of any object; "" where it is absent or not a string
// (objects from the API server are trusted for shape, not for content).
std::string MetadataString(const nlohmann::json& obj, const char* field);

}  // namespace ringmaster::op
