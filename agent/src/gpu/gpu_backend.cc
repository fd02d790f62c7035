// The GPU backend (gpu_backend.h; docs/gpu.md for the semantics): NCCL on
// GPU memory, or staging through pinned host buffers and the CPU engine.
// This file holds what every call goes through: the backend's creation,
// placing tensors (host or which GPU), turning a call into its Op with the
// caller's streams captured, choosing the path in Run, and tearing down.
// The paths themselves are in gpu_backend_nccl.cc and gpu_backend_staged.cc
// (cuda_backend.h declares the class they share).
#include <algorithm>
#include <string>

#include "gpu/cuda_backend.h"

namespace ringmaster::internal {
namespace gpu {

StatusOr<bool> CudaGpuBackend::IsDeviceCall(std::span<const Tensor> tensors) {
  // The CPU engine's fast path: nothing marked GPU and no CUDA in the process.
  bool marked = false;
  for (const auto& t : tensors) marked = marked || (t.memory == MemoryKind::kDevice && t.count > 0);
  if (!marked && !CudaMayBeInUse()) return false;
  auto split = Split(tensors);
  if (!split.ok()) return split.status();
  return split->device;
}

void CudaGpuBackend::Once(std::atomic<bool>& flag, const std::string& msg, bool warning) {
  if (flag.exchange(true)) return;
  if (warning)
    Warn(msg);
  else
    DebugLog(msg);
}

StatusOr<int> CudaGpuBackend::Where(const Tensor& t, size_t i) {
  const bool marked = t.memory == MemoryKind::kDevice;
  // Host tensors are only looked at when device memory can exist at all, so
  // CPU-only processes never load CUDA.
  if (!marked && !CudaMayBeInUse()) return -1;
  auto api = LoadGpuApi();
  if (!api.ok()) {
    if (!marked) return -1;
    return Status(api.status().code(), "tensors[" + std::to_string(i) + "]: " + api.status().message());
  }
  api_.store(*api);
  cudaPointerAttributes a{};
  cudaError_t e = (*api)->cuda.PointerGetAttributes(&a, t.data);
  if (e != cudaSuccess) {
    (void)(*api)->cuda.GetLastError();
    if (!marked) return -1;
    return InvalidArgumentError(
        "tensors[" + std::to_string(i) +
        "] is marked GPU memory but CUDA cannot place its pointer: " + CudaErrorText(**api, e));
  }
  if (a.type == cudaMemoryTypeDevice) return a.device;
  if (marked && a.type == cudaMemoryTypeManaged) return a.device;
  if (marked) {
    return InvalidArgumentError(
        "tensors[" + std::to_string(i) +
        "] is marked GPU memory (MemoryKind::kDevice) but its pointer is host memory");
  }
  return -1;  // host, pinned host or managed memory marked host: the CPU engine reads it
}

StatusOr<std::vector<Op>> CudaGpuBackend::AllReduceOps(std::span<const Tensor> tensors, ReduceOp op,
                                                       const CommunicationOptions& merged,
                                                       std::shared_ptr<const GroupView> group) {
  if (!group) return AbortedError("the group is not formed; call Reform()");
  auto split = Split(tensors);
  if (!split.ok()) return split.status();
  if (!split->device || !api_.load()) return InternalError("AllReduceOps called for host tensors");
  const GpuApi& api = *api_.load();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (formed_for_.lock() == group && split->devices != devices_) {
      return InvalidArgumentError("this call's tensors are on GPUs " + DeviceList(split->devices) +
                                  " but the group drives GPUs " + DeviceList(devices_) +
                                  "; every call must use the same GPUs until Reform()");
    }
  }
  // Refuse what NCCL lacks before anything is sent (every member refuses alike).
  if (api.have_nccl && merged.implementation != Implementation::kRing) {
    auto r = NcclRedOp(op, api.nccl_version);
    if (!r.ok()) return r.status();
    for (size_t i : split->per_device[0]) {
      auto d = NcclDataType(tensors[i].dtype, api.nccl_version);
      if (!d.ok()) return d.status();
    }
  }
  auto plan = std::make_shared<CallPlan>();
  plan->api = &api;
  plan->devices = split->devices;
  plan->op = op;
  plan->options = merged;
  plan->group = std::move(group);
  plan->deadline = DeadlineAfter(merged.EffectiveTimeout().value_or(0));
  plan->views.resize(split->devices.size());
  plan->caller.resize(split->devices.size());
  // The caller's streams: one event per distinct stream, recorded now, in
  // the calling thread, so we start after the work that produced the data.
  DeviceGuard guard(api);
  for (size_t l = 0; l < split->devices.size(); ++l) {
    RM_RETURN_IF_ERROR(Cuda(api.cuda.SetDevice(split->devices[l]), "cudaSetDevice"));
    std::vector<void*> seen;
    for (size_t i : split->per_device[l]) {
      plan->views[l].push_back(tensors[i]);
      if (std::find(seen.begin(), seen.end(), tensors[i].stream) != seen.end()) continue;
      seen.push_back(tensors[i].stream);
      cudaEvent_t ev = nullptr;
      RM_RETURN_IF_ERROR(Cuda(api.cuda.EventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate"));
      plan->caller[l].push_back(ev);
      RM_RETURN_IF_ERROR(Cuda(api.cuda.EventRecord(ev, static_cast<cudaStream_t>(tensors[i].stream)),
                              "cudaEventRecord on the caller's stream"));
    }
  }
  plan->what = "all-reduce of " + std::to_string(plan->views[0].size()) + " tensors on " +
               std::to_string(plan->devices.size()) + " GPU(s)";
  Op o;
  o.slot = 0;  // every GPU call on one executor: NCCL calls in one order
  o.what = plan->what;
  o.info.kind = OpKind::kGpuAllReduce;
  o.info.packs = static_cast<int32_t>(plan->views[0].size());
  o.info.dtype = plan->views[0].empty() ? DataType::kFloat32 : plan->views[0][0].dtype;
  for (const auto& v : plan->views[0]) o.info.bytes += v.bytes();
  o.info.algorithm = "gpu";
  o.info.timeout_s = merged.EffectiveTimeout().value_or(0);
  o.run = [this, plan](Transport& t) { return Run(t, *plan); };
  std::vector<Op> ops;
  ops.push_back(std::move(o));
  return ops;
}

Status CudaGpuBackend::Run(Transport& t, CallPlan& plan) {
  RM_RETURN_IF_ERROR(EnsureDeviceGroup(t, plan));
  const Implementation impl = plan.options.implementation;
  const bool use_nccl = impl != Implementation::kRing && nccl_everywhere_;
  if (use_nccl) {
    Once(said_nccl_,
         std::string(impl == Implementation::kAuto ? "AUTO" : "NCCL") + " on GPU memory: NCCL " +
             NcclVersionText(api_.load()->nccl_version) + " (" + std::to_string(ctx_.size * devices_.size()) +
             " ranks)",
         false);
    RM_RETURN_IF_ERROR(EnsureNccl(t, plan));
    return RunNccl(plan);
  }
  if (impl == Implementation::kRing) {
    Once(said_ring_, "RING on GPU memory: staged through pinned host buffers and the CPU engine", false);
  } else {
    const std::string why = "NCCL is not available on every member (" + nccl_missing_ +
                            "); GPU memory is staged through host buffers and the CPU engine";
    Once(said_staged_, std::string(impl == Implementation::kAuto ? "AUTO" : "NCCL") + ": " + why, false);
    if (impl == Implementation::kNccl)
      Once(warned_missing_, "implementation NCCL was requested but " + why, true);
  }
  return RunStaged(t, plan);
}

void CudaGpuBackend::DestroyDeviceResources() {
  if (!api_) return;
  const GpuApi& api = *api_.load();
  for (auto& e : done_) (void)api.cuda.EventDestroy(e);
  for (auto& pair : d2h_)
    for (auto& e : pair) (void)api.cuda.EventDestroy(e);
  for (auto& pair : h2d_)
    for (auto& e : pair) (void)api.cuda.EventDestroy(e);
  for (auto& s : streams_) (void)api.cuda.StreamDestroy(s);
  done_.clear();
  d2h_.clear();
  h2d_.clear();
  streams_.clear();
}

void CudaGpuBackend::Shutdown() {
  if (!api_) return;
  const GpuApi& api = *api_.load();
  bool live = false;
  for (ncclComm_t c : comms_) live = live || c;
  if (live && state_ == NcclState::kReady && api.nccl.CommFinalize) {
    // An orderly end: flush, then free; anything odd (a peer gone) aborts.
    for (ncclComm_t c : comms_) (void)api.nccl.CommFinalize(c);
    WaitSpec s;
    s.comms = comms_;
    s.deadline = DeadlineAfter(2.0);
    s.comms_only = true;
    s.what = "finalizing NCCL";
    if (WaitOrAbort(api, s).ok()) {
      for (ncclComm_t& c : comms_) {
        (void)api.nccl.CommDestroy(c);
        c = nullptr;
      }
    }
  }
  AbortComms(api, comms_);
  comms_.clear();
  state_ = NcclState::kNone;
  DestroyDeviceResources();
  if (pinned_) (void)api.cuda.FreeHost(pinned_);
  pinned_ = nullptr;
  pinned_bytes_ = 0;
  std::lock_guard<std::mutex> lock(mu_);
  formed_for_.reset();
  devices_.clear();
}

}  // namespace gpu

std::unique_ptr<GpuBackend> GpuBackend::Create(const Context& ctx) {
  return std::make_unique<gpu::CudaGpuBackend>(ctx);
}

}  // namespace ringmaster::internal
