#include "group/flight_entry.h"

#include <algorithm>

namespace ringmaster::internal {

void HeardRanks::Add(int rank) {
  const int held = kept();  // before this one
  ++count;
  int i = held;
  if (held == kKept) {  // full: keep the lowest
    if (rank >= lowest[kKept - 1]) return;
    i = kKept - 1;
  }
  for (; i > 0 && lowest[i - 1] > rank; --i) lowest[i] = lowest[i - 1];
  lowest[i] = rank;
}

HeardRanks HeardRanks::FromRanks(std::span<const int> ranks) {
  HeardRanks h;
  for (int r : ranks) h.Add(r);
  return h;
}

bool HeardRanks::Holds(int rank) const {
  for (int i = 0; i < kept(); ++i)
    if (lowest[i] == rank) return true;
  return false;
}

HeardRanks HeardRanks::FromMask(uint64_t mask) {
  HeardRanks h;
  for (int r = 0; r < 64; ++r)
    if (mask >> r & 1) h.Add(r);
  return h;
}

const char* ProgressName(Progress p) {
  switch (p) {
    case Progress::kUnknown:
      return "unknown";
    case Progress::kNeverEntered:
      return "never-entered";
    case Progress::kQueued:
      return "queued";
    case Progress::kRunning:
      return "running";
    case Progress::kFinished:
      return "ok";
    case Progress::kFailed:
      return "failed";
  }
  return "unknown";
}

}  // namespace ringmaster::internal
