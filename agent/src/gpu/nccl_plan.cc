#include "gpu/nccl_plan.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "collectives/packing.h"
#include "ringmaster/enum_names.h"

namespace ringmaster::internal {

StatusOr<ncclDataType_t> NcclDataType(DataType dtype, int nccl_version) {
  switch (dtype) {
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      if (nccl_version < kNcclVersionBf16AndAvg) {
        return UnimplementedError(
            "bfloat16 on GPU memory needs NCCL 2.10 or later; this process loaded NCCL " +
            NcclVersionText(nccl_version) + " (use implementation RING to stage it)");
      }
      return ncclBfloat16;
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kUInt8:
      return ncclUint8;
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kBool:
      return InvalidArgumentError("dtype " + std::string(DataTypeName(dtype)) +
                                  " has no NCCL type: GPU memory takes it only with implementation RING "
                                  "(staged through host memory), or copy it to host memory");
  }
  return DTypeTable().CheckValue(static_cast<int>(dtype), "dtype");  // out of the table: not OK
}

StatusOr<ncclRedOp_t> NcclRedOp(ReduceOp op, int nccl_version) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMean:
      if (nccl_version < kNcclVersionBf16AndAvg) {
        return UnimplementedError(
            "MEAN on GPU memory needs ncclAvg (NCCL 2.10 or later); this process loaded NCCL " +
            NcclVersionText(nccl_version) + " (use SUM and divide, or implementation RING)");
      }
      return ncclAvg;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kProduct:
      return ncclProd;
  }
  return ReduceOpTable().CheckValue(static_cast<int>(op), "op");  // out of the table: not OK
}

void PlanDevicePacks(std::span<const Tensor> tensors, int64_t bytes_per_pack, std::vector<DevicePack>& out) {
  if (bytes_per_pack <= 0) bytes_per_pack = kAutoDevicePackBytes;
  const auto aligned = [](size_t off) {
    return (off + kDevicePackAlign - 1) / kDevicePackAlign * kDevicePackAlign;
  };
  std::vector<DataType> order;
  for (const auto& t : tensors) {
    if (t.count > 0 && std::find(order.begin(), order.end(), t.dtype) == order.end())
      order.push_back(t.dtype);
  }
  // Packs are reused with their items' buffers: `used` of them so far.
  size_t used = 0;
  auto open_pack = [&](DataType dt) -> DevicePack& {
    if (used == out.size()) out.emplace_back();
    DevicePack& p = out[used++];
    p.dtype = dt;
    p.items.clear();
    p.count = p.bytes = 0;
    return p;
  };
  std::vector<size_t> ends;  // per pack: the end of its last item (unaligned)
  for (DataType dt : order) {
    bool open = false;
    size_t raw = 0;  // the open pack's bytes without gaps (TF's rule counts these)
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      if (t.count <= 0 || t.dtype != dt) continue;
      const size_t bytes = t.bytes();
      const bool alone = static_cast<int64_t>(bytes) >= kDeviceAloneBytes;
      if (!open || alone || static_cast<int64_t>(raw) > bytes_per_pack ||
          aligned(ends.back()) + bytes > kDeviceFusionBytes) {
        open_pack(dt);
        ends.push_back(0);
        raw = 0;
        open = true;
      }
      DevicePack& p = out[used - 1];
      const size_t off = p.items.empty() ? 0 : aligned(ends.back());
      p.items.push_back({i, off, bytes});
      ends.back() = off + bytes;
      raw += bytes;
      if (alone) open = false;  // nothing joins it
    }
  }
  out.resize(used);
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t es = DataTypeSize(out[k].dtype);
    out[k].count = (ends[k] + es - 1) / es;
    out[k].bytes = out[k].count * es;
  }
}

std::vector<DevicePack> PlanDevicePacks(std::span<const Tensor> tensors, int64_t bytes_per_pack) {
  std::vector<DevicePack> out;
  PlanDevicePacks(tensors, bytes_per_pack, out);
  return out;
}

