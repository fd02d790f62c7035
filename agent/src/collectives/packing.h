// Packing (pure): which tensors travel together as one collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ringmaster/communicator.h"

namespace ringmaster::internal {

struct Pack {
  DataType dtype;
  std::vector<size_t> tensors;  // indices into the call's tensors, in order
  size_t count = 0;             // elements
  size_t bytes = 0;
  size_t first = 0;  // a slice of its one tensor (PlanPacks' alone_from): its first element
};

// The agent's own pack size when bytes_per_pack is 0: enough packs that the
// streams overlap, each big enough to amortise per-collective latency.
int64_t AutoBytesPerPack(size_t total_bytes, int streams);
inline constexpr int64_t kMinAutoPack = 1 << 20;
inline constexpr int64_t kMaxAutoPack = 16 << 20;

// TF's group_by_size within each dtype (dtypes in order of first
// appearance): tensors keep their order, and a new pack starts once the
// current one is larger than bytes_per_pack (> 0). Empty tensors need no
// communication and are left out.
// alone_from > 0 (the agent's own packing, bytes_per_pack 0): a tensor of at
// least that many bytes travels in a pack of its own, so no large tensor is
// copied into a staging buffer and back (a pack of one tensor is reduced in
// place); the small ones around it are still grouped. Such a tensor larger
// than bytes_per_pack is cut into that many near-equal slices, each a pack
// of its own, in place, so that one large tensor still spreads over the
// streams (a Dense kernel of 64 MiB alone in a gradient bucket).
std::vector<Pack> PlanPacks(std::span<const Tensor> tensors, int64_t bytes_per_pack, int64_t alone_from = 0);

// The alone_from of the agent's own packing: a tensor this large amortises a
// collective's latency by itself.
inline constexpr int64_t kAloneFromBytes = 1 << 20;

}  // namespace ringmaster::internal
