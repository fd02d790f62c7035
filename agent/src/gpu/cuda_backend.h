// Private to agent/src/gpu: the CUDA/NCCL implementation of GpuBackend,
// declared once so its definition can be split by concern:
//   cuda_backend.cc        creation, placing tensors, AllReduceOps, Run, Shutdown
//   gpu_backend_nccl.cc    the device group's formation and the NCCL path
//   gpu_backend_staged.cc  the host-staged path (pinned buffers, the CPU engine)
// Only those files include it; everything else sees gpu_backend.h, which has
// no CUDA types.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "gpu/batched_copy.h"
#include "gpu/gpu_api.h"
#include "gpu/gpu_backend.h"
#include "gpu/nccl_plan.h"
#include "gpu/pointer_places.h"

namespace ringmaster::internal::gpu {

// How long a failed call waits for the work it queued to drain (after NCCL
// is aborted, ours is only copies and NCCL's own kernels).
inline constexpr double kDrainSeconds = 5.0;

// "{0,1}"
inline std::string DeviceList(const std::vector<int>& d) {
  std::string s;
  for (int x : d) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return "{" + s + "}";
}

// Sets the calling thread's device and puts back, on scope exit, what the
// thread had: its current context, exactly, where the driver's calls are
// there (a thread that had none is left with none, so no context is made on
// a GPU the process does not use); else its device, if we changed it.
class DeviceGuard {
 public:
  explicit DeviceGuard(const GpuApi& api) : api_(api) {
    if (api_.driver.CtxGetCurrent && api_.driver.CtxSetCurrent) {
      exact_ = api_.driver.CtxGetCurrent(&saved_ctx_) == 0;
    }
    if (!exact_ && api_.cuda.GetDevice(&saved_) != cudaSuccess) saved_ = -1;
  }
  ~DeviceGuard() {
    if (!changed_) return;
    if (exact_) {
      (void)api_.driver.CtxSetCurrent(saved_ctx_);
    } else if (saved_ >= 0) {
      (void)api_.cuda.SetDevice(saved_);
    }
  }
  cudaError_t Set(int device) {
    changed_ = true;
    return api_.cuda.SetDevice(device);
  }

 private:
  const GpuApi& api_;
  bool exact_ = false, changed_ = false;
  void* saved_ctx_ = nullptr;
  int saved_ = -1;
};

// Events for the callers' streams, kept per GPU for the next calls (a few
// per GPU: one per distinct stream of a call), so a call creates none.
class EventPool {
 public:
  static constexpr size_t kKeptPerDevice = 64;
  explicit EventPool(const GpuApi& api) : api_(api) {}
  ~EventPool() {
    for (auto& [device, events] : free_)
      for (cudaEvent_t e : events) (void)api_.cuda.EventDestroy(e);
  }
  // An event of `device`, which must be the thread's current one.
  cudaError_t Take(int device, cudaEvent_t* e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& events = free_[device];
      if (!events.empty()) {
        *e = events.back();
        events.pop_back();
        return cudaSuccess;
      }
    }
    return api_.cuda.EventCreateWithFlags(e, cudaEventDisableTiming);
  }
  void Give(int device, cudaEvent_t e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& events = free_[device];
      if (events.size() < kKeptPerDevice) {
        events.push_back(e);
        return;
      }
    }
    (void)api_.cuda.EventDestroy(e);
  }

 private:
  const GpuApi& api_;
  std::mutex mu_;
  std::map<int, std::vector<cudaEvent_t>> free_;
};

// One call's work, shared by the caller's thread (which captures the
// streams) and the executor that runs it.
struct CallPlan {
  const GpuApi* api = nullptr;
  std::vector<int> devices;
  std::vector<std::vector<Tensor>> views;  // per local device, same shapes
  // Per device: the callers' distinct streams, and an event recorded on
  // each when the call was made.
  std::vector<std::vector<cudaStream_t>> caller_streams;
  std::vector<std::vector<cudaEvent_t>> caller;
  ReduceOp op = ReduceOp::kSum;
  CommunicationOptions options;
  std::shared_ptr<const GroupView> group;
  Deadline deadline = NoDeadline();
  std::string what;
  bool failed_alike = false;          // every member failed it alike, knowing so (Op::failed_alike)
  std::shared_ptr<EventPool> events;  // where `caller`'s events go back
  ~CallPlan() {
    for (size_t l = 0; l < caller.size(); ++l)
      for (cudaEvent_t e : caller[l]) events->Give(devices[l], e);
  }
};

// Where a tensor's input lies: its source, or its data (in place).
inline const void* InputOf(const Tensor& t) {
  return t.source ? t.source : t.data;
}

class CudaGpuBackend final : public GpuBackend {
 public:
  explicit CudaGpuBackend(const Context& ctx) : ctx_(ctx) {}
  ~CudaGpuBackend() override { Shutdown(); }

