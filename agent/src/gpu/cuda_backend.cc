// The GPU backend (gpu_backend.h; docs/gpu.md for the semantics): NCCL on
// GPU memory, or staging through pinned host buffers and the CPU engine.
// This file holds what every call goes through: the backend's creation,
// placing tensors (host or which GPU), turning a call into its Op with the
// caller's streams captured, choosing the path in Run, and tearing down.
// The paths themselves are in gpu_backend_nccl.cc and gpu_backend_staged.cc
// (cuda_backend.h declares the class they share).
#include "gpu/cuda_backend.h"

#include <algorithm>
#include <string>

namespace ringmaster::internal {
namespace gpu {

StatusOr<bool> CudaGpuBackend::IsDeviceCall(std::span<const Tensor> tensors) {
  // The CPU engine's fast path: nothing marked GPU and no CUDA in the process.
  bool marked = false;
  for (const auto& t : tensors) marked = marked || (t.memory == MemoryKind::kDevice && t.count > 0);
  if (!marked && !CudaMayBeInUse()) return false;
  PointerPlaces places;
  auto split = Split(tensors, places);
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

cudaError_t CudaGpuBackend::Place(const GpuApi& api, const void* p, cudaPointerAttributes& a,
                                  PointerPlaces& places) {
  a = {};
  cudaError_t e = api.cuda.PointerGetAttributes(&a, p);
  if (e != cudaSuccess || a.type != cudaMemoryTypeDevice || !api.driver.MemGetAddressRange) return e;
  // The allocation it lies in: its other tensors need no query of their own.
  // The driver acts on the current context; CUDA's answer named the GPU.
  unsigned long long base = 0;
  size_t bytes = 0;
  if (api.driver.MemGetAddressRange(&base, &bytes, reinterpret_cast<uintptr_t>(p)) == 0 &&
      reinterpret_cast<uintptr_t>(p) >= base && reinterpret_cast<uintptr_t>(p) - base < bytes)
    places.Add(static_cast<uintptr_t>(base), bytes, a.device);
  return e;
}

StatusOr<int> CudaGpuBackend::Where(const Tensor& t, size_t i, PointerPlaces& places) {
  const bool marked = t.memory == MemoryKind::kDevice;
  // Host tensors are only looked at when device memory can exist at all, so
  // CPU-only processes never load CUDA.
  if (!marked && !CudaMayBeInUse()) return -1;
  if (auto known = places.Find(t.data)) return *known;
  auto api = LoadGpuApi();
  if (!api.ok()) {
    if (!marked) return -1;
    return Status(api.status().code(), "tensors[" + std::to_string(i) + "]: " + api.status().message());
  }
  api_.store(*api);
  cudaPointerAttributes a{};
  cudaError_t e = Place(**api, t.data, a, places);
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
  PointerPlaces places;
  auto split = Split(tensors, places);
  if (!split.ok()) return split.status();
  if (!split->device || !api_.load()) return InternalError("AllReduceOps called for host tensors");
  const GpuApi& api = *api_.load();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (formed_for_.lock() == group && split->devices != devices_) {
      return InvalidArgumentError(
          "this call's tensors are on GPUs " + DeviceList(split->devices) + " but the group drives GPUs " +
          DeviceList(devices_) +
          "; every call must use the same GPUs until Reform(). Several GPUs per worker go in one call (one "
          "replica of every tensor per GPU); one call per GPU, as TensorFlow's MirroredStrategy makes them "
          "with several local GPUs, is not supported: run one worker per GPU");
    }
  }
  for (size_t l = 0; l < split->devices.size(); ++l) {
    const auto& idx = split->per_device[l];
    RM_RETURN_IF_ERROR(CheckDeviceOverlaps(tensors, idx));
    for (size_t i : idx) {  // out of place: the input on the output's GPU
      const void* src = tensors[i].source;
      if (!src || src == tensors[i].data) continue;
      bool device = false;
      int on = -1;
      if (auto known = places.Find(src)) {
        device = true;
        on = *known;
      } else {
        cudaPointerAttributes a{};
        cudaError_t e = Place(api, src, a, places);
        if (e != cudaSuccess) (void)api.cuda.GetLastError();
        device = e == cudaSuccess && (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged);
        on = a.device;
      }
      if (!device || on != split->devices[l]) {
        return InvalidArgumentError(
            "tensors[" + std::to_string(i) + "].source is not memory of GPU " +
            std::to_string(split->devices[l]) +
            ", where its data is: an out-of-place all-reduce reads and writes one GPU");
      }
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
  std::call_once(pool_once_, [&] { pool_ = std::make_shared<EventPool>(api); });
  auto plan = std::make_shared<CallPlan>();
  plan->api = &api;
  plan->events = pool_;
  plan->devices = split->devices;
  plan->op = op;
  plan->options = merged;
  plan->group = std::move(group);
  plan->deadline = DeadlineAfter(merged.EffectiveTimeout().value_or(0));
  plan->views.resize(split->devices.size());
  plan->caller.resize(split->devices.size());
  plan->caller_streams.resize(split->devices.size());
  // The caller's streams: one event per distinct stream, recorded now, in
  // the calling thread, so we start after the work that produced the data.
  DeviceGuard guard(api);
  for (size_t l = 0; l < split->devices.size(); ++l) {
    RM_RETURN_IF_ERROR(Cuda(guard.Set(split->devices[l]), "cudaSetDevice"));
    auto& seen = plan->caller_streams[l];
    plan->views[l].reserve(split->per_device[l].size());
    for (size_t i : split->per_device[l]) {
      plan->views[l].push_back(tensors[i]);
      auto s = static_cast<cudaStream_t>(tensors[i].stream);
      if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
      // A stream capturing a CUDA graph would take our work into the graph
      // (and our wait would see nothing run).
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      RM_RETURN_IF_ERROR(Cuda(api.cuda.StreamIsCapturing(s, &capture), "cudaStreamIsCapturing"));
      if (capture != cudaStreamCaptureStatusNone) {
        return FailedPreconditionError(
            "tensors[" + std::to_string(i) +
            "]: its stream is capturing a CUDA graph; the all-reduce cannot be captured (it waits for the "
            "stream's work on the host and polls NCCL so that it can time out): call it outside the capture");
      }
      cudaEvent_t ev = nullptr;
      RM_RETURN_IF_ERROR(Cuda(pool_->Take(split->devices[l], &ev), "cudaEventCreate"));
      plan->caller[l].push_back(ev);
      seen.push_back(s);
      if (cudaError_t e = api.cuda.EventRecord(ev, s); e != cudaSuccess) {
        (void)api.cuda.GetLastError();
        return InvalidArgumentError(
            "tensors[" + std::to_string(i) + "] is on GPU " + std::to_string(split->devices[l]) +
            " but its stream is not a stream of that GPU (cudaEventRecord: " + CudaErrorText(api, e) +
            "): give each GPU's tensors a stream of that GPU");
      }
    }
  }
  plan->what = "all-reduce of " + std::to_string(plan->views[0].size()) + " tensors on " +
               std::to_string(plan->devices.size()) + " GPU(s)";
  Op o;
  // Every GPU call on the executor's GPU slot (after the host ones): NCCL
  // calls in one order, and no host collective queued behind them.
  o.slot = ctx_.streams;
  o.what = plan->what;
  o.info.kind = OpKind::kGpuAllReduce;
  o.info.packs = static_cast<int32_t>(plan->views[0].size());
  o.info.dtype = plan->views[0].empty() ? DataType::kFloat32 : plan->views[0][0].dtype;
  for (const auto& v : plan->views[0]) o.info.bytes += v.bytes();
  o.info.algorithm = "gpu";
  o.info.timeout_s = merged.EffectiveTimeout().value_or(0);
  o.run = [this, plan](Transport& t) { return Run(t, *plan); };
  o.failed_alike = [plan] { return plan->failed_alike; };
  std::vector<Op> ops;
  ops.push_back(std::move(o));
  return ops;
}

Status CudaGpuBackend::WaitForCallers(CallPlan& plan) {
  std::vector<cudaEvent_t> events;
  for (const auto& evs : plan.caller) events.insert(events.end(), evs.begin(), evs.end());
  Status st = WaitOrAbort(*plan.api, Spec(plan, {}, events, false, plan.what));
  if (st.code() == StatusCode::kDeadlineExceeded) {
    return DeadlineExceededError(plan.what + " on " + ctx_.names[ctx_.rank] +
                                 ": the work queued before it on the callers' streams did not finish within "
                                 "its timeout (nothing of the all-reduce had started)");
  }
  return st;
}

Status CudaGpuBackend::Settle(CallPlan& plan, Status failure) {
  const GpuApi& api = *plan.api;
  if (state_ == NcclState::kRunning || state_ == NcclState::kForming) {
    AbortComms(api, comms_);
    state_ = NcclState::kAborted;
  }
  DeviceGuard guard(api);
  std::vector<cudaEvent_t> done;
  for (size_t l = 0; l < streams_.size() && l < plan.devices.size(); ++l) {
    if (guard.Set(plan.devices[l]) != cudaSuccess) continue;
    if (api.cuda.EventRecord(done_[l], streams_[l]) != cudaSuccess) continue;
    done.push_back(done_[l]);
    for (cudaStream_t s : plan.caller_streams[l]) (void)api.cuda.StreamWaitEvent(s, done_[l], 0);
  }
  (void)api.cuda.GetLastError();
  WaitSpec s;
  s.events = done;
  s.deadline = DeadlineAfter(kDrainSeconds);
  s.what = "draining";
  if (!WaitOrAbort(api, s).ok()) {
    return Status(failure.code(), failure.message() + "; this call's GPU work did not drain within " +
                                      std::to_string(static_cast<int>(kDrainSeconds)) +
                                      " s: the callers' streams wait for it before their next work");
  }
  return failure;
}

Status CudaGpuBackend::Run(Transport& t, CallPlan& plan) {
  RM_RETURN_IF_ERROR(EnsureDeviceGroup(t, plan));
  const Implementation impl = plan.options.implementation;
  const bool use_nccl = impl != Implementation::kRing && nccl_everywhere_;
  if (use_nccl) {
    if (!fusion_missing_.empty()) {
      // Every member knows it (the formation exchanged it): all refuse this
      // call alike, and the next call forms the device group again.
      const std::string why = fusion_missing_;
      std::lock_guard<std::mutex> lock(mu_);
      formed_for_.reset();
      plan.failed_alike = true;
      return ResourceExhaustedError(
          "the GPU fusion buffer (" + std::to_string(kDeviceFusionBytes >> 20) +
          " MiB per GPU) could not be allocated on " + why +
          ": leave that much GPU memory free (TensorFlow: tf.config.experimental.set_memory_growth, or "
          "TF_FORCE_GPU_ALLOW_GROWTH=true), or use implementation RING");
    }
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
  {
    DeviceGuard guard(api);
    for (size_t l = 0; l < fusion_.size() && l < streams_.size(); ++l) {
      // Stream-ordered: no wait for the device (cudaFree would wait for
      // every stream, the callers' too).
      if (fusion_[l] && guard.Set(devices_[l]) == cudaSuccess)
        (void)api.cuda.FreeAsync(fusion_[l], streams_[l]);
    }
    for (size_t l = 0; l < tables_.size() && l < streams_.size(); ++l) {
      if (guard.Set(devices_[l]) == cudaSuccess) tables_[l].Destroy(api, streams_[l]);
    }
  }
  fusion_.clear();
  tables_.clear();
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
