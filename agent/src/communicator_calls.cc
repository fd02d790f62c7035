// The communicator's collective calls: each call's options merged over the
// job's and checked once, its tensors checked, its ops built (collectives.h,
// or the GPU backend's) and submitted to the executor.
#include <algorithm>
#include <cstring>

#include "agent_log.h"
#include "collectives/collectives.h"
#include "collectives/dtype_visit.h"
#include "collectives/kernels.h"
#include "collectives/subgroup.h"
#include "communicator_impl.h"
#include "gpu/gpu_backend.h"

namespace ringmaster::internal {

StatusOr<CommunicationOptions> CommunicatorImpl::Resolve(const CommunicationOptions& o,
                                                         std::span<const Tensor> tensors, bool* device) {
  // The per-call options enter here (C++ callers, and the C API's, which
  // only converts): checked once. The job's defaults were checked when read
  // (CommunicationOptions::FromEnv), and merging valid options keeps them so.
  RM_RETURN_IF_ERROR(o.Validate());
  CommunicationOptions merged = settings_.defaults.Merge(o);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    // The field's name is made only for an error: a call of thousands of
    // tensors pays nothing per tensor for it.
    auto where = [i] { return "tensors[" + std::to_string(i) + "]"; };
    if (!CheckDType(t.dtype, "dtype").ok()) return CheckDType(t.dtype, where() + ".dtype");
    if (t.count < 0) return InvalidArgumentError(where() + ".count must be >= 0");
    if (t.count > 0 && !t.data) return InvalidArgumentError(where() + ".data is null");
    if (t.memory != MemoryKind::kHost && t.memory != MemoryKind::kDevice) {
      return InvalidArgumentError(where() + ".memory: unknown memory kind");
    }
    if (t.source && !device) {
      return InvalidArgumentError(where() + ".source: only AllReduce reads its input from a separate buffer");
    }
  }
  // GPU memory is recognised per tensor (gpu/gpu_backend.h); a call takes
  // host tensors or GPU tensors, never both.
  auto on_gpu = root().gpu_->IsDeviceCall(tensors);
  if (!on_gpu.ok()) return on_gpu.status();
  if (*on_gpu && parent_) {
    return UnimplementedError("process set " + std::to_string(set_id_) +
                              ": GPU memory is not supported in process sets yet (copy to host memory)");
  }
  if (*on_gpu && root().size_ != static_cast<int>(root().config_names_.size())) {
    // The GPU backend's communicator spans TF_CONFIG's members.
    return UnimplementedError("GPU memory: the group formed with " + std::to_string(root().size_) + " of " +
                              std::to_string(root().config_names_.size()) +
                              " members (elastic size); GPU collectives need all of them so far (copy to "
                              "host memory)");
  }
  if (*on_gpu) {
    if (!device) {
      return UnimplementedError(
          "GPU memory: only AllReduce takes GPU tensors so far (copy them to host memory for broadcast, "
          "all-gather and reduce)");
    }
    *device = true;
    return merged;
  }
  if (!host_choice_logged_.exchange(true)) {
    DebugLog(std::string(ImplementationName(merged.implementation)) + " on host memory: the CPU engine");
  }
  if (merged.implementation == Implementation::kNccl) {
    if (!nccl_warned_.exchange(true))
      Warn("implementation NCCL was requested for host memory; running RING instead");
    merged.implementation = Implementation::kRing;
  }
  return merged;
}

CollectiveHandle CommunicatorImpl::Submit(const std::shared_ptr<Executor>& ex, std::vector<Op> ops,
                                          const CommunicationOptions& o, const std::string& what, bool sync) {
  if (!ex) return Executor::Failed(NotFormed());
  const Deadline deadline = DeadlineAfter(o.EffectiveTimeout().value_or(0));
  if (!parent_) return ex->Submit(std::move(ops), deadline, what, sync);
  // A process set: its members become ranks 0..n-1 of the ops' transport.
  for (auto& op : ops) {
    op.run = [run = std::move(op.run), members = members_](Transport& t) {
      SubgroupTransport sub(t, members);
      return run(sub);
    };
  }
  return ex->SubmitToSet(wire_key_, std::move(ops), deadline,
                         "process set " + std::to_string(set_id_) + ": " + what, sync);
}

