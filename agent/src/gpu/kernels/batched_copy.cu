// The batched copy kernel: up to RM_BATCHED_COPY_MAX_ITEMS device-to-device
// copies in one launch, the items passed by value (batched_copy_params.h).
// Compiled at build time by NVRTC (tools/nvrtc-embed) into PTX and cubins
// embedded in libringmaster; loaded by batched_copy.cc.
#include "gpu/kernels/batched_copy_core.h"

extern "C" __global__ void __launch_bounds__(RM_BATCHED_COPY_THREADS)
    ringmaster_batched_copy(const RmBatchedCopyParams params) {
  ringmaster_kernels::CopyThread(params, blockIdx.x, threadIdx.x, blockDim.x);
}
