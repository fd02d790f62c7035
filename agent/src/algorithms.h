// Collective algorithms: pure logic over a Transport, so they run over TCP or
// the in-process test transport alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ringmaster/communicator.h"
#include "transport.h"

namespace ringmaster::internal {

// The algorithms are the public ringmaster::Algorithm (comm_options.h):
// CommunicationOptions::algorithm forces one; kAuto means the rule below.

// AUTO's rule: recursive doubling (log2 n rounds, whole message each round)
// while it is latency-bound; for more than two members halving-doubling
// (2 log2 n rounds, bandwidth-optimal) for medium sizes; the pipelined ring
// above that.
Algorithm ChooseAlgorithm(Implementation impl, size_t bytes, int group_size);
// The options' choice: their algorithm override if set, else the rule above.
Algorithm ChooseAlgorithm(const CommunicationOptions& o, size_t bytes, int group_size);
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
Status RecursiveDoublingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op);
// Rabenseifner's: reduce-scatter by recursive halving, all-gather by
// recursive doubling; a group size that is not a power of two folds first.
Status HalvingDoublingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op);
// Binomial tree from root.
Status BroadcastBytes(Transport& t, void* data, size_t bytes, int root);
// out holds size() blocks of `block_bytes`; block rank() must hold our input.
Status RingAllGatherBytes(Transport& t, void* out, size_t block_bytes);

}  // namespace ringmaster::internal