CollectiveHandle CommunicatorImpl::AllReduceAsync(std::span<const Tensor> tensors, ReduceOp op,
                                                  const CommunicationOptions& o, bool sync) {
  if (Status st = CheckOp(op); !st.ok()) return Executor::Failed(st);
  bool device = false;
  auto merged = Resolve(o, tensors, &device);
  if (!merged.ok()) return Executor::Failed(merged.status());
  if (Status st = CheckReducible("all-reduce", tensors); !st.ok()) return Executor::Failed(st);
  // One formation for building the ops (its link model) and running them.
  auto ex = executor();
  if (!ex) return Executor::Failed(NotFormed());
  if (device) {
    auto gpu_ops = gpu_->AllReduceOps(tensors, op, *merged, ex->group());
    if (!gpu_ops.ok()) return Executor::Failed(gpu_ops.status());
    return Submit(ex, std::move(*gpu_ops), *merged,
                  "all-reduce of " + std::to_string(tensors.size()) + " GPU tensors", sync);
  }
  return Submit(ex, AllReduceOps(tensors, op, *merged, size_, ex->group()->link(), settings_.streams),
                *merged, "all-reduce of " + std::to_string(tensors.size()) + " tensors", sync);
}

CollectiveHandle CommunicatorImpl::BroadcastAsync(std::span<const Tensor> tensors, int root,
                                                  const CommunicationOptions& o, bool sync) {
  if (root < 0 || root >= size_) {
    return Executor::Failed(InvalidArgumentError("root: " + std::to_string(root) +
                                                 " is not a rank of the group (size " +
                                                 std::to_string(size_) + ")"));
  }
  auto merged = Resolve(o, tensors);
  if (!merged.ok()) return Executor::Failed(merged.status());
  auto ops = BroadcastOps(tensors, root);
  for (auto& op : ops) op.info.timeout_s = merged->EffectiveTimeout().value_or(0);
  return Submit(executor(), std::move(ops), *merged, "broadcast from " + names_[root], sync);
}

CollectiveHandle CommunicatorImpl::AllGatherAsync(const Tensor& in, const Tensor& out,
                                                  const CommunicationOptions& o, bool sync) {
  Tensor both[2] = {in, out};
  auto merged = Resolve(o, both);
  if (!merged.ok()) return Executor::Failed(merged.status());
  if (in.dtype != out.dtype)
    return Executor::Failed(InvalidArgumentError("output.dtype must equal input.dtype"));
  if (out.count != in.count * size_) {
    return Executor::Failed(InvalidArgumentError(
        "output.count must be size() * input.count = " + std::to_string(in.count * size_) + ", got " +
        std::to_string(out.count)));
  }
  auto ops = AllGatherOps(in, out, rank_);
  for (auto& op : ops) op.info.timeout_s = merged->EffectiveTimeout().value_or(0);
  return Submit(executor(), std::move(ops), *merged, "all-gather", sync);
}

CollectiveHandle CommunicatorImpl::BarrierAsync(const CommunicationOptions& o, bool sync) {
  auto merged = Resolve(o, {});
  if (!merged.ok()) return Executor::Failed(merged.status());
  auto ops = BarrierOps(size_);
  for (auto& op : ops) op.info.timeout_s = merged->EffectiveTimeout().value_or(0);
  return Submit(executor(), std::move(ops), *merged, "barrier", sync);
}

StatusOr<CommunicationOptions> CommunicatorImpl::ResolveHost(const char* what, const CommunicationOptions& o,
                                                             const Tensor& in, const Tensor& out) {
  const auto gpu = [&] {
    return InvalidArgumentError(std::string(what) +
                                ": host memory only (copy GPU tensors to host memory first)");
  };
  if (in.memory == MemoryKind::kDevice || out.memory == MemoryKind::kDevice) return gpu();
  const Tensor both[2] = {in, out};
  bool device = false;
  auto merged = Resolve(o, both, &device);
  if (merged.ok() && device) return gpu();
  return merged;
}

CollectiveHandle CommunicatorImpl::AllGatherVAsync(const Tensor& in, std::span<const int64_t> counts,
                                                   const Tensor& out, const CommunicationOptions& o) {
  if (Status st = ValidateAllGatherV(in, counts, out, rank_, size_); !st.ok()) return Executor::Failed(st);
  auto merged = ResolveHost("all-gather-v", o, in, out);
  if (!merged.ok()) return Executor::Failed(merged.status());
  auto ops = AllGatherVOps(in, counts, out);
  for (auto& op : ops) op.info.timeout_s = merged->EffectiveTimeout().value_or(0);
  return Submit(executor(), std::move(ops), *merged, "all-gather-v");
}

