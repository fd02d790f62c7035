// Internal: the pure decisions of the batched copy (batched_copy.h): which
// items go through the kernel and which as their own cudaMemcpyAsync, how the
// kernel's items are split into launches (RmBatchedCopyParams, at most
// RM_BATCHED_COPY_MAX_ITEMS each, with their blocks) or put in one table cut
// into chunks (the table form), and which embedded image to load for a
// device. No CUDA calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpu/batched_copy_params.h"
#include "gpu/kernels/embedded_image.h"

namespace ringmaster::internal {

// One device-to-device copy.
struct CopyItem {
  void* dst;
  const void* src;
  size_t bytes;
};

// Bytes one block copies per pass (256 threads x four 16-byte words); an
// item gets one block per this many bytes, at most kMaxBlocksPerItem (the
// blocks of a bigger item loop over it).
inline constexpr size_t kBytesPerBlock = size_t{RM_BATCHED_COPY_THREADS} * 16 * 4;
inline constexpr unsigned kMaxBlocksPerItem = 1024;
// Items from this size go as their own cudaMemcpyAsync: such a copy takes
// 40 us or more at an H200's 1.5 TB/s, so its own call (about 4 us) costs
// little, and CUDA's copy reaches full bandwidth whatever the kernel does.
inline constexpr size_t kDirectCopyMinBytes = size_t{64} << 20;
// The same for items whose addresses allow only 1- or 2-byte words (dst and
// src differ in their low bits): the kernel's narrow loads are slow there.
inline constexpr size_t kDirectNarrowCopyMinBytes = size_t{1} << 20;

struct CopyLaunch {
  RmBatchedCopyParams params;  // what args[0] of cudaLaunchKernel points to
  unsigned grid;               // blocks: params.block_end[params.count - 1]
  size_t first_item;           // index in the caller's items of params' item 0 (for errors)
};

struct CopyPlan {
  std::vector<CopyLaunch> launches;  // in the items' order
  std::vector<size_t> direct;        // indices of the items copied with cudaMemcpyAsync
};

// Where a batched copy's items lie: both on the device (packing), or one end
// in pinned host memory (host staging), which the kernel reaches through
// unified addressing (memory from cudaHostAlloc is device-accessible at the
// same address on every GPU that has it).
enum class CopyEnds { kDeviceToDevice, kDeviceToHost, kHostToDevice };
// Items with a host end from this size go as their own cudaMemcpyAsync (one
// DMA over PCIe, whose few microseconds a call are small beside the
// transfer); so do those whose addresses allow only 1- or 2-byte words.
inline constexpr size_t kDirectHostCopyMinBytes = size_t{256} << 10;

// The word the kernel copies dst..src with: 16, 8, 4, 2 or 1 bytes.
unsigned CopyWordBytes(const void* dst, const void* src);
// Blocks the kernel gives an item of `bytes` (> 0).
unsigned BlocksForItem(size_t bytes);
// Whether the item goes as its own cudaMemcpyAsync (above).
bool CopiesDirectly(const CopyItem& item, CopyEnds ends = CopyEnds::kDeviceToDevice);
// The plan for `items` (zero-byte items are left out). With `kernel` false
// every item is direct (the fallback).
CopyPlan PlanBatchedCopy(std::span<const CopyItem> items, bool kernel = true,
                         CopyEnds ends = CopyEnds::kDeviceToDevice);

// The table form: every kernel item in one table for one launch, cut into
// chunks of `chunk_bytes` that one warp each copies (batched_copy_params.h).
// Chunks of 8 KiB give each lane sixteen 16-byte words (four loads in flight,
// four times) for two dependent loads of the table.
inline constexpr unsigned kChunkBytes = 8192;
// The table form's largest grid; its warps loop over the chunks past it.
inline constexpr unsigned kMaxTableGrid = 1u << 16;
struct CopyTablePlan {
  std::vector<RmBatchedCopyItem> items;  // first_chunk: the chunks of the items before
  std::vector<unsigned> chunks;          // per chunk, its item's index in `items`
  unsigned chunk_bytes = kChunkBytes;
  unsigned grid = 0;           // blocks: a warp a chunk, at most kMaxTableGrid
  std::vector<size_t> direct;  // indices of the items copied with cudaMemcpyAsync
  // The upload: the items, then the chunks from the next 16-byte boundary.
  size_t ChunksAt() const { return items.size() * sizeof(RmBatchedCopyItem); }
  size_t Bytes() const { return ChunksAt() + (chunks.size() * sizeof(unsigned) + 15) / 16 * 16; }
};
// The table form's largest upload (items and chunks): past it, copies go by value.
inline constexpr size_t kMaxTableBytes = size_t{64} << 20;
// `chunk_bytes` must be a positive multiple of 16.
CopyTablePlan PlanBatchedCopyTable(std::span<const CopyItem> items, unsigned chunk_bytes = kChunkBytes,
                                   CopyEnds ends = CopyEnds::kDeviceToDevice);
// The same into `plan`, whose buffers are kept (a caller's scratch, call after call).
void PlanBatchedCopyTable(std::span<const CopyItem> items, unsigned chunk_bytes, CopyEnds ends,
                          CopyTablePlan& plan);
// The most the uploads of BatchedCopy calls take that copy `items` items of
// `bytes` bytes in all (each upload 16-byte aligned).
size_t TableBytesFor(size_t items, size_t bytes, unsigned chunk_bytes = kChunkBytes);

// The images worth trying on a device of compute capability major.minor, best
// first: cubins of the same major and a minor no newer than the device's
// (newest first), then PTX no newer than the device (the driver compiles it).
std::vector<const EmbeddedKernelImage*> ImagesToTry(std::span<const EmbeddedKernelImage> images, int cc_major,
                                                    int cc_minor);

}  // namespace ringmaster::internal
