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
      if (alone && static_cast<int64_t>(t.bytes()) > bytes_per_pack && bytes_per_pack > 0) {
        const size_t count = static_cast<size_t>(t.count);
        const size_t slices = std::min(count, (t.bytes() + static_cast<size_t>(bytes_per_pack) - 1) /
                                                  static_cast<size_t>(bytes_per_pack));
        size_t first = 0;
        for (size_t k = 0; k < slices; ++k) {
          const size_t n = count / slices + (k < count % slices ? 1 : 0);
          packs.push_back(Pack{dt, {i}, n, n * DataTypeSize(dt), first});
          first += n;
        }
        open = false;  // nothing joins a slice
        continue;
      }
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
