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
Status RecursiveDoublingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op);
// Rabenseifner's: reduce-scatter by recursive halving, all-gather by
// recursive doubling; a group size that is not a power of two folds first.
Status HalvingDoublingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op);
// Binomial tree from root.
Status BroadcastBytes(Transport& t, void* data, size_t bytes, int root);
// out holds size() blocks of `block_bytes`; block rank() must hold our input.
Status RingAllGatherBytes(Transport& t, void* out, size_t block_bytes);

}  // namespace ringmaster::internal
