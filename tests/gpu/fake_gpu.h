// A fake CUDA runtime + NCCL behind the agent's GpuApi table, for tests on
// machines without a GPU. "Device memory" is host memory the fake knows as
// such (cudaPointerGetAttributes says Device); streams run their work in
// order when nothing blocks them; an NCCL all-reduce blocks its stream until
// every rank of its communicator (in any thread of this process) has
// reached it, then reduces with the CPU engine's kernels. Non-blocking
// communicators answer ncclInProgress once before ncclSuccess, so the
// backend's polling is exercised. Everything is serialised by one mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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
  int stream_waits = 0;  // cudaStreamWaitEvent
  int unique_ids = 0;
};

// Resets the fake (devices 0..devices-1, NCCL of `nccl_version`, or none)
// and installs it with SetGpuApiForTesting; Uninstall() puts the real
// libraries back.
void Install(int devices = 2, bool with_nccl = true, int nccl_version = 22703);
void Uninstall();
Stats GetStats();

// Device memory of the fake on `device` (freed by Install/Uninstall).
void* DeviceAlloc(int device, size_t bytes);

// Drills: the NCCL rank (in its communicator) whose all-reduces never take
// part and never finish, as if its GPU were stuck (-1: none); an asynchronous error reported by every comm.
void SetHangingRank(int nccl_rank);
void SetAsyncError(bool on);

// The table itself, for unit tests of the pure parts.
const internal::GpuApi& Api();

}  // namespace ringmaster::fake
