// Internal: the GPUs of the allocations one call's tensors lie in, as found
// so far (pure; cuda_backend.cc fills it). CUDA answers "which GPU holds this
// pointer" per pointer, and a call of many tensors carved from a few buffers
// (a framework's allocator, a model's parameters) would ask once per tensor;
// with the allocation's range from the driver, one answer places every
// tensor inside it. Kept for one call only: the caller holds its buffers
// until the call ends, so no range can be freed and reused meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ringmaster::internal::gpu {

class PointerPlaces {
 public:
  // At most this many allocations are remembered; past it every new one is
  // asked about per tensor, as without the cache.
  static constexpr size_t kMaxRanges = 256;

  // The GPU of the allocation that holds `p`, if one seen so far does.
  std::optional<int> Find(const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    if (last_ < ranges_.size() && ranges_[last_].Holds(a)) return ranges_[last_].device;
    for (size_t i = 0; i < ranges_.size(); ++i) {
      if (ranges_[i].Holds(a)) {
        last_ = i;
        return ranges_[i].device;
      }
    }
    return std::nullopt;
  }
  // Device memory [base, base + bytes) of GPU `device` (nothing when empty).
  void Add(uintptr_t base, size_t bytes, int device) {
    if (bytes == 0 || ranges_.size() >= kMaxRanges || base + bytes < base) return;
    ranges_.push_back({base, base + bytes, device});
    last_ = ranges_.size() - 1;
  }
  size_t size() const { return ranges_.size(); }

 private:
  struct Range {
    uintptr_t begin, end;
    int device;
    bool Holds(uintptr_t a) const { return a >= begin && a < end; }
  };
  std::vector<Range> ranges_;
  size_t last_ = 0;
};

}  // namespace ringmaster::internal::gpu
