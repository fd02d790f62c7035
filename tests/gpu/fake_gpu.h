// A fake CUDA runtime, driver and NCCL for the agent's GpuApi table, for tests on
// machines without a GPU, strict enough to fail the way the real ones fail:
//   - device memory is mapped PROT_NONE where the host sees it: host code
//     that reads or writes it crashes, as on a real GPU; queued work reaches
//     it through a second mapping, and work that touches memory that is not
//     live device memory is recorded as a violation (Violations());
//   - streams are queues that one worker thread (the "GPU") drains later,
//     so queued and done differ; the legacy default stream of each device
//     orders after (and before) that device's blocking streams;
//   - streams, events and NCCL communicators belong to a device: recording
//     an event of one device on a stream of another fails, as does NCCL on a
//     stream or buffer of another device (CUDA's and NCCL's rules);
//   - the runtime makes a context on the current device when a call needs
//     one (cudaSetDevice included, as CUDA 12 does); HasContext() says which;
//   - a stream can capture a CUDA graph: work queued on it then never runs,
//     and a stream that waits on an event recorded in a capture joins it;
//   - the agent's batched copy kernel loads from its embedded image (compute
//     capability 9.0) and runs on the host, reading the launch's parameter
//     struct; launched on a stream of another device than the current one,
//     it fails as CUDA's kernels do;
//   - non-blocking NCCL communicators answer ncclInProgress after init and
//     after each group, and refuse another call until polled to success;
//     ncclCommAbort waits until every collective of the communicator that
//     is queued has started (so it hangs behind a stream that never
//     progresses, as the real one does).
// An NCCL all-reduce completes when every rank of its communicator (in any
// thread of this process) has reached it, reduced with the CPU engine's
// kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/gpu_api.h"

namespace ringmaster::fake {

struct Stats {
  int comm_inits = 0;
  int comm_aborts = 0;
  int comm_destroys = 0;
  int allreduces = 0;  // ncclAllReduce calls
  int group_starts = 0;
  int host_allocs = 0;  // cudaHostAlloc (staging)
  int d2d_copies = 0, d2h_copies = 0, h2d_copies = 0;
  int stream_waits = 0;     // cudaStreamWaitEvent
  int events_created = 0;   // cudaEventCreateWithFlags
  int kernel_launches = 0;  // the batched copy kernels'
  int table_launches = 0;   // of which the table form's
  int device_allocs = 0;    // cudaMallocAsync calls by the agent
  size_t agent_bytes = 0;   // device memory the agent holds now
  size_t peak_agent_bytes = 0;
  int unique_ids = 0;
  int pointer_queries = 0;  // cudaPointerGetAttributes
  int range_queries = 0;    // cuMemGetAddressRange (the allocation a pointer lies in)
};

// The agent loads the fake as it loads the real libraries: the test
// executable links the fake's library (fake_cuda_library.cc, soname
// libcuda.so.1), which RINGMASTER_CUDART_LIBRARY and RINGMASTER_NCCL_LIBRARY
// name from before main(); its calls come to this fake.
//
// Resets the fake (devices 0..devices-1, NCCL of `nccl_version`, or none)
// and starts its worker; Uninstall() stops the worker. The agent loads its
// table once per process, so NCCL's presence and version are the first
// Install's, and a batched copy kernel turned off stays off: a later Install
// that asks otherwise aborts, naming why (ctest runs each case alone).
void Install(int devices = 2, bool with_nccl = true, int nccl_version = 22703);
void Uninstall();
Stats GetStats();

// Device memory of the fake on `device` (freed by Install/Uninstall). The
// host cannot touch it: use Upload/Download, which wait for nothing.
void* DeviceAlloc(int device, size_t bytes);
void Upload(void* device_ptr, const void* host, size_t bytes);
void Download(void* host, const void* device_ptr, size_t bytes);

// A caller's stream on `device` (blocking: it orders with the legacy
// default stream, as cudaStreamCreate's do).
cudaStream_t NewStream(int device, bool blocking = false);
// Queues a task on `s` that holds it (and everything queued after it)
// until ReleaseStream(s).
void HoldStream(cudaStream_t s);
void ReleaseStream(cudaStream_t s);
// Queues a fill of `bytes` bytes of `value` at `device_ptr` on `s` (the next
// kernel of a framework reusing that memory).
void FillAsync(void* device_ptr, uint8_t value, size_t bytes, cudaStream_t s);
// Waits until `s` has run everything queued on it (false after `seconds`).
bool WaitIdle(cudaStream_t s, double seconds);
// Waits until every stream is idle (false after `seconds`).
bool Synchronize(double seconds = 30);
// Starts / ends capturing a CUDA graph on `s`.
void BeginCapture(cudaStream_t s);
void EndCapture(cudaStream_t s);

// Whether some thread made a context on `device`.
bool HasContext(int device);
// The most device memory the agent may allocate on `device` (what a
// framework that reserved the rest leaves); beyond it cudaMallocAsync fails with
// cudaErrorMemoryAllocation. SIZE_MAX: no limit.
void SetAgentMemoryLimit(int device, size_t bytes);

// Drills: the NCCL rank (in its communicator) whose all-reduces never take
// part and never finish, as if its GPU were stuck (-1: none); an asynchronous
// error reported by every comm; aborted collectives that stay on their
// stream until released (a kernel slow to see the abort).
void SetHangingRank(int nccl_rank);
// Whether the runtime can load the batched copy kernel (one that cannot
// answers cudaLibraryLoadData with an error); before the agent's first call.
void SetBatchedCopyKernel(bool available);
void SetAsyncError(bool on);
void HoldAbortedKernels(bool on);

// What queued work did that a GPU would not survive ("cudaMemcpyAsync
// wrote 64 bytes at 0x... that is not live device memory").
std::vector<std::string> Violations();

// The agent's table, loaded from the fake, for unit tests of the pure parts.
const internal::GpuApi& Api();

}  // namespace ringmaster::fake
