// Internal to the api library: spec.runPolicy of a DistributedJob (its
// limits, recovery, elastic size and scheduling), decoded for DecodeJob.
#pragma once

#include <nlohmann/json.hpp>

#include "decoder.h"
#include "ringmaster/job.h"

namespace ringmaster::internal {

// spec.runPolicy into job.run_policy. After the replica specs: the elastic
// size and minAvailable are bounded by the job's replicas. Also reads the
// job's kueue.x-k8s.io/queue-name label (Kueue's convention).
void DecodeRunPolicy(Decoder& d, const nlohmann::json& spec, DistributedJob& job);

}  // namespace ringmaster::internal
