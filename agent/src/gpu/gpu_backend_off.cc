// The GPU backend of a build without CUDA/NCCL headers
// (RINGMASTER_WITH_NCCL=OFF or not found): host memory only.
#include "gpu/gpu_backend.h"

namespace ringmaster::internal {
namespace {

class NoGpuBackend final : public GpuBackend {
 public:
  StatusOr<bool> IsDeviceCall(std::span<const Tensor> tensors) override {
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].memory == MemoryKind::kDevice && tensors[i].count > 0) {
        return UnimplementedError("tensors[" + std::to_string(i) +
                                  "]: GPU memory needs the CUDA/NCCL backend, which this build of the agent "
                                  "leaves out (built with RINGMASTER_WITH_NCCL=OFF or without CUDA headers)");
      }
    }
    return false;
  }
  StatusOr<std::vector<Op>> AllReduceOps(std::span<const Tensor>, ReduceOp, const CommunicationOptions&,
                                         std::shared_ptr<const GroupView>) override {
    return UnimplementedError("GPU memory: this build of the agent has no CUDA/NCCL backend");
  }
  void Shutdown() override {}
};

}  // namespace

std::unique_ptr<GpuBackend> GpuBackend::Create(const Context&) {
  return std::make_unique<NoGpuBackend>();
}

}  // namespace ringmaster::internal
