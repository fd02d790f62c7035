// Internal, pure parts of the GPU backend (unit-tested with a fake GpuApi):
// which NCCL type and op a call maps to, how tensors are laid out in device
// packs, and the state machine that waits for NCCL work and aborts it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "clock.h"
#include "gpu/gpu_api.h"
#include "ringmaster/communicator.h"

namespace ringmaster::internal {

// ---------------------------------------------------------------- mapping

// NCCL's type for `dtype`, or Unimplemented naming what the loaded NCCL
// lacks (bfloat16 needs NCCL 2.10), InvalidArgument for a value out of range.
StatusOr<ncclDataType_t> NcclDataType(DataType dtype, int nccl_version);
// SUM, MEAN (ncclAvg, NCCL 2.10: a float sums then scales by 1/n, an integer
// sums then divides, truncating as the CPU engine does), MIN, MAX, PRODUCT.
StatusOr<ncclRedOp_t> NcclRedOp(ReduceOp op, int nccl_version);
inline constexpr int kNcclVersionBf16AndAvg = 21000;
inline constexpr int kNcclVersionNonBlocking = 21400;

// ---------------------------------------------------------------- layout

// Offsets of the tensors in a device pack are multiples of this, so every
// tensor starts on a 16-byte boundary (vector loads, fast copies); the gaps
// are reduced along with the data and never copied back.
inline constexpr size_t kDevicePackAlign = 16;
// bytes_per_pack 0 on the device: large packs (NCCL's bandwidth needs a few
// MiB per call).
inline constexpr int64_t kAutoDevicePackBytes = 32 << 20;
// The fusion buffer: one per GPU, taken once per formation; no pack (its
// aligned layout) is larger, whatever bytes_per_pack says. The agent's only
// device memory (docs/gpu.md, "Memory").
inline constexpr size_t kDeviceFusionBytes = 64 << 20;
// A tensor of at least this many bytes is reduced alone, where it lies (or
// from its source into it): NCCL's own time for it dwarfs one more launch,
// and copying it into the fusion buffer and back would cost two passes.
inline constexpr int64_t kDeviceAloneBytes = 4 << 20;

struct DevicePack {
  DataType dtype = DataType::kFloat32;
  struct Item {
    size_t tensor;  // index into the per-device tensor list
    size_t offset;  // bytes from the start of the pack buffer
    size_t bytes;
  };
  std::vector<Item> items;
  size_t count = 0;  // elements the collective reduces (gaps included)
  size_t bytes = 0;  // count * element size
  // One tensor: reduced where it lies (from its source, if it has one), no
  // fusion buffer and no copies.
  bool lone() const { return items.size() == 1; }
};

// TF's group_by_size per dtype (a new pack once the current one is larger
// than bytes_per_pack; 0 means kAutoDevicePackBytes), offsets aligned to
// kDevicePackAlign, and two rules of the device's own: a tensor of
// kDeviceAloneBytes or more is a pack of its own, and a pack whose aligned
// layout would pass kDeviceFusionBytes is closed first. Every member plans
// the same packs from the same call.
std::vector<DevicePack> PlanDevicePacks(std::span<const Tensor> tensors, int64_t bytes_per_pack);
// The same into `packs`, whose packs' item buffers are kept (a caller's
// scratch, call after call).
void PlanDevicePacks(std::span<const Tensor> tensors, int64_t bytes_per_pack, std::vector<DevicePack>& packs);

// The tensors `indices` of one GPU must not share memory: no output with
// another output, and no output with another tensor's input (its source,
// when it has one other than its data); inputs may overlap each other.
// InvalidArgument naming both tensors otherwise.
Status CheckDeviceOverlaps(std::span<const Tensor> tensors, std::span<const size_t> indices);

// ---------------------------------------------------------------- the call

// The tensors of one call split by device: a call takes host tensors or GPU
// tensors, never both; with several GPUs, each GPU gets the same list of
// tensors (dtype and count, in order), one replica per local GPU as
// MirroredStrategy has it.
struct DeviceSplit {
  bool device = false;                          // false: every tensor is host memory
  std::vector<int> devices;                     // CUDA ordinals, ascending
  std::vector<std::vector<size_t>> per_device;  // tensor indices, per entry of `devices`
};
// `where(i)` answers -1 for host memory or the device ordinal of tensors[i]
// (or an error for a pointer it cannot place).
StatusOr<DeviceSplit> SplitByDevice(std::span<const Tensor> tensors,
                                    const std::function<StatusOr<int>(size_t)>& where);

// Every member's answer at the formation of the device group: how many GPUs
// it drives and whether it has NCCL. Equal GPU counts are required.
struct DeviceMember {
  int32_t gpus = 0;
  int32_t has_nccl = 0;
  int32_t fusion_failed = 0;  // its fusion buffers could not be allocated
};
Status CheckDeviceMembers(std::span<const DeviceMember> members, std::span<const std::string> names);

// ---------------------------------------------------------------- waiting

// The abort state machine of one NCCL communicator (per local GPU):
//   kNone -> (init) kForming -> kReady <-> kRunning -> kReady
//   kForming | kRunning -> kAborted on a deadline, a group abort (a member
//   lost: heartbeats, an Abort, a peer's timeout) or an NCCL async error;
//   ncclCommAbort is called exactly once; a new formation starts from kNone.
enum class NcclState { kNone, kForming, kReady, kRunning, kAborted };
const char* NcclStateName(NcclState s);

struct WaitSpec {
  std::span<ncclComm_t> comms;    // polled with ncclCommGetAsyncError
  std::span<cudaEvent_t> events;  // must all complete (cudaEventQuery)
  Deadline deadline = NoDeadline();
  std::function<Status()> abort_status;  // the group's: OK while usable
  std::string what;                      // "all-reduce of 3 packs on /job:worker/task:0"
  // Done when every comm is ncclSuccess and every event complete; with
  // `comms_only`, when no comm is ncclInProgress (waiting for init/enqueue).
  bool comms_only = false;
};

// Polls (spinning briefly, then sleeping up to 1 ms between polls) until
// done, the deadline, a group abort or an error; on anything but success
// every comm is aborted (ncclCommAbort) and the comms are set to nullptr.
// Returns DeadlineExceeded at the deadline, the group's cause on an abort,
// Internal with NCCL's or CUDA's text on an error.
Status WaitOrAbort(const GpuApi& api, const WaitSpec& spec);
// ncclCommAbort on every non-null comm, nulling them.
void AbortComms(const GpuApi& api, std::span<ncclComm_t> comms);

}  // namespace ringmaster::internal
