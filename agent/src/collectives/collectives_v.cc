// The variable-size collectives as ops (all-gather-v, all-to-all,
// reduce-scatter) and the checks of their arguments, which name what is
// wrong; the algorithms are in algorithms_v.cc.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/collectives.h"
#include "collectives/kernels.h"

namespace ringmaster::internal {
namespace {

std::string Str(int64_t v) {
  return std::to_string(v);
}

// Every entry >= 0, one per member; *total is their sum.
Status CheckCounts(const char* name, std::span<const int64_t> counts, int size, int64_t* total) {
  if (counts.size() != static_cast<size_t>(size)) {
    return InvalidArgumentError(std::string(name) + " must have size() = " + Str(size) + " entries, got " +
                                Str(static_cast<int64_t>(counts.size())));
  }
  *total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] < 0)
      return InvalidArgumentError(std::string(name) + "[" + Str(int64_t(r)) + "] must be >= 0");
    if (counts[r] > std::numeric_limits<int64_t>::max() - *total)
      return InvalidArgumentError(std::string(name) + ": the sum overflows int64");
    *total += counts[r];
  }
  return OkStatus();
}

Status CheckTensor(const char* name, const Tensor& t) {
  RM_RETURN_IF_ERROR(CheckDType(t.dtype, std::string(name) + ".dtype"));
  if (t.count < 0) return InvalidArgumentError(std::string(name) + ".count must be >= 0");
  if (t.count > 0 && !t.data) return InvalidArgumentError(std::string(name) + ".data is null");
  if (t.source) {
    return InvalidArgumentError(std::string(name) +
                                ".source: only AllReduce reads its input from a separate buffer");
  }
  return OkStatus();
}

Status CheckPair(const Tensor& in, const Tensor& out) {
  RM_RETURN_IF_ERROR(CheckTensor("input", in));
  RM_RETURN_IF_ERROR(CheckTensor("output", out));
  if (in.dtype != out.dtype) {
    return InvalidArgumentError("output.dtype must equal input.dtype (" +
                                std::string(DataTypeName(in.dtype)) + "), got " +
                                std::string(DataTypeName(out.dtype)));
  }
  return OkStatus();
}

Status CheckCount(const char* name, const Tensor& t, const char* what, int64_t want) {
  if (t.count == want) return OkStatus();
  return InvalidArgumentError(std::string(name) + ".count must be " + what + " = " + Str(want) + ", got " +
                              Str(t.count));
}

OpInfo Info(OpKind kind, DataType dtype, uint64_t bytes, const char* algorithm) {
  OpInfo info;
  info.kind = kind;
  info.dtype = dtype;
  info.bytes = bytes;
  info.algorithm = algorithm;
  return info;
}

}  // namespace

Status CheckReducible(std::string_view what, std::span<const Tensor> tensors) {
  for (const auto& t : tensors) {
    if (t.dtype == DataType::kBool)
      return InvalidArgumentError(std::string(what) + ": dtype bool cannot be reduced");
  }
  return OkStatus();
}

Status ValidateAllGatherV(const Tensor& in, std::span<const int64_t> counts, const Tensor& out, int rank,
                          int size) {
  RM_RETURN_IF_ERROR(CheckPair(in, out));
  int64_t total = 0;
  RM_RETURN_IF_ERROR(CheckCounts("counts", counts, size, &total));
  RM_RETURN_IF_ERROR(CheckCount("input", in, "counts[rank]", counts[static_cast<size_t>(rank)]));
  return CheckCount("output", out, "the sum of counts", total);
}

Status ValidateAllToAll(const Tensor& in, std::span<const int64_t> send_counts, const Tensor& out,
                        std::span<const int64_t> recv_counts, int size) {
  RM_RETURN_IF_ERROR(CheckPair(in, out));
  int64_t sent = 0, received = 0;
  RM_RETURN_IF_ERROR(CheckCounts("send_counts", send_counts, size, &sent));
  RM_RETURN_IF_ERROR(CheckCounts("recv_counts", recv_counts, size, &received));
  RM_RETURN_IF_ERROR(CheckCount("input", in, "the sum of send_counts", sent));
  return CheckCount("output", out, "the sum of recv_counts", received);
}

