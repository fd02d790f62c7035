#include "bootstrap/random_id.h"

#include <random>

namespace ringmaster::internal {

uint64_t RandomId() {
  std::random_device rd;
  uint64_t v = 0;
  while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return v;
}

}  // namespace ringmaster::internal
