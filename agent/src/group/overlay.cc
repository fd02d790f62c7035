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

}  // namespace ringmaster::internal
