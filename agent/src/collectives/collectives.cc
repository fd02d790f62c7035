#include "collectives/collectives.h"

#include <cstring>
#include <memory>

#include "collectives/algorithms.h"
#include "collectives/kernels.h"
#include "collectives/packing.h"

namespace ringmaster::internal {

Status AllReducePack(Transport& t, Algorithm algo, const void* src, void* buf, size_t count, DataType dtype,
                     ReduceOp op, int64_t ranks) {
  if (t.size() > 1 && algo == Algorithm::kRing && count > 0) {
    RM_RETURN_IF_ERROR(RingAllReduce(t, src, buf, count, dtype, op));
  } else {
    if (src != nullptr && src != buf) std::memcpy(buf, src, count * DataTypeSize(dtype));
    if (t.size() > 1) RM_RETURN_IF_ERROR(AllReduce(t, algo, buf, count, dtype, op));
  }
  if (op == ReduceOp::kMean && ranks > 1) DivideBy(dtype, buf, count, ranks);
  return OkStatus();
}

std::vector<Op> AllReduceOps(std::span<const Tensor> tensors, ReduceOp op, const CommunicationOptions& merged,
                             int group_size, const LinkModel& link, int streams) {
  size_t total = 0;
  for (const auto& t : tensors) total += t.count > 0 ? t.bytes() : 0;
  const int64_t per_pack =
      merged.bytes_per_pack > 0 ? merged.bytes_per_pack : AutoBytesPerPack(total, streams);
  const auto packs = PlanPacks(tensors, per_pack, merged.bytes_per_pack > 0 ? 0 : kAloneFromBytes);
  const double timeout_s = merged.EffectiveTimeout().value_or(0);
  std::vector<Op> ops;
  for (size_t pi = 0; pi < packs.size(); ++pi) {
    // Chosen once: what the flight recorder and the timeline show is what runs.
    const Algorithm algo = ChooseAlgorithm(merged, packs[pi].bytes, group_size, link);
    Op o;
    o.info = {
        OpKind::kAllReduce, static_cast<int32_t>(pi), static_cast<int32_t>(packs.size()),
        packs[pi].dtype,    packs[pi].bytes,          group_size > 1 ? AlgorithmName(algo).data() : "local",
        timeout_s};
    o.what = "all-reduce pack " + std::to_string(pi) + " of " + std::to_string(packs.size());
    std::vector<Tensor> views;
    for (size_t idx : packs[pi].tensors) views.push_back(tensors[idx]);
    o.run = [views = std::move(views), pack = packs[pi], op, algo, group_size](Transport& t) -> Status {
      auto input = [](const Tensor& v) { return v.source ? v.source : v.data; };
      char* buf;
      const void* src = nullptr;  // a lone tensor's input, read in place by AllReducePack
      std::unique_ptr<char[]> staging;
      if (views.size() == 1) {  // in place: the tensor, or its slice
        const size_t at = pack.first * DataTypeSize(pack.dtype);
        buf = static_cast<char*>(views[0].data) + at;
        src = static_cast<const char*>(input(views[0])) + at;
      } else {
        // The one staging buffer of this pack, alive only while it runs.
        staging.reset(new char[pack.bytes]);
        buf = staging.get();
        size_t off = 0;
        for (const auto& v : views) {
          std::memcpy(buf + off, input(v), v.bytes());
          off += v.bytes();
        }
      }
      RM_RETURN_IF_ERROR(AllReducePack(t, algo, src, buf, pack.count, pack.dtype, op, group_size));
      if (staging) {
        size_t off = 0;
        for (const auto& v : views) {
          std::memcpy(v.data, buf + off, v.bytes());
          off += v.bytes();
        }
      }
      return OkStatus();
    };
    ops.push_back(std::move(o));
  }
  return ops;
}

std::vector<Op> BroadcastOps(std::span<const Tensor> tensors, int root) {
  std::vector<Op> ops;
  for (const auto& tensor : tensors) {
    if (tensor.count <= 0) continue;
    Op op;
    op.info.kind = OpKind::kBroadcast;
    op.info.dtype = tensor.dtype;
    op.info.bytes = tensor.bytes();
    op.info.algorithm = "binomial_tree";
    op.run = [tensor, root](Transport& t) { return BroadcastBytes(t, tensor.data, tensor.bytes(), root); };
    ops.push_back(std::move(op));
  }
  return ops;
}

std::vector<Op> AllGatherOps(const Tensor& in, const Tensor& out, int rank) {
  std::vector<Op> ops;
  if (in.count <= 0) return ops;
  Op op;
  op.info.kind = OpKind::kAllGather;
  op.info.dtype = in.dtype;
  op.info.bytes = in.bytes();
  op.info.algorithm = "ring";
  op.run = [in, out, rank](Transport& t) {
    char* block = static_cast<char*>(out.data) + static_cast<size_t>(rank) * in.bytes();
    if (block != in.data) std::memmove(block, in.data, in.bytes());
    return RingAllGatherBytes(t, out.data, in.bytes());
  };
  ops.push_back(std::move(op));
  return ops;
}

std::vector<Op> BarrierOps(int group_size) {
  std::vector<Op> ops;
  if (group_size <= 1) return ops;
  Op op;
  op.info.kind = OpKind::kBarrier;
  op.info.dtype = DataType::kInt32;
  op.info.bytes = 4;
  op.info.algorithm = "recursive_doubling";
  op.run = [](Transport& t) {
    int32_t one = 1;
    return RecursiveDoublingAllReduce(t, &one, 1, DataType::kInt32, ReduceOp::kSum);
  };
  ops.push_back(std::move(op));
  return ops;
}

Status ReduceAlongAxis(ReduceOp op, const Tensor& value, std::span<const int64_t> shape, int axis,
                       const Tensor& output, int64_t* len_out) {
  const int rank_count = static_cast<int>(shape.size());
  const int a = axis < 0 ? axis + rank_count : axis;
  if (a < 0 || a >= rank_count) {
    return InvalidArgumentError("axis " + std::to_string(axis) + " is out of range for a rank-" +
                                std::to_string(rank_count) + " value");
  }
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= shape[i];
  for (int i = a + 1; i < rank_count; ++i) inner *= shape[i];
  const int64_t len = shape[a];
  if (output.count != outer * inner) {
    return InvalidArgumentError("output.count must be " + std::to_string(outer * inner) +
                                " (shape without axis " + std::to_string(a) + "), got " +
                                std::to_string(output.count));
  }
  *len_out = len;
  const size_t es = DataTypeSize(value.dtype);
  const char* in = static_cast<const char*>(value.data);
  char* out = static_cast<char*>(output.data);
  if (len == 0) {
    FillIdentity(value.dtype, op, out, static_cast<size_t>(outer * inner));
    return OkStatus();
  }
  for (int64_t o = 0; o < outer; ++o) {
    char* dst = out + static_cast<size_t>(o * inner) * es;
    std::memcpy(dst, in + static_cast<size_t>(o * len * inner) * es, static_cast<size_t>(inner) * es);
    for (int64_t j = 1; j < len; ++j) {
      ReduceInto(value.dtype, op, dst, in + static_cast<size_t>((o * len + j) * inner) * es,
                 static_cast<size_t>(inner));
    }
  }
  return OkStatus();
}

}  // namespace ringmaster::internal
