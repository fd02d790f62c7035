// Internal: the GPU half of a Communicator. No CUDA types here: this header
// is seen by communicator.cc in every build; cuda_backend.h and its
// gpu_backend*.cc implement it where the CUDA/NCCL headers were found
// (RINGMASTER_WITH_NCCL), and gpu_backend_off.cc, which refuses GPU memory,
// everywhere else.
//
// A call's tensors are placed (host or GPU, per tensor); GPU calls become
// one Op pinned to the executor's GPU slot, so every member issues its NCCL calls in
// the same order from one thread. In that Op, the first GPU call of a
// formation exchanges every member's GPU count and NCCL availability over
// the CPU engine, then either runs NCCL (rank 0 makes the ncclUniqueId and
// broadcasts it; ranks = members x local GPUs) or stages packs through
// pinned host buffers and the CPU engine.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agent_log.h"
#include "collectives/op.h"
#include "group/group.h"
#include "ringmaster/communicator.h"

namespace ringmaster::internal {

class GpuBackend {
 public:
  struct Context {
    int rank = 0, size = 1;
    std::vector<std::string> names;
    int streams = 2;
  };
  static std::unique_ptr<GpuBackend> Create(const Context& ctx);
  virtual ~GpuBackend() = default;

  // Whether the call's (validated) tensors are GPU memory: false for host
  // memory; InvalidArgument for a mix, or for a tensor marked kDevice whose
  // pointer is not device memory. Loads no CUDA library unless a tensor is
  // marked kDevice or the process already uses CUDA.
  virtual StatusOr<bool> IsDeviceCall(std::span<const Tensor> tensors) = 0;

  // The Op(s) of an all-reduce of GPU tensors. `group` is the formation the
  // call is submitted to (its abort state stops NCCL; a new one means a new
  // NCCL communicator). The caller's streams
  // are captured here, in the calling thread.
  virtual StatusOr<std::vector<Op>> AllReduceOps(std::span<const Tensor> tensors, ReduceOp op,
                                                 const CommunicationOptions& merged,
                                                 std::shared_ptr<const GroupView> group) = 0;

  // Aborts NCCL (if formed) without waiting: the Communicator is going away
  // or re-forming. Executors must be stopped first.
  virtual void Shutdown() = 0;
};

}  // namespace ringmaster::internal
