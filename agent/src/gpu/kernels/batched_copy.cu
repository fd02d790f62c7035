// The batched copy kernels: device-to-device copies in one launch, the
// items passed by value (up to RM_BATCHED_COPY_MAX_ITEMS, a range of blocks
// each) or as a table in device memory (any number, a warp a chunk)
// (batched_copy_params.h). Compiled at build time by NVRTC (tools/nvrtc-embed)
// into PTX and cubins embedded in libringmaster; loaded by batched_copy.cc.
#include "gpu/kernels/batched_copy_core.h"

extern "C" __global__ void __launch_bounds__(RM_BATCHED_COPY_THREADS)
    ringmaster_batched_copy(const RmBatchedCopyParams params) {
  ringmaster_kernels::CopyThread(ringmaster_kernels::ParamsItems{params}, blockIdx.x, threadIdx.x,
                                 blockDim.x);
}

extern "C" __global__ void __launch_bounds__(RM_BATCHED_COPY_THREADS)
    ringmaster_batched_copy_table(const RmBatchedCopyTableParams params) {
  ringmaster_kernels::CopyTableThread(params, reinterpret_cast<const RmBatchedCopyItem*>(params.items),
                                      reinterpret_cast<const unsigned int*>(params.chunks), blockIdx.x,
                                      threadIdx.x, blockDim.x, gridDim.x);
}
