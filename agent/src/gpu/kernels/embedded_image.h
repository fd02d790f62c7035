// Internal: a kernel image embedded in libringmaster at build time (PTX or a
// cubin made by NVRTC, tools/nvrtc-embed), and the batched copy's images.
#pragma once

#include <cstddef>
#include <span>

namespace ringmaster::internal {

struct EmbeddedKernelImage {
  bool ptx;                   // PTX (NUL-terminated, JIT-compiled by the driver) or a cubin
  int arch;                   // compute_80 / sm_90 -> 80 / 90
  const unsigned char* data;  // what cudaLibraryLoadData takes
  size_t size;                // bytes, the PTX's NUL included
};

// The batched copy kernel's images (kernels/batched_copy.cu); empty where the
// build had no NVRTC.
std::span<const EmbeddedKernelImage> BatchedCopyImages();
// What made them, e.g. "NVRTC 12.9", or why there are none
// ("this build of the agent found no NVRTC").
const char* BatchedCopyImagesOrigin();

}  // namespace ringmaster::internal
