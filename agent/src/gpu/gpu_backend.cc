// The GPU backend: NCCL on GPU memory, or staging through pinned host
// buffers and the CPU engine. See gpu_backend.h for the shape of it and
// docs/gpu.md for the semantics.
#include "gpu/gpu_backend.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>

#include "algorithms.h"
#include "collectives.h"
#include "gpu/gpu_api.h"
#include "gpu/nccl_plan.h"
#include "kernels.h"
#include "packing.h"

namespace ringmaster::internal {
namespace {

std::string DeviceList(const std::vector<int>& d) {
  std::string s;
  for (int x : d) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return "{" + s + "}";
}

// Restores the calling thread's current device on scope exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(const GpuApi& api) : api_(api) {
    if (api_.cuda.GetDevice(&saved_) != cudaSuccess) saved_ = -1;
  }
  ~DeviceGuard() {
    if (saved_ >= 0) (void)api_.cuda.SetDevice(saved_);
  }

 private:
  const GpuApi& api_;
  int saved_ = -1;
};

// One call's work, shared by the caller's thread (which captures the
// streams) and the executor that runs it.
struct CallPlan {
  const GpuApi* api = nullptr;
  std::vector<int> devices;
  std::vector<std::vector<Tensor>> views;        // per local device, same shapes
  std::vector<std::vector<cudaEvent_t>> caller;  // events on the callers' streams, per device
  ReduceOp op = ReduceOp::kSum;
  CommunicationOptions options;
  std::shared_ptr<const GroupView> group;
  Deadline deadline = NoDeadline();
  std::string what;
  ~CallPlan() {
    for (auto& evs : caller)
      for (cudaEvent_t e : evs) (void)api->cuda.EventDestroy(e);
  }
};

class CudaGpuBackend final : public GpuBackend {
 public:
  explicit CudaGpuBackend(const Context& ctx) : ctx_(ctx) {}
  ~CudaGpuBackend() override { Shutdown(); }

  StatusOr<bool> IsDeviceCall(std::span<const Tensor> tensors) override {
    // The CPU engine's fast path: nothing marked GPU and no CUDA in the process.
    bool marked = false;
    for (const auto& t : tensors) marked = marked || (t.memory == MemoryKind::kDevice && t.count > 0);
    if (!marked && !CudaMayBeInUse()) return false;
    auto split = Split(tensors);
    if (!split.ok()) return split.status();
    return split->device;
  }

  StatusOr<std::vector<Op>> AllReduceOps(std::span<const Tensor> tensors, ReduceOp op,
                                         const CommunicationOptions& merged,
                                         std::shared_ptr<const GroupView> group) override;
  void Shutdown() override;

 private:
  StatusOr<int> Where(const Tensor& t, size_t i);
  StatusOr<DeviceSplit> Split(std::span<const Tensor> tensors) {
    return SplitByDevice(tensors, [&](size_t i) { return Where(tensors[i], i); });
  }
  Status Run(Transport& t, CallPlan& plan);
  Status EnsureDeviceGroup(Transport& t, CallPlan& plan);
  Status EnsureNccl(Transport& t, CallPlan& plan);
  Status RunNccl(CallPlan& plan);
  Status RunStaged(Transport& t, CallPlan& plan);
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
  void DestroyDeviceResources();
  void Once(std::atomic<bool>& flag, const std::string& msg, bool warning) {
    if (flag.exchange(true)) return;
    if (warning)
      std::cerr << "ringmaster: warning: " << msg << std::endl;
    else
      DebugLog(msg);
  }

  const Context ctx_;
  std::atomic<const GpuApi*> api_{nullptr};  // set by the first GPU call

  std::mutex mu_;  // devices_ / formed_for_, read by callers
  std::weak_ptr<const GroupView> formed_for_;
  std::vector<int> devices_;  // local CUDA ordinals of this formation
  // Everything below is touched only by the executor of slot 0 (and Shutdown,
  // once the executors are stopped).
  bool nccl_everywhere_ = false;
  std::string nccl_missing_;                           // who lacks NCCL, and why
  std::vector<cudaStream_t> streams_;                  // ours, one per local device
  std::vector<cudaEvent_t> done_;                      // per device: the call's end
  std::vector<std::array<cudaEvent_t, 2>> d2h_, h2d_;  // per device, per staging area
  std::vector<ncclComm_t> comms_;
  NcclState state_ = NcclState::kNone;
  std::weak_ptr<const GroupView> nccl_for_;
  char* pinned_ = nullptr;
  size_t pinned_bytes_ = 0;
  std::atomic<bool> said_nccl_{false}, said_staged_{false}, said_ring_{false}, warned_missing_{false};
};

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

