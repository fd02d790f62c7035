#include "collectives/packing.h"

#include <algorithm>

namespace ringmaster::internal {

int64_t AutoBytesPerPack(size_t total_bytes, int streams) {
  int64_t target = static_cast<int64_t>(total_bytes) / (2 * std::max(1, streams));
  return std::clamp<int64_t>(target, kMinAutoPack, kMaxAutoPack);
}

std::vector<Pack> PlanPacks(std::span<const Tensor> tensors, int64_t bytes_per_pack, int64_t alone_from) {
  std::vector<DataType> order;
  for (const auto& t : tensors) {
    if (t.count > 0 && std::find(order.begin(), order.end(), t.dtype) == order.end())
      order.push_back(t.dtype);
  }
  std::vector<Pack> packs;
  for (DataType dt : order) {
    bool open = false;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      if (t.count <= 0 || t.dtype != dt) continue;
      const bool alone = alone_from > 0 && static_cast<int64_t>(t.bytes()) >= alone_from;
      if (!open || alone || static_cast<int64_t>(packs.back().bytes) > bytes_per_pack) {
        packs.push_back(Pack{dt, {}, 0, 0});
        open = true;
      }
      Pack& p = packs.back();
      p.tensors.push_back(i);
      p.count += static_cast<size_t>(t.count);
      p.bytes += t.bytes();
      if (alone) open = false;  // nothing joins it
    }
  }
  return packs;
}

}  // namespace ringmaster::internal
