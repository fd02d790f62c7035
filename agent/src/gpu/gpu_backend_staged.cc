// The GPU backend's host-staged path (cuda_backend.h): without NCCL on
// every member, or with implementation RING, packs are copied down into
// pinned host buffers by one batched copy per pack (double-buffered, so the
// next pack's copy overlaps this one's reduction), reduced across local
// GPUs on the host, all-reduced across members by the CPU engine, and copied
// back up. It starts once the callers' streams have done their work, and a
// failure drains what it queued before the call completes (WaitForCallers,
// Settle).
#include <algorithm>
#include <string>

#include "collectives/collectives.h"
#include "collectives/kernels.h"
#include "collectives/packing.h"
#include "gpu/batched_copy.h"
#include "gpu/cuda_backend.h"

namespace ringmaster::internal::gpu {

Status CudaGpuBackend::RunStaged(Transport& t, CallPlan& plan) {
  RM_RETURN_IF_ERROR(WaitForCallers(plan));
  Status st = EnqueueStaged(t, plan);
  return st.ok() ? st : Settle(plan, st);
}

// Stages every pack down, reduces it on the host and across members, and
// stages it up; returns once the last copy up is done.
Status CudaGpuBackend::EnqueueStaged(Transport& t, CallPlan& plan) {
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
    RM_RETURN_IF_ERROR(Cuda(guard.Set(devices_[0]), "cudaSetDevice"));
    RM_RETURN_IF_ERROR(Cuda(api.cuda.HostAlloc(&p, need, cudaHostAllocPortable), "cudaHostAlloc of staging"));
    pinned_ = static_cast<char*>(p);
    pinned_bytes_ = need;
  }
  auto area = [&](size_t k, size_t l) { return pinned_ + ((k % 2) * g + l) * max_bytes; };
  // Each way, one batched copy per pack and GPU: its small tensors in one
  // kernel launch that reads or writes the pinned area in place, the large
  // ones one DMA each (batched_copy.h).
  std::vector<CopyItem>& copies = copies_;
  for (size_t l = 0; l < g; ++l) tables_[l].BeginCall(2 * ref.size(), 2 * total);
  auto copy_down = [&](size_t k) -> Status {
    const size_t a = k % 2;
    for (size_t l = 0; l < g; ++l) {
      cudaStream_t s = streams_[l];
      RM_RETURN_IF_ERROR(Cuda(guard.Set(devices_[l]), "cudaSetDevice"));
      // Area a's region l was last read by pack k-2's copies up, on every
      // GPU (all read region 0): wait for the other GPUs' ones.
      if (k >= 2 && g > 1) {
        for (size_t o = 0; o < g; ++o) {
          if (o != l)
            RM_RETURN_IF_ERROR(Cuda(api.cuda.StreamWaitEvent(s, h2d_[o][a], 0), "cudaStreamWaitEvent"));
        }
      }
      copies.clear();
      size_t off = 0;
      for (size_t idx : packs[k].tensors) {
        const Tensor& v = plan.views[l][idx];
        copies.push_back({area(k, l) + off, InputOf(v), v.bytes()});
        off += v.bytes();
      }
      if (Status st = BatchedCopy(api, copies, s, devices_[l], &tables_[l], CopyEnds::kDeviceToHost);
          !st.ok())
        return Status(st.code(), "staging down: " + st.message());
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
    const Algorithm algo = ChooseAlgorithm(o, p.bytes, t.size(), plan.group->link());
    RM_RETURN_IF_ERROR(AllReducePack(t, algo, nullptr, host, p.count, p.dtype, plan.op, ranks));
    for (size_t l = 0; l < g; ++l) {
      cudaStream_t s = streams_[l];
      RM_RETURN_IF_ERROR(Cuda(guard.Set(devices_[l]), "cudaSetDevice"));
      copies.clear();
      size_t off = 0;
      for (size_t idx : p.tensors) {
        const Tensor& v = plan.views[l][idx];
        copies.push_back({v.data, host + off, v.bytes()});
        off += v.bytes();
      }
      if (Status st = BatchedCopy(api, copies, s, devices_[l], &tables_[l], CopyEnds::kHostToDevice);
          !st.ok())
        return Status(st.code(), "staging up: " + st.message());
      RM_RETURN_IF_ERROR(Cuda(api.cuda.EventRecord(h2d_[l][a], s), "cudaEventRecord"));
    }
  }
  for (size_t l = 0; l < g; ++l) {
    RM_RETURN_IF_ERROR(Cuda(guard.Set(devices_[l]), "cudaSetDevice"));
    RM_RETURN_IF_ERROR(Cuda(api.cuda.EventRecord(done_[l], streams_[l]), "cudaEventRecord"));
  }
  return WaitOrAbort(api, Spec(plan, {}, done_, false, plan.what + " (staging up)"));
}
}  // namespace ringmaster::internal::gpu