Status CudaGpuBackend::EnsureDeviceGroup(Transport& t, CallPlan& plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (formed_for_.lock() == plan.group) {
      if (plan.devices != devices_) {
        return InvalidArgumentError("this call's tensors are on GPUs " + DeviceList(plan.devices) +
                                    " but the group drives GPUs " + DeviceList(devices_));
      }
      return OkStatus();
    }
  }
  const GpuApi& api = *api_.load();
  // A new formation of the group: the old communicators (if any) belong to
  // an aborted or re-formed group.
  AbortComms(api, comms_);
  state_ = NcclState::kNone;
  DestroyDeviceResources();
  DeviceGuard guard(api);
  const size_t g = plan.devices.size();
  streams_.assign(g, nullptr);
  done_.assign(g, nullptr);
  d2h_.assign(g, {nullptr, nullptr});
  h2d_.assign(g, {nullptr, nullptr});
  for (size_t l = 0; l < g; ++l) {
    RM_RETURN_IF_ERROR(Cuda(api.cuda.SetDevice(plan.devices[l]), "cudaSetDevice"));
    // Non-blocking: our copies never wait for (or hold up) the legacy stream.
    RM_RETURN_IF_ERROR(
        Cuda(api.cuda.StreamCreateWithFlags(&streams_[l], cudaStreamNonBlocking), "cudaStreamCreate"));
    for (cudaEvent_t* e : {&done_[l], &d2h_[l][0], &d2h_[l][1], &h2d_[l][0], &h2d_[l][1]}) {
      RM_RETURN_IF_ERROR(Cuda(api.cuda.EventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate"));
    }
  }
  std::vector<DeviceMember> all(ctx_.size);
  all[ctx_.rank] = {static_cast<int32_t>(g), api.have_nccl ? 1 : 0};
  if (ctx_.size > 1) RM_RETURN_IF_ERROR(RingAllGatherBytes(t, all.data(), sizeof(DeviceMember)));
  RM_RETURN_IF_ERROR(CheckDeviceMembers(all, ctx_.names));
  nccl_everywhere_ = true;
  nccl_missing_.clear();
  for (int r = 0; r < ctx_.size; ++r) {
    if (all[r].has_nccl) continue;
    nccl_everywhere_ = false;
    nccl_missing_ += (nccl_missing_.empty() ? "" : ", ") + ctx_.names[r] +
                     (r == ctx_.rank ? ": " + api.nccl_unavailable : " has none");
  }
  DebugLog("GPU group formed on " + ctx_.names[ctx_.rank] + ": GPUs " + DeviceList(plan.devices) + ", " +
           std::to_string(ctx_.size) + " member(s), NCCL " +
           (nccl_everywhere_ ? "everywhere" : "not everywhere"));
  std::lock_guard<std::mutex> lock(mu_);
  devices_ = plan.devices;
  formed_for_ = plan.group;
  return OkStatus();
}

Status CudaGpuBackend::EnsureNccl(Transport& t, CallPlan& plan) {
  if (state_ == NcclState::kReady && nccl_for_.lock() == plan.group) return OkStatus();
  const GpuApi& api = *api_.load();
  AbortComms(api, comms_);
  state_ = NcclState::kForming;
  // Rank 0 makes the id and sends it through our own control plane (the CPU
  // engine); a failure there is sent too, so no member waits for nothing.
  struct IdMessage {
    int32_t ok;
    char error[252];
    ncclUniqueId id;
  } msg{};
  if (ctx_.rank == 0) {
    ncclResult_t r = api.nccl.GetUniqueId(&msg.id);
    msg.ok = r == ncclSuccess;
    if (!msg.ok) std::snprintf(msg.error, sizeof msg.error, "%s", NcclErrorText(api, r).c_str());
  }
  if (ctx_.size > 1) RM_RETURN_IF_ERROR(BroadcastBytes(t, &msg, sizeof msg, 0));
  if (!msg.ok) {
    state_ = NcclState::kNone;
    return UnavailableError(ctx_.names[0] + " could not create the NCCL unique id: " +
                            std::string(msg.error, strnlen(msg.error, sizeof msg.error)));
  }
  const int g = static_cast<int>(devices_.size());
  const int nranks = ctx_.size * g;
  comms_.assign(g, nullptr);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns at once; we poll, so we can abort
  DeviceGuard guard(api);
  Status st;
  if (g > 1) (void)api.nccl.GroupStart();
  for (int l = 0; l < g && st.ok(); ++l) {
    st = Cuda(api.cuda.SetDevice(devices_[l]), "cudaSetDevice");
    if (!st.ok()) break;
    ncclResult_t r = api.nccl.CommInitRankConfig(&comms_[l], nranks, msg.id, ctx_.rank * g + l, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      st = InternalError("ncclCommInitRankConfig on " + ctx_.names[ctx_.rank] + " GPU " +
                         std::to_string(devices_[l]) + ": " + NcclErrorText(api, r));
    }
  }
  if (g > 1) {
    ncclResult_t r = api.nccl.GroupEnd();
    if (st.ok() && r != ncclSuccess && r != ncclInProgress) {
      st = InternalError("forming the NCCL communicators: " + NcclErrorText(api, r));
    }
  }
  if (st.ok()) st = WaitOrAbort(api, Spec(plan, comms_, {}, true, "forming the NCCL communicator"));
  if (!st.ok()) {
    AbortComms(api, comms_);
    state_ = NcclState::kAborted;
    return st;
  }
  state_ = NcclState::kReady;
  nccl_for_ = plan.group;
  DebugLog("NCCL communicator formed on " + ctx_.names[ctx_.rank] + ": ranks " +
           std::to_string(ctx_.rank * g) + ".." + std::to_string(ctx_.rank * g + g - 1) + " of " +
           std::to_string(nranks));
  return OkStatus();
}

Status CudaGpuBackend::RunNccl(CallPlan& plan) {
  const GpuApi& api = *api_.load();
  const size_t g = devices_.size();
  auto packs = PlanDevicePacks(plan.views[0], plan.options.bytes_per_pack);
  auto red = NcclRedOp(plan.op, api.nccl_version);
  if (!red.ok()) return red.status();
  std::vector<ncclDataType_t> types;
  for (const auto& p : packs) {
    auto d = NcclDataType(p.dtype, api.nccl_version);
    if (!d.ok()) return d.status();
    types.push_back(*d);
  }
  DeviceGuard guard(api);
  std::vector<std::vector<void*>> bufs(g, std::vector<void*>(packs.size(), nullptr));
  auto free_bufs = [&] {
    for (size_t l = 0; l < g; ++l) {
      (void)api.cuda.SetDevice(devices_[l]);
      for (void*& b : bufs[l]) {
        if (b) (void)api.cuda.FreeAsync(b, streams_[l]);
        b = nullptr;
      }
    }
  };
  auto fail = [&](Status st) {
    free_bufs();
    if (state_ != NcclState::kReady) {
      AbortComms(api, comms_);
      state_ = NcclState::kAborted;
    }
    return st;
  };
  // Pack on our stream, after the callers' streams.
  for (size_t l = 0; l < g; ++l) {
    cudaStream_t s = streams_[l];
    Status st = Cuda(api.cuda.SetDevice(devices_[l]), "cudaSetDevice");
    for (cudaEvent_t e : plan.caller[l]) {
      if (st.ok()) st = Cuda(api.cuda.StreamWaitEvent(s, e, 0), "cudaStreamWaitEvent");
    }
    for (size_t p = 0; p < packs.size() && st.ok(); ++p) {
      if (packs[p].in_place()) continue;
      st = Cuda(api.cuda.MallocAsync(&bufs[l][p], packs[p].bytes, s), "cudaMallocAsync of a pack");
      for (const auto& it : packs[p].items) {
        if (!st.ok()) break;
        st = Cuda(api.cuda.MemcpyAsync(static_cast<char*>(bufs[l][p]) + it.offset,
                                       plan.views[l][it.tensor].data, it.bytes, cudaMemcpyDeviceToDevice, s),
                  "packing (cudaMemcpyAsync)");
      }
    }
    if (!st.ok()) return fail(st);
  }
  // Every pack of every local GPU in one NCCL group.
  state_ = NcclState::kRunning;
  Status st;
  (void)api.nccl.GroupStart();
  for (size_t p = 0; p < packs.size() && st.ok(); ++p) {
    for (size_t l = 0; l < g && st.ok(); ++l) {
      void* buf = packs[p].in_place() ? plan.views[l][packs[p].items[0].tensor].data : bufs[l][p];
      ncclResult_t r = api.nccl.AllReduce(buf, buf, packs[p].count, types[p], *red, comms_[l], streams_[l]);
      if (r != ncclSuccess && r != ncclInProgress) {
        st = InternalError("ncclAllReduce on " + ctx_.names[ctx_.rank] + ": " +
                           NcclErrorText(api, r, comms_[l]));
      }
    }
  }
  ncclResult_t r = api.nccl.GroupEnd();
  if (st.ok() && r != ncclSuccess && r != ncclInProgress) {
    st = InternalError("ncclGroupEnd on " + ctx_.names[ctx_.rank] + ": " + NcclErrorText(api, r));
  }
  if (!st.ok()) return fail(st);
  // Non-blocking: the kernels are enqueued once no comm is in progress.
  st = WaitOrAbort(api, Spec(plan, comms_, {}, true, plan.what));
  if (!st.ok()) return fail(st);
  for (size_t l = 0; l < g && st.ok(); ++l) {
    cudaStream_t s = streams_[l];
    st = Cuda(api.cuda.SetDevice(devices_[l]), "cudaSetDevice");
    for (size_t p = 0; p < packs.size() && st.ok(); ++p) {
      if (packs[p].in_place()) continue;
      for (const auto& it : packs[p].items) {
        if (!st.ok()) break;
        st = Cuda(
            api.cuda.MemcpyAsync(plan.views[l][it.tensor].data, static_cast<char*>(bufs[l][p]) + it.offset,
                                 it.bytes, cudaMemcpyDeviceToDevice, s),
            "unpacking (cudaMemcpyAsync)");
      }
      if (st.ok()) st = Cuda(api.cuda.FreeAsync(bufs[l][p], s), "cudaFreeAsync");
      bufs[l][p] = nullptr;
    }
    if (st.ok()) st = Cuda(api.cuda.EventRecord(done_[l], s), "cudaEventRecord");
  }
  if (!st.ok()) return fail(st);
  st = WaitOrAbort(api, Spec(plan, comms_, done_, false, plan.what));
  if (!st.ok()) return fail(st);
  state_ = NcclState::kReady;
  return OkStatus();
}

Status CudaGpuBackend::RunStaged(Transport& t, CallPlan& plan) {
  const GpuApi& api = *api_.load();
  const size_t g = devices_.size();
  const auto& ref = plan.views[0];
  size_t total = 0;
  for (const auto& v : ref) total += v.bytes();
  const int64_t per_pack =
      plan.options.bytes_per_pack > 0 ? plan.options.bytes_per_pack : AutoBytesPerPack(total, ctx_.streams);
  const auto packs = PlanPacks(ref, per_pack);
  if (packs.empty()) return OkStatus();
  size_t max_bytes = 0;
  for (const auto& p : packs) max_bytes = std::max(max_bytes, p.bytes);
  // Two staging areas (pack k+1 is copied down while pack k is reduced),
  // each one region per local GPU; pinned, and kept for the next call.
  const size_t need = 2 * g * max_bytes;
  DeviceGuard guard(api);
  if (pinned_bytes_ < need) {
    if (pinned_) (void)api.cuda.FreeHost(pinned_);
    pinned_ = nullptr;
    pinned_bytes_ = 0;
    void* p = nullptr;
    RM_RETURN_IF_ERROR(Cuda(api.cuda.SetDevice(devices_[0]), "cudaSetDevice"));
    RM_RETURN_IF_ERROR(Cuda(api.cuda.HostAlloc(&p, need, cudaHostAllocPortable), "cudaHostAlloc of staging"));
    pinned_ = static_cast<char*>(p);
    pinned_bytes_ = need;
  }
  auto area = [&](size_t k, size_t l) { return pinned_ + ((k % 2) * g + l) * max_bytes; };
  for (size_t l = 0; l < g; ++l) {
    RM_RETURN_IF_ERROR(Cuda(api.cuda.SetDevice(devices_[l]), "cudaSetDevice"));
    for (cudaEvent_t e : plan.caller[l]) {
      RM_RETURN_IF_ERROR(Cuda(api.cuda.StreamWaitEvent(streams_[l], e, 0), "cudaStreamWaitEvent"));
    }
  }
  auto copy_down = [&](size_t k) -> Status {
    const size_t a = k % 2;
    for (size_t l = 0; l < g; ++l) {
      cudaStream_t s = streams_[l];
      RM_RETURN_IF_ERROR(Cuda(api.cuda.SetDevice(devices_[l]), "cudaSetDevice"));
      // Area a's region l was last read by pack k-2's copies up, on every
      // GPU (all read region 0): wait for the other GPUs' ones.
      if (k >= 2 && g > 1) {
        for (size_t o = 0; o < g; ++o) {
          if (o != l)
            RM_RETURN_IF_ERROR(Cuda(api.cuda.StreamWaitEvent(s, h2d_[o][a], 0), "cudaStreamWaitEvent"));
        }
      }
      size_t off = 0;
      for (size_t idx : packs[k].tensors) {
        const Tensor& v = plan.views[l][idx];
        RM_RETURN_IF_ERROR(
            Cuda(api.cuda.MemcpyAsync(area(k, l) + off, v.data, v.bytes(), cudaMemcpyDeviceToHost, s),
                 "staging down (cudaMemcpyAsync)"));
        off += v.bytes();
      }
      RM_RETURN_IF_ERROR(Cuda(api.cuda.EventRecord(d2h_[l][a], s), "cudaEventRecord"));
    }
    return OkStatus();
  };
  std::vector<cudaEvent_t> wait(g);
  RM_RETURN_IF_ERROR(copy_down(0));
  for (size_t k = 0; k < packs.size(); ++k) {
    const Pack& p = packs[k];
    const size_t a = k % 2;
    for (size_t l = 0; l < g; ++l) wait[l] = d2h_[l][a];
    RM_RETURN_IF_ERROR(WaitOrAbort(api, Spec(plan, {}, wait, false, plan.what + " (staging down)")));
    if (k + 1 < packs.size()) RM_RETURN_IF_ERROR(copy_down(k + 1));
    char* host = area(k, 0);
    for (size_t l = 1; l < g; ++l) ReduceInto(p.dtype, plan.op, host, area(k, l), p.count);
    // The CPU engine's pack all-reduce across members (NCCL's name means
    // AUTO here: this is the path without NCCL).
    CommunicationOptions o = plan.options;
    if (o.implementation == Implementation::kNccl) o.implementation = Implementation::kAuto;
    const int64_t ranks = static_cast<int64_t>(ctx_.size) * static_cast<int64_t>(g);
    RM_RETURN_IF_ERROR(AllReducePack(t, o, host, p.count, p.dtype, plan.op, ranks));
    for (size_t l = 0; l < g; ++l) {
      cudaStream_t s = streams_[l];
      RM_RETURN_IF_ERROR(Cuda(api.cuda.SetDevice(devices_[l]), "cudaSetDevice"));
      size_t off = 0;
      for (size_t idx : p.tensors) {
        const Tensor& v = plan.views[l][idx];
        RM_RETURN_IF_ERROR(
            Cuda(api.cuda.MemcpyAsync(v.data, host + off, v.bytes(), cudaMemcpyHostToDevice, s),
                 "staging up (cudaMemcpyAsync)"));
        off += v.bytes();
      }
      RM_RETURN_IF_ERROR(Cuda(api.cuda.EventRecord(h2d_[l][a], s), "cudaEventRecord"));
    }
  }
  for (size_t l = 0; l < g; ++l) {
    RM_RETURN_IF_ERROR(Cuda(api.cuda.SetDevice(devices_[l]), "cudaSetDevice"));
    RM_RETURN_IF_ERROR(Cuda(api.cuda.EventRecord(done_[l], streams_[l]), "cudaEventRecord"));
  }
  return WaitOrAbort(api, Spec(plan, {}, done_, false, plan.what + " (staging up)"));
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

}  // namespace

std::unique_ptr<GpuBackend> GpuBackend::Create(const Context& ctx) {
  return std::make_unique<CudaGpuBackend>(ctx);
}

}  // namespace ringmaster::internal
