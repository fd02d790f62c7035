// The batched copy's pure decisions: direct items, launches, blocks, images.
#include "gpu/batched_copy_plan.h"

#include <algorithm>
#include <cstring>

#include "gpu/kernels/batched_copy_core.h"

namespace ringmaster::internal {

unsigned CopyWordBytes(const void* dst, const void* src) {
  return static_cast<unsigned>(
      ringmaster_kernels::CopyWord(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src)));
}

unsigned BlocksForItem(size_t bytes) {
  const size_t blocks = (bytes + kBytesPerBlock - 1) / kBytesPerBlock;
  return static_cast<unsigned>(std::clamp<size_t>(blocks, 1, kMaxBlocksPerItem));
}

bool CopiesDirectly(const CopyItem& item, CopyEnds ends) {
  if (ends != CopyEnds::kDeviceToDevice)
    return item.bytes >= kDirectHostCopyMinBytes || CopyWordBytes(item.dst, item.src) < 4;
  if (item.bytes >= kDirectCopyMinBytes) return true;
  return item.bytes >= kDirectNarrowCopyMinBytes && CopyWordBytes(item.dst, item.src) < 4;
}

CopyPlan PlanBatchedCopy(std::span<const CopyItem> items, bool kernel, CopyEnds ends) {
  CopyPlan plan;
  CopyLaunch* open = nullptr;
  for (size_t i = 0; i < items.size(); ++i) {
    const CopyItem& it = items[i];
    if (it.bytes == 0) continue;
    if (!kernel || CopiesDirectly(it, ends)) {
      plan.direct.push_back(i);
      continue;
    }
    if (!open || open->params.count == RM_BATCHED_COPY_MAX_ITEMS) {
      open = &plan.launches.emplace_back();
      std::memset(&open->params, 0, sizeof(open->params));
      open->grid = 0;
      open->first_item = i;
    }
    RmBatchedCopyParams& p = open->params;
    const unsigned k = p.count++;
    p.dst[k] = reinterpret_cast<uintptr_t>(it.dst);
    p.src[k] = reinterpret_cast<uintptr_t>(it.src);
    p.bytes[k] = it.bytes;
    open->grid += BlocksForItem(it.bytes);
    p.block_end[k] = open->grid;
  }
  return plan;
}

void PlanBatchedCopyTable(std::span<const CopyItem> items, unsigned chunk_bytes, CopyEnds ends,
                          CopyTablePlan& plan) {
  plan.chunk_bytes = chunk_bytes;
  plan.items.clear();
  plan.chunks.clear();
  plan.direct.clear();
  // Sized first: a call of many tensors grows nothing item by item.
  size_t kernel_items = 0, chunks = 0;
  for (const CopyItem& it : items) {
    if (it.bytes == 0 || CopiesDirectly(it, ends)) continue;
    ++kernel_items;
    chunks += (it.bytes + chunk_bytes - 1) / chunk_bytes;
  }
  plan.items.reserve(kernel_items);
  plan.chunks.resize(chunks);
  unsigned* next = plan.chunks.data();
  for (size_t i = 0; i < items.size(); ++i) {
    const CopyItem& it = items[i];
    if (it.bytes == 0) continue;
    if (CopiesDirectly(it, ends)) {
      plan.direct.push_back(i);
      continue;
    }
    const auto index = static_cast<unsigned>(plan.items.size());
    const auto first = static_cast<unsigned>(next - plan.chunks.data());
    plan.items.push_back(
        {reinterpret_cast<uintptr_t>(it.dst), reinterpret_cast<uintptr_t>(it.src), it.bytes, first, 0});
    next = std::fill_n(next, (it.bytes + chunk_bytes - 1) / chunk_bytes, index);
  }
  constexpr size_t kWarpsPerBlock = RM_BATCHED_COPY_THREADS / RM_BATCHED_COPY_WARP;
  plan.grid = static_cast<unsigned>(
      std::min<size_t>((plan.chunks.size() + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxTableGrid));
}

CopyTablePlan PlanBatchedCopyTable(std::span<const CopyItem> items, unsigned chunk_bytes, CopyEnds ends) {
  CopyTablePlan plan;
  PlanBatchedCopyTable(items, chunk_bytes, ends, plan);
  return plan;
}

size_t TableBytesFor(size_t items, size_t bytes, unsigned chunk_bytes) {
  // An item's chunks are at most bytes / chunk_bytes + 1; an upload pads its
  // chunks to 16 bytes (12 at most), and it has one item at least.
  return items * (sizeof(RmBatchedCopyItem) + sizeof(unsigned) + 12) + bytes / chunk_bytes * sizeof(unsigned);
}

std::vector<const EmbeddedKernelImage*> ImagesToTry(std::span<const EmbeddedKernelImage> images, int cc_major,
                                                    int cc_minor) {
  const int device = cc_major * 10 + cc_minor;
  std::vector<const EmbeddedKernelImage*> cubins, ptx;
  for (const auto& img : images) {
    if (img.size == 0 || img.data == nullptr) continue;
    if (img.ptx) {
      if (img.arch <= device) ptx.push_back(&img);
    } else if (img.arch / 10 == cc_major && img.arch % 10 <= cc_minor) {
      cubins.push_back(&img);
    }
  }
  auto newest_first = [](const EmbeddedKernelImage* a, const EmbeddedKernelImage* b) {
    return a->arch > b->arch;
  };
  std::stable_sort(cubins.begin(), cubins.end(), newest_first);
  std::stable_sort(ptx.begin(), ptx.end(), newest_first);
  cubins.insert(cubins.end(), ptx.begin(), ptx.end());
  return cubins;
}

}  // namespace ringmaster::internal
