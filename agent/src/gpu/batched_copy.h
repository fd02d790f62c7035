// Internal: many device-to-device copies on one stream with one kernel launch
// per RM_BATCHED_COPY_MAX_ITEMS items (the pack and unpack of the GPU
// backend), instead of one cudaMemcpyAsync each. The kernel is compiled at
// build time by NVRTC and embedded (kernels/); it is loaded once per device
// with cudaLibraryLoadData (CUDA 12.0+). Where it cannot be had (a build
// without NVRTC, an older runtime, no image for the device) every item is its
// own cudaMemcpyAsync; one debug line per device says which. See docs/gpu.md.
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
Status BatchedCopy(const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream, int device);

// The same through one chosen path (tests and benchmarks):
enum class CopyPath {
  kAuto,         // BatchedCopy's choice
  kKernel,       // the kernel (and direct items as above); FailedPrecondition, saying why, without it
  kMemcpy,       // one cudaMemcpyAsync per item
  kMemcpyBatch,  // one cudaMemcpyBatchAsync (CUDA 12.8+ runtime, not the legacy stream); else
                 // FailedPrecondition
};
Status BatchedCopyVia(CopyPath path, const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream,
                      int device);

// Whether the kernel is loaded on `device` (loading it at the first ask), and
// what: "sm_90 cubin (NVRTC 12.9)", or why not.
struct BatchedCopyKernelInfo {
  bool available = false;
  std::string what;
};
BatchedCopyKernelInfo BatchedCopyKernel(const GpuApi& api, int device);

}  // namespace ringmaster::internal
