// rm-bench-gpu's three measurements, each a figure of the agent through its
// public API (ringmaster::Communicator on MemoryKind::kDevice tensors with a
// Tensor::stream) beside a bound measured in the same run, both checked
// byte for byte against a reference computed on the host after the timed
// runs (docs/benchmarks/gpu.md):
//   MeasurePacking: one member, NCCL, many tensors against one
//     device-to-device copy of the same bytes;
//   MeasureLatency: one tensor, one member, NCCL MEAN against a one-rank
//     out-of-place ncclAllReduce with ncclAvg on the NCCL the agent loaded;
//   MeasureStaging: RING host staging, N members sharing GPU 0 (threads,
//     TCP on 127.0.0.1), against the CPU engine's all-reduce of the same
//     bytes in host memory, in the same group.
// The device work of the bench itself goes through BenchDevice: CUDA and
// NCCL on a GPU (cuda_device.cc), or the fake table in tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_check.h"
#include "ringmaster/communicator.h"

namespace rmgpubench {

// The bench's own device work. Every call returns once its work is done,
// and ends the process with a message naming the CUDA or NCCL error.
class BenchDevice {
 public:
  virtual ~BenchDevice() = default;
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  // A non-blocking stream owned by the device (a cudaStream_t).
  virtual void* NewStream() = 0;
  virtual void CopyToDevice(void* dst, const void* src, size_t bytes, void* stream) = 0;
  virtual void CopyToHost(void* dst, const void* src, size_t bytes, void* stream) = 0;
  virtual void CopyOnDevice(void* dst, const void* src, size_t bytes, void* stream) = 0;
  virtual void Fill(void* dst, unsigned char byte, size_t bytes, void* stream) = 0;
  // The bounds, timed as the agent's calls are: from the call until an
  // event recorded after the work has synchronized. Seconds.
  virtual double TimedCopy(void* dst, const void* src, size_t bytes, void* stream) = 0;
  // Before TimedAllReduce, once the agent has made an NCCL call: binds the
  // NCCL library the agent loaded; "" or why not.
  virtual std::string StartAllReduceBound() = 0;
  // A one-rank out-of-place ncclAllReduce of float32 with ncclAvg.
  virtual double TimedAllReduce(const void* src, void* dst, size_t count, void* stream) = 0;
  // The same on a non-blocking communicator (config.blocking = 0, as the
  // agent's), polled with ncclCommGetAsyncError until enqueued: what that
  // mode costs a call in NCCL itself. Negative where there is none.
  virtual double TimedAllReduceNonBlocking(const void*, void*, size_t, void*) { return -1; }
  // "NCCL 2.28.9 (path)", once StartAllReduceBound succeeded.
  virtual std::string BoundLibrary() = 0;
};

struct Plan {
  size_t pack_total_bytes = size_t{64} << 20;
  std::vector<size_t> pack_tensor_bytes = {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20};
  std::vector<size_t> latency_bytes = {4, size_t{16} << 20};
  std::vector<size_t> staging_bytes = {size_t{1} << 20, size_t{16} << 20, size_t{64} << 20};
  int members = 2;
  int iters = 20;           // timed calls per figure (pack, staging)
  int latency_iters = 200;  // timed calls per latency figure
  int warmups = 2;          // untimed calls first, for each figure
  uint64_t seed = 1;
  double timeout_seconds = 120;  // every agent call's, so a broken one fails instead of hanging
};

using Emit = std::function<void(const Row&)>;

// Forms a group of n members on 127.0.0.1 (one thread each), or fails
// naming the member that could not join.
ringmaster::StatusOr<std::vector<std::unique_ptr<ringmaster::Communicator>>> FormLocalGroup(int n);

// Each emits one row per figure; a wrong byte or an error goes in its check.
void MeasurePacking(BenchDevice& dev, ringmaster::Communicator& one, const Plan& plan, const Emit& emit);
void MeasureLatency(BenchDevice& dev, ringmaster::Communicator& one, const Plan& plan, const Emit& emit);
void MeasureStaging(BenchDevice& dev, const Plan& plan, const Emit& emit);

}  // namespace rmgpubench
