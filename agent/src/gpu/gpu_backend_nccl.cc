// The GPU backend's NCCL path (cuda_backend.h): forming the device group
// (every member's GPU count and NCCL availability, exchanged over the CPU
// engine; both paths start here), forming the NCCL communicators (rank 0's
// ncclUniqueId broadcast the same way), and one all-reduce through NCCL,
// packed on our streams and polled so it can be aborted.
#include <cstdio>
#include <cstring>
#include <string>

#include "collectives/algorithms.h"
#include "gpu/batched_copy.h"
#include "gpu/cuda_backend.h"

namespace ringmaster::internal::gpu {

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
  fusion_.assign(g, nullptr);
  tables_.assign(g, CopyTable{});
  {
    std::lock_guard<std::mutex> lock(mu_);
    devices_ = plan.devices;  // DestroyDeviceResources frees per device
  }
  std::string fusion_error;
  for (size_t l = 0; l < g; ++l) {
    RM_RETURN_IF_ERROR(Cuda(guard.Set(plan.devices[l]), "cudaSetDevice"));
    // Non-blocking: our copies never wait for (or hold up) the legacy stream.
    RM_RETURN_IF_ERROR(
        Cuda(api.cuda.StreamCreateWithFlags(&streams_[l], cudaStreamNonBlocking), "cudaStreamCreate"));
    for (cudaEvent_t* e : {&done_[l], &d2h_[l][0], &d2h_[l][1], &h2d_[l][0], &h2d_[l][1]}) {
      RM_RETURN_IF_ERROR(Cuda(api.cuda.EventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate"));
    }
    // The fusion buffer, once per formation (only NCCL packs into it).
    if (api.have_nccl && fusion_error.empty()) {
      void* p = nullptr;
      if (cudaError_t e = api.cuda.MallocAsync(&p, kDeviceFusionBytes, streams_[l]); e != cudaSuccess) {
        (void)api.cuda.GetLastError();
        fusion_error = "GPU " + std::to_string(plan.devices[l]) + ": " + CudaErrorText(api, e);
      } else {
        fusion_[l] = static_cast<char*>(p);
      }
    }
  }
  std::vector<DeviceMember> all(ctx_.size);
  all[ctx_.rank] = {static_cast<int32_t>(g), api.have_nccl ? 1 : 0, fusion_error.empty() ? 0 : 1};
  if (ctx_.size > 1) RM_RETURN_IF_ERROR(RingAllGatherBytes(t, all.data(), sizeof(DeviceMember)));
  if (Status st = CheckDeviceMembers(all, ctx_.names); !st.ok()) {
    plan.failed_alike = true;  // every member holds the same answers
    return st;
  }
  nccl_everywhere_ = true;
  nccl_missing_.clear();
  fusion_missing_.clear();
  for (int r = 0; r < ctx_.size; ++r) {
    if (all[r].fusion_failed) {
      fusion_missing_ += (fusion_missing_.empty() ? "" : ", ") + ctx_.names[r] +
                         (r == ctx_.rank ? " (" + fusion_error + ")" : "");
    }
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
    st = Cuda(guard.Set(devices_[l]), "cudaSetDevice");
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
  RM_RETURN_IF_ERROR(WaitForCallers(plan));
  Status st = EnqueueNccl(plan);
  if (st.ok()) st = WaitOrAbort(*plan.api, Spec(plan, comms_, done_, false, plan.what));
  if (!st.ok()) return Settle(plan, st);
  state_ = NcclState::kReady;
  return OkStatus();
}

// Queues the call on our streams: per pack, the packed tensors copied into
// the fusion buffer (one batched copy: batched_copy.h), one ncclAllReduce per local GPU in one NCCL group
// (a lone tensor reduced where it lies, from its source if it has one), the
// results copied back out; then each GPU's `done_`. Stream order keeps a
// pack's use of the fusion buffer after the previous pack's copies out.
Status CudaGpuBackend::EnqueueNccl(CallPlan& plan) {
  const GpuApi& api = *plan.api;
  const size_t g = devices_.size();
  std::vector<DevicePack>& packs = packs_;  // kept: a call of many tensors allocates nothing per tensor
  PlanDevicePacks(plan.views[0], plan.options.bytes_per_pack, packs);
  auto red = NcclRedOp(plan.op, api.nccl_version);
  if (!red.ok()) return red.status();
  DeviceGuard guard(api);
  state_ = NcclState::kRunning;
  std::vector<CopyItem>& copies = copies_;  // one pack's, per GPU: one batched copy each way
  // Each packed tensor is copied in once and out once.
  size_t packed = 0, packed_bytes = 0;
  for (const DevicePack& pack : packs) {
    if (pack.lone()) continue;
    packed += pack.items.size();
    for (const auto& it : pack.items) packed_bytes += it.bytes;
  }
  for (size_t l = 0; l < g; ++l) tables_[l].BeginCall(2 * packed, 2 * packed_bytes);
  for (const DevicePack& pack : packs) {
    auto type = NcclDataType(pack.dtype, api.nccl_version);
    if (!type.ok()) return type.status();
    for (size_t l = 0; l < g && !pack.lone(); ++l) {
      RM_RETURN_IF_ERROR(Cuda(guard.Set(devices_[l]), "cudaSetDevice"));
      copies.clear();
      for (const auto& it : pack.items)
        copies.push_back({fusion_[l] + it.offset, InputOf(plan.views[l][it.tensor]), it.bytes});
      RM_RETURN_IF_ERROR(BatchedCopy(api, copies, streams_[l], devices_[l], &tables_[l]));
    }
    Status st;
    (void)api.nccl.GroupStart();
    for (size_t l = 0; l < g && st.ok(); ++l) {
      const Tensor& lone = plan.views[l][pack.items[0].tensor];
      const void* send = pack.lone() ? InputOf(lone) : fusion_[l];
      void* recv = pack.lone() ? lone.data : fusion_[l];
      ncclResult_t r = api.nccl.AllReduce(send, recv, pack.count, *type, *red, comms_[l], streams_[l]);
      if (r != ncclSuccess && r != ncclInProgress) {
        st = InternalError("ncclAllReduce on " + ctx_.names[ctx_.rank] + ": " +
                           NcclErrorText(api, r, comms_[l]));
      }
    }
    ncclResult_t r = api.nccl.GroupEnd();
    if (st.ok() && r != ncclSuccess && r != ncclInProgress) {
      st = InternalError("ncclGroupEnd on " + ctx_.names[ctx_.rank] + ": " + NcclErrorText(api, r));
    }
    RM_RETURN_IF_ERROR(st);
    // Non-blocking: the group is enqueued once no comm is in progress, and
    // NCCL takes no other call on a comm before that.
    RM_RETURN_IF_ERROR(WaitOrAbort(api, Spec(plan, comms_, {}, true, plan.what)));
    for (size_t l = 0; l < g && !pack.lone(); ++l) {
      RM_RETURN_IF_ERROR(Cuda(guard.Set(devices_[l]), "cudaSetDevice"));
      copies.clear();
      for (const auto& it : pack.items)
        copies.push_back({plan.views[l][it.tensor].data, fusion_[l] + it.offset, it.bytes});
      RM_RETURN_IF_ERROR(BatchedCopy(api, copies, streams_[l], devices_[l], &tables_[l]));
    }
  }
  for (size_t l = 0; l < g; ++l) {
    RM_RETURN_IF_ERROR(Cuda(guard.Set(devices_[l]), "cudaSetDevice"));
    RM_RETURN_IF_ERROR(Cuda(api.cuda.EventRecord(done_[l], streams_[l]), "cudaEventRecord"));
  }
  return OkStatus();
}

}  // namespace ringmaster::internal::gpu
