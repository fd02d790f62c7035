// One collective as the flight recorder (flight_recorder_ring.h) keeps it
// and the timeline (timeline.h) writes it: its kind and shape, where this
// member stands with it, whom it heard from, when it ran. Below both, so
// the recorder can feed the timeline without the timeline including it.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "collectives/op_info.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

// Where a member stands with one collective.
enum class Progress : uint8_t { kUnknown, kNeverEntered, kQueued, kRunning, kFinished, kFailed };
const char* ProgressName(Progress p);

// The ranks a collective heard from, in fixed memory for any group size: how
// many, and the lowest kKept of them. A ring hears from one peer, recursive
// doubling and halving-doubling from log2 N, so up to N = 2^kKept every rank
// a tree or ring algorithm heard from is kept; an all-to-all at large N keeps
// its count and the lowest ranks. 64 bytes, like a cache line.
struct HeardRanks {
  static constexpr int kKept = 15;
  uint32_t count = 0;                   // distinct ranks heard from
  std::array<int32_t, kKept> lowest{};  // the lowest min(count, kKept), ascending

  // Adds `rank`, which must not have been added before.
  void Add(int rank);
  int kept() const { return count < kKept ? static_cast<int>(count) : kKept; }
  bool Holds(int rank) const;  // among the kept ones
  // From a bit mask (bit r: rank r), for tests of small groups.
  static HeardRanks FromMask(uint64_t mask);
  // From distinct ranks in any order, as Transport::HeardFrom gives them.
  static HeardRanks FromRanks(std::span<const int> ranks);
};

struct FlightEntry {
  uint64_t seq = 0;  // 0: empty
  OpInfo info;
  Progress progress = Progress::kQueued;
  StatusCode outcome = StatusCode::kOk;
  HeardRanks heard_from;  // the ranks a message came from
  int64_t start_unix_us = 0, end_unix_us = 0;
};

}  // namespace ringmaster::internal
