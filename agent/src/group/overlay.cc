#include "group/overlay.h"

#include <algorithm>

namespace ringmaster::internal {

std::vector<int> Fingers(int rank, int size) {
  std::vector<int> out;
  for (long step = 1; step < size; step *= 2) {
    out.push_back(static_cast<int>((rank + step) % size));
    out.push_back(static_cast<int>(((rank - step) % size + size) % size));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove(out.begin(), out.end(), rank), out.end());
  return out;
}

bool FloodSeen::FirstSight(int origin, uint32_t id, int from) {
  if (origin < 0 || origin >= static_cast<int>(last_.size()) || id <= last_[origin]) return false;
  last_[origin] = id;
  back_[origin] = from;
  return true;
}

int FloodSeen::WayBack(int origin, uint32_t id) const {
  if (origin < 0 || origin >= static_cast<int>(last_.size()) || last_[origin] != id) return -1;
  return back_[origin];
}

}  // namespace ringmaster::internal