Status ValidateReduceScatter(const Tensor& in, std::span<const int64_t> counts, const Tensor& out,
                             ReduceOp op, int rank, int size) {
  RM_RETURN_IF_ERROR(CheckOp(op));
  RM_RETURN_IF_ERROR(CheckPair(in, out));
  RM_RETURN_IF_ERROR(CheckReducible("reduce-scatter", {&in, 1}));
  int64_t total = 0;
  RM_RETURN_IF_ERROR(CheckCounts("counts", counts, size, &total));
  RM_RETURN_IF_ERROR(CheckCount("input", in, "the sum of counts", total));
  RM_RETURN_IF_ERROR(CheckCount("output", out, "counts[rank]", counts[static_cast<size_t>(rank)]));
  const char* i0 = static_cast<const char*>(in.data);
  const char* o0 = static_cast<const char*>(out.data);
  if (in.count > 0 && out.count > 0 && i0 < o0 + out.bytes() && o0 < i0 + in.bytes())
    return InvalidArgumentError("output must not overlap input");
  return OkStatus();
}

std::vector<Op> AllGatherVOps(const Tensor& in, std::span<const int64_t> counts, const Tensor& out) {
  std::vector<Op> ops;
  if (out.count == 0) return ops;  // the same total on every member: all skip it
  Op op;
  op.info = Info(OpKind::kAllGather, in.dtype, out.bytes(), "ring_v");
  op.what = "all-gather-v";
  op.run = [in, out, counts = std::vector<int64_t>(counts.begin(), counts.end())](Transport& t) {
    int64_t before = 0;
    for (int r = 0; r < t.rank(); ++r) before += counts[static_cast<size_t>(r)];
    char* block = static_cast<char*>(out.data) + static_cast<size_t>(before) * DataTypeSize(in.dtype);
    if (in.count > 0 && block != in.data) std::memmove(block, in.data, in.bytes());
    return RingAllGatherV(t, out.data, counts, in.dtype);
  };
  ops.push_back(std::move(op));
  return ops;
}

std::vector<Op> AllToAllOps(const Tensor& in, std::span<const int64_t> send_counts, const Tensor& out,
                            std::span<const int64_t> recv_counts) {
  // Always one op, even when this member moves nothing: the others may
  // (each pair skips only the messages both sides know are empty), and the
  // collectives' numbering must stay the same on every member.
  std::vector<Op> ops;
  Op op;
  op.info = Info(OpKind::kAllToAll, in.dtype, in.bytes(), "pairwise");
  op.what = "all-to-all";
  op.run = [in, out, sc = std::vector<int64_t>(send_counts.begin(), send_counts.end()),
            rc = std::vector<int64_t>(recv_counts.begin(), recv_counts.end())](Transport& t) {
    return PairwiseAllToAll(t, in.data, sc, out.data, rc, in.dtype);
  };
  ops.push_back(std::move(op));
  return ops;
}

std::vector<Op> ReduceScatterOps(const Tensor& in, std::span<const int64_t> counts, const Tensor& out,
                                 ReduceOp op) {
  std::vector<Op> ops;
  if (in.count == 0) return ops;  // the same total on every member: all skip it
  Op o;
  o.info = Info(OpKind::kReduceScatter, in.dtype, in.bytes(), "ring_v");
  o.what = "reduce-scatter";
  o.run = [in, out, op, counts = std::vector<int64_t>(counts.begin(), counts.end())](Transport& t) {
    RM_RETURN_IF_ERROR(RingReduceScatter(t, in.data, counts, out.data, in.dtype, op));
    if (op == ReduceOp::kMean && t.size() > 1)
      DivideBy(in.dtype, out.data, static_cast<size_t>(out.count), t.size());
    return OkStatus();
  };
  ops.push_back(std::move(o));
  return ops;
}

}  // namespace ringmaster::internal