Status CheckDeviceOverlaps(std::span<const Tensor> tensors, std::span<const size_t> indices) {
  struct Span {
    uintptr_t begin, end;
    size_t tensor;
    bool output;
  };
  std::vector<Span> spans;
  spans.reserve(indices.size());
  for (size_t i : indices) {
    const Tensor& t = tensors[i];
    const size_t n = t.bytes();
    if (n == 0) continue;
    const auto out = reinterpret_cast<uintptr_t>(t.data);
    spans.push_back({out, out + n, i, true});
    if (t.source && t.source != t.data) {
      const auto in = reinterpret_cast<uintptr_t>(t.source);
      spans.push_back({in, in + n, i, false});
    }
  }
  // Tensors carved from one buffer in order (a framework's allocator, a
  // model's parameters) come sorted already: checked in one pass.
  const auto by_begin = [](const Span& a, const Span& b) { return a.begin < b.begin; };
  if (!std::is_sorted(spans.begin(), spans.end(), by_begin)) std::sort(spans.begin(), spans.end(), by_begin);
  // Sweep: the open span reaching furthest, of outputs and of inputs alike.
  const Span* far_out = nullptr;
  const Span* far_any = nullptr;
  auto name = [](const Span& s) {
    return "tensors[" + std::to_string(s.tensor) + "]" + (s.output ? "" : ".source");
  };
  for (const Span& s : spans) {
    // An output meets anything open; an input meets only open outputs.
    const Span* hit = s.output ? far_any : far_out;
    if (hit && hit->end > s.begin) {
      return InvalidArgumentError(
          name(s) + " overlaps " + name(*hit) +
          " on the GPU: the outputs of one all-reduce must not share memory with each "
          "other or with another tensor's input");
    }
    if (s.output && (!far_out || s.end > far_out->end)) far_out = &s;
    if (!far_any || s.end > far_any->end) far_any = &s;
  }
  return OkStatus();
}

StatusOr<DeviceSplit> SplitByDevice(std::span<const Tensor> tensors,
                                    const std::function<StatusOr<int>(size_t)>& where) {
  DeviceSplit s;
  std::vector<int> dev(tensors.size(), -1);
  int first_host = -1, first_dev = -1;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].count <= 0) {
      dev[i] = -2;  // empty: belongs nowhere, needs no communication
      continue;
    }
    auto w = where(i);
    if (!w.ok()) return w.status();
    dev[i] = *w;
    if (*w < 0 && first_host < 0) first_host = static_cast<int>(i);
    if (*w >= 0 && first_dev < 0) first_dev = static_cast<int>(i);
  }
  if (first_host >= 0 && first_dev >= 0) {
    return InvalidArgumentError("tensors[" + std::to_string(first_host) + "] is host memory but tensors[" +
                                std::to_string(first_dev) + "] is on GPU " + std::to_string(dev[first_dev]) +
                                ": one call takes either host tensors or GPU tensors, not both");
  }
  if (first_dev < 0) return s;
  s.device = true;
  // The distinct GPUs, few however many tensors: each looked up among them.
  for (int d : dev)
    if (d >= 0 && std::find(s.devices.begin(), s.devices.end(), d) == s.devices.end()) s.devices.push_back(d);
  std::sort(s.devices.begin(), s.devices.end());
  s.per_device.resize(s.devices.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (dev[i] < 0) continue;
    size_t k = std::lower_bound(s.devices.begin(), s.devices.end(), dev[i]) - s.devices.begin();
    s.per_device[k].push_back(i);
  }
  // One replica per GPU: the same tensors, in the same order, on each.
  const auto& ref = s.per_device[0];
  for (size_t k = 1; k < s.devices.size(); ++k) {
    const auto& l = s.per_device[k];
    bool same = l.size() == ref.size();
    size_t bad = 0;
    for (size_t j = 0; same && j < l.size(); ++j) {
      if (tensors[l[j]].dtype != tensors[ref[j]].dtype || tensors[l[j]].count != tensors[ref[j]].count) {
        same = false;
        bad = j;
      }
    }
    if (!same) {
      std::string detail = l.size() != ref.size()
                               ? std::to_string(l.size()) + " tensors against " + std::to_string(ref.size())
                               : "tensors[" + std::to_string(l[bad]) + "] (" +
                                     std::string(DataTypeName(tensors[l[bad]].dtype)) + " x " +
                                     std::to_string(tensors[l[bad]].count) + ") does not match tensors[" +
                                     std::to_string(ref[bad]) + "] (" +
                                     std::string(DataTypeName(tensors[ref[bad]].dtype)) + " x " +
                                     std::to_string(tensors[ref[bad]].count) + ")";
      return InvalidArgumentError(
          "tensors on GPU " + std::to_string(s.devices[k]) + " do not mirror those on GPU " +
          std::to_string(s.devices[0]) + ": " + detail +
          "; with several GPUs every GPU must hold the same tensors, in the same order");
    }
  }
  return s;
}

