// A member's progress report (flight_recorder_ring.h) in and out of the
// control frame that carries it (transport/wire.h, kProgressReport): the
// answers of the diagnosis, which the group (group.h) floods back.
#pragma once

#include "group/flight_recorder_ring.h"
#include "transport/wire.h"

namespace ringmaster::internal {

// Member `from`'s answer `r` to question `q`, addressed to its asker.
ProgressReportWire ProgressToWire(const ProgressReport& r, const ProgressQueryWire& q, int from);
// The report a frame carries; a progress, kind or type this build does not
// know reads as kUnknown, all-reduce and float32.
ProgressReport ProgressFromWire(const ProgressReportWire& w);

}  // namespace ringmaster::internal