CollectiveHandle CommunicatorImpl::AllToAllAsync(const Tensor& in, std::span<const int64_t> send_counts,
                                                 const Tensor& out, std::span<const int64_t> recv_counts,
                                                 const CommunicationOptions& o) {
  if (Status st = ValidateAllToAll(in, send_counts, out, recv_counts, size_); !st.ok())
    return Executor::Failed(st);
  auto merged = ResolveHost("all-to-all", o, in, out);
  if (!merged.ok()) return Executor::Failed(merged.status());
  auto ops = AllToAllOps(in, send_counts, out, recv_counts);
  for (auto& op : ops) op.info.timeout_s = merged->EffectiveTimeout().value_or(0);
  return Submit(executor(), std::move(ops), *merged, "all-to-all");
}

CollectiveHandle CommunicatorImpl::ReduceScatterAsync(const Tensor& in, std::span<const int64_t> counts,
                                                      const Tensor& out, ReduceOp op,
                                                      const CommunicationOptions& o) {
  if (Status st = ValidateReduceScatter(in, counts, out, op, rank_, size_); !st.ok())
    return Executor::Failed(st);
  auto merged = ResolveHost("reduce-scatter", o, in, out);
  if (!merged.ok()) return Executor::Failed(merged.status());
  auto ops = ReduceScatterOps(in, counts, out, op);
  for (auto& x : ops) x.info.timeout_s = merged->EffectiveTimeout().value_or(0);
  return Submit(executor(), std::move(ops), *merged, "reduce-scatter");
}

// strategy.reduce: the one place that reduces along an axis (the Python
// package's reduce, NumPy's and TensorFlow's, calls it through rm_reduce).
Status CommunicatorImpl::Reduce(ReduceOp op, const Tensor& value, std::span<const int64_t> shape,
                                std::optional<int> axis, const Tensor& output,
                                const CommunicationOptions& o) {
  RM_RETURN_IF_ERROR(CheckOp(op));
  RM_RETURN_IF_ERROR(CheckDType(value.dtype, "value.dtype"));
  RM_RETURN_IF_ERROR(CheckReducible("reduce", {&value, 1}));
  if (output.dtype != value.dtype) return InvalidArgumentError("output.dtype must equal value.dtype");
  int64_t elems = 1;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgumentError("shape: dimensions must be >= 0");
    elems *= d;
  }
  if (elems != value.count) {
    return InvalidArgumentError("value.count " + std::to_string(value.count) + " does not match shape (" +
                                std::to_string(elems) + " elements)");
  }
  if (value.memory != MemoryKind::kHost || output.memory != MemoryKind::kHost) {
    return UnimplementedError("Reduce: GPU memory is not supported yet (AllReduce takes GPU tensors)");
  }
  Tensor t = output;
  if (!axis) {
    if (output.count != value.count)
      return InvalidArgumentError("output.count must equal value.count without axis");
    if (output.data != value.data && value.count > 0) std::memmove(output.data, value.data, value.bytes());
    return AllReduceAsync({&t, 1}, op, o, /*sync=*/true).Wait();
  }
  int64_t len = 0;
  RM_RETURN_IF_ERROR(ReduceAlongAxis(op, value, shape, *axis, output, &len));
  if (op != ReduceOp::kMean) return AllReduceAsync({&t, 1}, op, o, /*sync=*/true).Wait();
  // MEAN: the global sum over the global element count along the axis, so a
  // short last batch on one member weighs right.
  int64_t n = len;
  Tensor parts[2] = {t, Tensor{&n, 1, DataType::kInt64}};
  RM_RETURN_IF_ERROR(AllReduceAsync(parts, ReduceOp::kSum, o, /*sync=*/true).Wait());
  const bool floating = VisitDType(
      value.dtype, [](auto tag) { return decltype(tag)::kFloating; }, [] { return false; });
  if (n == 0 && !floating) {  // integers: 0 / 0 (floats: NaN)
    return FailedPreconditionError("Reduce: MEAN over an empty axis on every member");
  }
  DivideBy(value.dtype, output.data, static_cast<size_t>(output.count), n);
  return OkStatus();
}

}  // namespace ringmaster::internal
