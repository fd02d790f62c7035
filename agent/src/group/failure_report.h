// Where a failure is reported besides the caller's status, and the writing
// of it: the stderr line and the flight recorder's dump, one JSON file per
// member, and the container's termination message. The group (group.h)
// reports through it once it is formed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "group/flight_entry.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

struct FailureReport {
  std::string flight_dir;       // RINGMASTER_FLIGHT_RECORDER_DIR: one JSON file per member
  std::string termination_log;  // RINGMASTER_TERMINATION_LOG, else /dev/termination-log if present
  size_t stderr_entries = 32;   // entries of the dump printed on stderr (the file has all)
  bool print = true;            // the stderr line and dump
};

// Reports `cause` as `rep` says, for member `rank` (named `task`) of a group
// of `size`, with the flight recorder's `entries`. Best effort: a file that
// cannot be written is said on stderr (when printing), never an error.
void WriteFailureReport(const FailureReport& rep, const std::string& task, int rank, int size,
                        const Status& cause, const std::vector<FlightEntry>& entries);

}  // namespace ringmaster::internal