  StatusOr<bool> IsDeviceCall(std::span<const Tensor> tensors) override;
  StatusOr<std::vector<Op>> AllReduceOps(std::span<const Tensor> tensors, ReduceOp op,
                                         const CommunicationOptions& merged,
                                         std::shared_ptr<const GroupView> group) override;
  void Shutdown() override;

 private:
  // cuda_backend.cc
  // The GPU of tensor i (-1: host memory), from `places` when its
  // allocation was seen before in this call.
  StatusOr<int> Where(const Tensor& t, size_t i, PointerPlaces& places);
  StatusOr<DeviceSplit> Split(std::span<const Tensor> tensors, PointerPlaces& places) {
    return SplitByDevice(tensors, [&](size_t i) { return Where(tensors[i], i, places); });
  }
  // The GPU of device memory at `p` (cudaPointerGetAttributes), learnt into
  // `places` with its allocation's range where the driver gives it.
  cudaError_t Place(const GpuApi& api, const void* p, cudaPointerAttributes& a, PointerPlaces& places);
  Status Run(Transport& t, CallPlan& plan);
  void DestroyDeviceResources();
  void Once(std::atomic<bool>& flag, const std::string& msg, bool warning);
  // gpu_backend_nccl.cc
  Status EnsureDeviceGroup(Transport& t, CallPlan& plan);
  Status EnsureNccl(Transport& t, CallPlan& plan);
  Status RunNccl(CallPlan& plan);
  Status EnqueueNccl(CallPlan& plan);
  // gpu_backend_staged.cc
  Status RunStaged(Transport& t, CallPlan& plan);
  Status EnqueueStaged(Transport& t, CallPlan& plan);
  // cuda_backend.cc: before anything of ours is queued, the callers' work is
  // done (waited for on the host, against the deadline), so our streams
  // never wait on a stream we do not own: an abort never waits behind it.
  Status WaitForCallers(CallPlan& plan);
  // A call that failed after queueing work: NCCL aborted (its kernels end),
  // then our streams drained, within kDrainSeconds, so that nothing we
  // queued touches the callers' buffers after the call completes; and the
  // callers' streams made to wait for ours all the same, so that work they
  // queue next runs after ours even if the drain ran out of time.
  Status Settle(CallPlan& plan, Status failure);

  Status Cuda(cudaError_t e, const std::string& what) {
    if (e == cudaSuccess) return OkStatus();
    (void)api_.load()->cuda.GetLastError();  // clear the sticky-free error
    return InternalError(what + " on " + ctx_.names[ctx_.rank] + ": " + CudaErrorText(*api_.load(), e));
  }
  WaitSpec Spec(CallPlan& plan, std::span<ncclComm_t> comms, std::span<cudaEvent_t> events, bool comms_only,
                const std::string& what) {
    WaitSpec s;
    s.comms = comms;
    s.events = events;
    s.deadline = plan.deadline;
    s.abort_status = [g = plan.group] { return g->AbortStatus(); };
    s.what = what + " on " + ctx_.names[ctx_.rank];
    s.comms_only = comms_only;
    return s;
  }

  const Context ctx_;
  std::atomic<const GpuApi*> api_{nullptr};  // set by the first GPU call
  std::once_flag pool_once_;
  std::shared_ptr<EventPool> pool_;  // made with the first GPU call's table

  std::mutex mu_;  // devices_ / formed_for_, read by callers
  std::weak_ptr<const GroupView> formed_for_;
  std::vector<int> devices_;  // local CUDA ordinals of this formation
  // Everything below is touched only by the executor's GPU slot (and Shutdown,
  // once the executors are stopped).
  bool nccl_everywhere_ = false;
  std::string nccl_missing_;                           // who lacks NCCL, and why
  std::vector<cudaStream_t> streams_;                  // ours, one per local device
  std::vector<cudaEvent_t> done_;                      // per device: the call's end
  std::vector<std::array<cudaEvent_t, 2>> d2h_, h2d_;  // per device, per staging area
  std::vector<char*> fusion_;                          // per device: kDeviceFusionBytes, or null
  std::vector<CopyTable> tables_;                      // per device: the batched copy's table form
  // A call's packs and one pack's copies: scratch kept call after call (it
  // grows to the largest call, about 60 bytes a tensor).
  std::vector<DevicePack> packs_;
  std::vector<CopyItem> copies_;
  std::string fusion_missing_;  // who could not allocate theirs, and why
  std::vector<ncclComm_t> comms_;
  NcclState state_ = NcclState::kNone;
  std::weak_ptr<const GroupView> nccl_for_;
  char* pinned_ = nullptr;
  size_t pinned_bytes_ = 0;
  std::atomic<bool> said_nccl_{false}, said_staged_{false}, said_ring_{false}, warned_missing_{false};
};

}  // namespace ringmaster::internal::gpu
