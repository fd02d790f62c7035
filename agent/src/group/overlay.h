// The control plane's sparse overlay (docs/agent.md, "Connections at
// scale"): member r's fingers are r ± 2^k (mod n) for 2^k < n, at most
// 2⌈log2 n⌉ peers, the same relation seen from either end. The graph's
// diameter is ⌈log2 n⌉ (walk the binary digits of the distance), so what one
// member learns reaches everyone in that many hops. Pure.
#pragma once

#include <vector>

namespace ringmaster::internal {

// Member `rank`'s fingers in a group of `size`, ascending, without itself.
std::vector<int> Fingers(int rank, int size);

}  // namespace ringmaster::internal
