// `ringmaster flight-recorder`: reads the dumps the agent writes when its
// group aborts (one JSON line per member, its last collectives) and shows
// the members side by side, so the one that never entered a collective
// stands out. Pure: parsing and rendering; the command reads the files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/status.h"

namespace ringmaster::cli {

// One collective as one member saw it.
struct FlightEntry {
  int64_t seq = 0;
  std::string kind;  // all-reduce, broadcast, all-gather, barrier, gpu-all-reduce
  int pack = 0, packs = 1;
  std::string dtype;
  int64_t bytes = 0;
  std::string algorithm;        // "" for all but all-reduce
  std::vector<int> heard_from;  // the lowest ranks it heard from in it
  int64_t heard_from_more = 0;  // how many more (an all-to-all at large N)
  int64_t start_unix_us = 0;
  std::optional<int64_t> end_unix_us;
  std::string outcome;  // ok, running, queued, or a status code name
};

// One member's dump.
struct FlightDump {
  std::string source;  // the file it came from, for messages
  std::string task;    // "/job:worker/task:0"
  int rank = 0, size = 0;
  int64_t pid = 0;
  std::string cause_code, cause_message;
  int64_t dumped_unix_us = 0;
  std::vector<FlightEntry> entries;  // oldest first
};

// One dump file's text (one JSON object, format 1). InvalidArgument naming
// `source` and what is wrong (the field's path, e.g. "entries[2].seq").
StatusOr<FlightDump> ParseFlightDump(std::string_view text, const std::string& source);

// The members side by side, ordered by rank: a header line per member
// (rank, task, pid, cause), a table of the last `last` sequence numbers any
// member recorded (one column per member: its outcome, "-" when it never
// entered that collective, "?" when its recorder no longer holds it), a
// line naming the members that never entered the highest one, and, for the
// members still in it, whom each had heard from there.
// InvalidArgument when two dumps claim one rank or disagree on the size.
StatusOr<std::string> RenderFlightDumps(std::vector<FlightDump> dumps, size_t last);

}  // namespace ringmaster::cli
