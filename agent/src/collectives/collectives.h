// What each collective is, as ops for the executor: the packing of an
// all-reduce, broadcast, all-gather and barrier, and the local math of
// Reduce. Pure builders: they validate nothing the engine has not, and
// touch no socket until the executor runs their ops.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "collectives/link_model.h"
#include "collectives/op.h"
#include "ringmaster/communicator.h"
#include "ringmaster/enum_names.h"

namespace ringmaster::internal {

// A dtype or reduce op that came in as a number (the C API, a binding):
// InvalidArgument "FIELD: not a valid dtype: 12 (expected 0..10: ...)".
inline Status CheckDType(DataType d, std::string_view field) {
  return DTypeTable().CheckValue(static_cast<int>(d), field);
}
inline Status CheckOp(ReduceOp o, std::string_view field = "op") {
  return ReduceOpTable().CheckValue(static_cast<int>(o), field);
}

// The one pack all-reduce, shared by the CPU path and the GPU backend's
// host staging: `count` elements in `buf`, reduced across the transport's
// group with `algo` (chosen once per pack by the caller, which records it:
// ChooseAlgorithm); MEAN divides by `ranks` (members x local devices).
// `src` (null: `buf`) is where the input is read from; the ring reads it
// chunk by chunk as it reduces, so an out-of-place call costs no pass of
// its own over the pack (RingAllReduce), the other algorithms copy first.
Status AllReducePack(Transport& t, Algorithm algo, const void* src, void* buf, size_t count, DataType dtype,
                     ReduceOp op, int64_t ranks);

// Host tensors in packs (bytes_per_pack, or the automatic size for
// `streams`): one op per pack, each staging through one buffer of its size
// (none for a pack of one tensor). Options already merged and validated.
std::vector<Op> AllReduceOps(std::span<const Tensor> tensors, ReduceOp op, const CommunicationOptions& merged,
                             int group_size, const LinkModel& link, int streams);
std::vector<Op> BroadcastOps(std::span<const Tensor> tensors, int root);
std::vector<Op> AllGatherOps(const Tensor& in, const Tensor& out, int rank);
std::vector<Op> BarrierOps(int group_size);

// InvalidArgument "<what>: dtype bool cannot be reduced" for a bool tensor
// (bool moves as bytes only); OK otherwise.
Status CheckReducible(std::string_view what, std::span<const Tensor> tensors);

// The variable-size collectives (collectives_v.cc). The Validate* functions
// check a call's shapes and name the wrong argument (InvalidArgument); the
// builders take validated calls (host memory) and return no op when nothing
// moves on any member.
Status ValidateAllGatherV(const Tensor& in, std::span<const int64_t> counts, const Tensor& out, int rank,
                          int size);
Status ValidateAllToAll(const Tensor& in, std::span<const int64_t> send_counts, const Tensor& out,
                        std::span<const int64_t> recv_counts, int size);
Status ValidateReduceScatter(const Tensor& in, std::span<const int64_t> counts, const Tensor& out,
                             ReduceOp op, int rank, int size);
std::vector<Op> AllGatherVOps(const Tensor& in, std::span<const int64_t> counts, const Tensor& out);
std::vector<Op> AllToAllOps(const Tensor& in, std::span<const int64_t> send_counts, const Tensor& out,
                            std::span<const int64_t> recv_counts);
std::vector<Op> ReduceScatterOps(const Tensor& in, std::span<const int64_t> counts, const Tensor& out,
                                 ReduceOp op);

// Reduce's local half: `value` (of `shape`) reduced along `axis` into
// `output` (shape without the axis); MEAN sums here (the caller divides).
// `*len` is the axis's length. InvalidArgument names the argument.
Status ReduceAlongAxis(ReduceOp op, const Tensor& value, std::span<const int64_t> shape, int axis,
                       const Tensor& output, int64_t* len);

}  // namespace ringmaster::internal
