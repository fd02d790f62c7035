// Collective algorithms: pure logic over a Transport, so they run over TCP or
// the in-process test transport alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ringmaster/communicator.h"
#include "transport/transport.h"

namespace ringmaster::internal {

// The algorithms are the public ringmaster::Algorithm (comm_options.h):
// CommunicationOptions::algorithm forces one; kAuto is AUTO's choice
// (link_model.h).
inline constexpr size_t kSmallMessageBytes = 64 * 1024;
inline constexpr size_t kMediumMessageBytes = 4 * 1024 * 1024;

struct RingTuning {
  size_t chunk_bytes = 256 * 1024;  // pipeline unit
  int staging_chunks = 4;           // receives in flight per pack
};

// In-place all-reduce of `count` elements (`algo` is never kAuto). MEAN reduces as SUM; the caller
// divides. Any group size, any count (including 0 and < group size).
Status AllReduce(Transport& t, Algorithm algo, void* data, size_t count, DataType dtype, ReduceOp op,
                 const RingTuning& tuning = {});
Status RingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op,
                     const RingTuning& tuning);
// Out of place: reads the input from `src` (null or `data`: in place) and
// leaves the result in `data`, with no pass over the whole buffer of its
// own. Each chunk is copied from `src` just before its one reduction, while
// it is in cache, and the rank's own segment, never reduced here, arrives
// whole in the all-gather. `src` must not overlap `data` unless equal.
Status RingAllReduce(Transport& t, const void* src, void* data, size_t count, DataType dtype, ReduceOp op,
                     const RingTuning& tuning = {});
Status RecursiveDoublingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op);
// Rabenseifner's: reduce-scatter by recursive halving, all-gather by
// recursive doubling; a group size that is not a power of two folds first.
Status HalvingDoublingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op);
// Binomial tree from root.
Status BroadcastBytes(Transport& t, void* data, size_t bytes, int root);
// out holds size() blocks of `block_bytes`; block rank() must hold our input.
Status RingAllGatherBytes(Transport& t, void* out, size_t block_bytes);

// The variable-size collectives (algorithms_v.cc). Block sizes are in
// elements of `dtype`, one per member, and the same on every member (for
// all-to-all: what each pair agrees on); empty blocks send no message.
//
// Ring all-gather: `out` holds block r at offset sum(counts[0..r)); block
// rank() must hold our input already. Step s sends block (rank - s) right and
// receives block (rank - s - 1) from the left, straight into place.
Status RingAllGatherV(Transport& t, void* out, std::span<const int64_t> counts, DataType dtype);
// Pairwise exchange: step k = 1..n-1 receives block (rank - k) from that
// member and sends block (rank + k) to it; our own block is copied locally.
Status PairwiseAllToAll(Transport& t, const void* in, std::span<const int64_t> send_counts, void* out,
                        std::span<const int64_t> recv_counts, DataType dtype);
// Ring reduce-scatter: `in` (sum of counts) is only read; `out` receives
// block rank() of the reduction (MEAN reduces as SUM; the caller divides).
// n - 1 steps; the partial sums travel through two staging blocks.
Status RingReduceScatter(Transport& t, const void* in, std::span<const int64_t> counts, void* out,
                         DataType dtype, ReduceOp op);

}  // namespace ringmaster::internal
