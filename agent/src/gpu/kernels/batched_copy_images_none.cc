// The batched copy's images in a build without NVRTC: none, so the agent packs
// with one cudaMemcpyAsync per tensor (batched_copy.cc).
#include "gpu/kernels/embedded_image.h"

namespace ringmaster::internal {

std::span<const EmbeddedKernelImage> BatchedCopyImages() {
  return {};
}

const char* BatchedCopyImagesOrigin() {
  return "this build of the agent found no NVRTC";
}

}  // namespace ringmaster::internal
