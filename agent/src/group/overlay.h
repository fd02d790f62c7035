// The control plane's sparse overlay (docs/engine.md, "Connections at
// scale"): member r's fingers are r ± 2^k (mod n) for 2^k < n, at most
// 2⌈log2 n⌉ peers, the same relation seen from either end. The graph's
// diameter is ⌈log2 n⌉ (walk the binary digits of the distance), so what one
// member learns reaches everyone in that many hops. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringmaster::internal {

// Member `rank`'s fingers in a group of `size`, ascending, without itself.
std::vector<int> Fingers(int rank, int size);

// A flood over the fingers (a progress query of the diagnosis; abort frames
// need none of this: a member sends its one abort once, GroupState), seen
// from one member: each origin numbers its floods 1, 2, ... and a member
// passes a flood on only the first time it sees it (so every member sends it
// once to each finger: N x 2⌈log2 N⌉ frames a flood, ⌈log2 N⌉ hops deep),
// and remembers the finger it came from first: the way back to its origin
// along which the answers travel (the reverse of the flood's tree, a path of
// fingers that was alive a moment ago), at most ⌈log2 N⌉ hops too.
class FloodSeen {
 public:
  explicit FloodSeen(int size) : last_(static_cast<size_t>(size), 0), back_(static_cast<size_t>(size), -1) {}
  // Flood `id` of `origin` arrived from finger `from`: true the first time
  // (pass it on to the other fingers, and answer), false for a copy or an
  // older flood (drop it).
  bool FirstSight(int origin, uint32_t id, int from);
  // The finger towards `origin` for the answers to its flood `id`; -1 if
  // that flood is not the latest one seen from it (a late answer: drop).
  int WayBack(int origin, uint32_t id) const;

 private:
  std::vector<uint32_t> last_;
  std::vector<int> back_;
};

}  // namespace ringmaster::internal