Status CheckDeviceMembers(std::span<const DeviceMember> members, std::span<const std::string> names) {
  for (size_t r = 1; r < members.size(); ++r) {
    if (members[r].gpus != members[0].gpus) {
      return FailedPreconditionError(
          "every worker must drive the same number of GPUs (ranks = workers x local GPUs): " + names[0] +
          " has " + std::to_string(members[0].gpus) + ", " + names[r] + " has " +
          std::to_string(members[r].gpus));
    }
  }
  return OkStatus();
}

const char* NcclStateName(NcclState s) {
  switch (s) {
    case NcclState::kNone:
      return "none";
    case NcclState::kForming:
      return "forming";
    case NcclState::kReady:
      return "ready";
    case NcclState::kRunning:
      return "running";
    case NcclState::kAborted:
      return "aborted";
  }
  return "invalid";
}

void AbortComms(const GpuApi& api, std::span<ncclComm_t> comms) {
  for (auto& c : comms) {
    if (c) (void)api.nccl.CommAbort(c);
    c = nullptr;
  }
}

Status WaitOrAbort(const GpuApi& api, const WaitSpec& spec) {
  // Polled without sleeping for kSpinFor (a short collective's completion is
  // seen at once), then with sleeps doubling from 20 us to 1 ms.
  constexpr auto kSpinFor = std::chrono::microseconds(200);
  const auto spin_until = Clock::now() + kSpinFor;
  auto sleep = std::chrono::microseconds(20);
  while (true) {
    bool busy = false;
    for (ncclComm_t c : spec.comms) {
      if (!c) continue;
      ncclResult_t state = ncclSuccess;
      ncclResult_t r = api.nccl.CommGetAsyncError(c, &state);
      if (r != ncclSuccess) state = r;
      if (state == ncclInProgress) {
        busy = true;
      } else if (state != ncclSuccess) {
        Status st = InternalError(spec.what + ": NCCL failed: " + NcclErrorText(api, state, c));
        AbortComms(api, spec.comms);
        return st;
      }
    }
    if (!spec.comms_only) {
      for (cudaEvent_t e : spec.events) {
        cudaError_t r = api.cuda.EventQuery(e);
        if (r == cudaErrorNotReady) {
          busy = true;
        } else if (r != cudaSuccess) {
          Status st = InternalError(spec.what + ": CUDA failed: " + CudaErrorText(api, r));
          AbortComms(api, spec.comms);
          return st;
        }
      }
    }
    if (!busy) return OkStatus();
    if (spec.abort_status) {
      if (Status cause = spec.abort_status(); !cause.ok()) {
        AbortComms(api, spec.comms);
        return cause;
      }
    }
    if (Clock::now() >= spec.deadline) {
      AbortComms(api, spec.comms);
      return DeadlineExceededError(spec.what + " did not finish within its timeout; NCCL was aborted");
    }
    if (Clock::now() >= spin_until) {
      std::this_thread::sleep_for(sleep);
      sleep = std::min<std::chrono::microseconds>(sleep * 2, std::chrono::microseconds(1000));
    }
  }
}

}  // namespace ringmaster::internal
