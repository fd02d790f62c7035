// Internal: many device-to-device copies on one stream with one kernel launch
// (the pack and unpack of the GPU backend; host staging's copies to and from
// pinned memory), instead of one cudaMemcpyAsync each: up to RM_BATCHED_COPY_MAX_ITEMS items by value in the
// launch's parameters, more through a table uploaded on the stream first (CopyTable, the caller's buffers).
// The kernels are compiled at build time by NVRTC and embedded (kernels/); it is loaded once per device with
// cudaLibraryLoadData (CUDA 12.0+). Where it cannot be had (a build without NVRTC, an older runtime, no image
// for the device) every item is its own cudaMemcpyAsync; one debug line per device says which. See
// docs/gpu.md.
#pragma once

#include <cuda_runtime_api.h>

#include <span>
#include <string>

#include "gpu/batched_copy_plan.h"
#include "gpu/gpu_api.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

// Queues the copies of `items` on `stream`, a stream of GPU `device`, which
// must be the calling thread's current device. Items must not overlap one
// another; zero-byte items are skipped. Items of kDirectCopyMinBytes or more
// (and narrow-word ones of kDirectNarrowCopyMinBytes or more) go as their own
// cudaMemcpyAsync (batched_copy_plan.h says why). Errors: InvalidArgument for
// a null pointer (naming the item), Internal with CUDA's text and the call.
//
// With `table`, more than RM_BATCHED_COPY_MAX_ITEMS kernel items go in one
// launch of the table form: their table and chunks are written to the pinned
// host buffer, copied to the device buffer on `stream`, then read by the
// kernel. Where
// the table cannot be had (see CopyTable) the items go by value, as without.
//
// `ends` says where the items lie: on the device, or one end in pinned host
// memory (cudaHostAlloc), which the kernel reads or writes in place (unified
// addressing); items with a host end of kDirectHostCopyMinBytes or more go as
// their own cudaMemcpyAsync of that kind, as every item does without the
// kernel.
struct CopyTable;
Status BatchedCopy(const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream, int device,
                   CopyTable* table = nullptr, CopyEnds ends = CopyEnds::kDeviceToDevice);

// The table form's buffers for one GPU and one stream, owned by the caller
// and kept call after call: a pinned host table and its device copy, grown
// to what the largest call has announced (BeginCall: about 36 bytes a copy and
// 4 per chunk of its bytes, TableBytesFor), at most kMaxTableBytes. Within a
// call, each BatchedCopy appends its upload after the previous one's (the
// uploads of one call never overwrite one another before they ran). A call
// whose table would overwrite one that is still queued (an earlier call that
// failed with its work still on the stream) uses no table.
struct CopyTable {
  // The next BatchedCopy calls, until the next BeginCall, copy at most
  // `items` items of `bytes` bytes in all.
  void BeginCall(size_t items, size_t bytes) {
    wanted = TableBytesFor(items, bytes, chunk_bytes);
    used = 0;
    checked = usable = false;
  }
  // Frees the buffers (the device one queued on `stream`, which must be
  // this table's); Destroy the event too. The calling thread's current
  // device must be the table's.
  void Release(const GpuApi& api, cudaStream_t stream);
  void Destroy(const GpuApi& api, cudaStream_t stream);

  unsigned char* host = nullptr;  // pinned (cudaHostAlloc)
  void* device = nullptr;         // cudaMallocAsync on the stream
  size_t capacity = 0;            // bytes both hold
  size_t wanted = 0, used = 0;    // this call's announced bytes, and those written
  bool checked = false, usable = false;
  cudaEvent_t uploaded = nullptr;  // recorded after the latest upload
  // The chunk a warp copies (a positive multiple of 16): kChunkBytes, unless
  // a test or benchmark tries another.
  unsigned chunk_bytes = kChunkBytes;
  // The latest plan: its buffers are reused by the next BatchedCopy.
  CopyTablePlan plan;
};

// The same through one chosen path (tests and benchmarks):
enum class CopyPath {
  kAuto,         // BatchedCopy's choice
  kKernel,       // the kernel (and direct items as above); FailedPrecondition, saying why, without it
  kMemcpy,       // one cudaMemcpyAsync per item
  kMemcpyBatch,  // one cudaMemcpyBatchAsync (CUDA 12.8+ runtime, not the legacy stream); else
                 // FailedPrecondition
  kKernelTable,  // the table form whatever the count (needs `table`); FailedPrecondition without it
};
Status BatchedCopyVia(CopyPath path, const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream,
                      int device, CopyTable* table = nullptr, CopyEnds ends = CopyEnds::kDeviceToDevice);

// Whether the kernel is loaded on `device` (loading it at the first ask), and
// what: "sm_90 cubin (NVRTC 12.9)", or why not.
struct BatchedCopyKernelInfo {
  bool available = false;
  bool table = false;  // the table form too
  std::string what;
};
BatchedCopyKernelInfo BatchedCopyKernel(const GpuApi& api, int device);

}  // namespace ringmaster::internal
