// The collective engine's C++ API: what a training process links to all-reduce
// its gradients with the other members of its TF_CONFIG group.
//
// Semantics follow tf.distribute: the group is the chief then the workers
// (rank 0 is the leader); every member must issue the same collectives in the
// same order with the same shapes; options follow
// tf.distribute.experimental.CommunicationOptions (see comm_options.h) and
// per-call options are merged over the job's defaults. See docs/agent.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/comm_options.h"
#include "ringmaster/status.h"
#include "ringmaster/tf_config.h"

namespace ringmaster {

// Values are part of the C API (ringmaster.h): never renumber.
// kBool moves as bytes (broadcast, all-gather, all-to-all); every reduction
// of it fails with InvalidArgument.
// Values and names: RM_DTYPE_TABLE and RM_REDUCE_OP_TABLE (enums.h).
enum class DataType : int { RM_DTYPE_TABLE(RM_ENUM_CXX_ENUMERATOR) };
inline constexpr int kDataTypeCount = 0 RM_DTYPE_TABLE(RM_ENUM_COUNT_ONE);
inline constexpr DataType kLastDataType = static_cast<DataType>(kDataTypeCount - 1);
enum class ReduceOp : int { RM_REDUCE_OP_TABLE(RM_ENUM_CXX_ENUMERATOR) };
// Where a tensor's bytes live. GPU memory is also recognised from the
// pointer itself (cudaPointerGetAttributes) once the process uses CUDA;
// kDevice says so explicitly (and loads the CUDA runtime if need be).
enum class MemoryKind : int { kHost = 0, kDevice = 1 };

// Where a re-formed group resumes (Communicator::AgreeOnResume).
struct ResumePoint {
  int64_t step = -1;  // the highest step any member committed; -1: nobody holds state
  int root = 0;       // the lowest rank holding it: the state is broadcast from there
};

size_t DataTypeSize(DataType dtype);
std::string_view DataTypeName(DataType dtype);  // "float32", ...
std::string_view ReduceOpName(ReduceOp op);     // "sum", ..., "product"

// A view of a caller-owned flat buffer; results are written in place. The
// bytes must stay valid until the call (or its handle) completes.
struct Tensor {
  void* data = nullptr;
  int64_t count = 0;  // elements
  DataType dtype = DataType::kFloat32;
  MemoryKind memory = MemoryKind::kHost;
  // GPU memory only: the cudaStream_t whose work produces `data` (nullptr:
  // the legacy default stream). The agent waits for it through an event
  // recorded when the call is made; the call is complete when Wait() returns.
  void* stream = nullptr;
  // AllReduce only: when set (and not `data`), the input is read from here
  // and the result written to `data`, which need not hold anything yet (out
  // of place). A framework whose inputs are immutable (TensorFlow) thus
  // needs no copy of its own: the engine reads `source` into its pack
  // buffer, or into `data`, on its own thread (host memory) or stream (GPU
  // memory: `source` on the same GPU as `data`), overlapping with the packs
  // already on the wire.
  const void* source = nullptr;
  size_t bytes() const { return static_cast<size_t>(count) * DataTypeSize(dtype); }
};

// Explicit settings; FromEnvironment() fills them from TF_CONFIG and the
// RINGMASTER_* variables.
struct CommunicatorSettings {
  CollectiveGroup group;          // members in rank order and our rank
  CommunicationOptions defaults;  // the job's options; per-call options merge over them
  // Ports of the agent's gRPC control service, never the TF_CONFIG port
  // (TensorFlow's own server takes that one in the same process):
  //   empty: the leader serves on DefaultAgentPort(its TF_CONFIG port), its
  //          port + 1; the others on a port the kernel picks (only the
  //          leader's must be known);
  //   one:   every member serves on it (one member per host: Kubernetes);
  //   one per member, in rank order: members sharing a host (`ringmaster run`).
  // RINGMASTER_PORT sets it: "2223" or "41000,41001,41002".
  std::vector<int> control_ports;
  // Group formation gives up after this long and names the missing tasks
  // (RINGMASTER_FORMATION_TIMEOUT_SECONDS).
  double formation_timeout_seconds = 300;
  // A member silent for this long is declared dead even if its connections
  // stay open, e.g. a lost node (RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS).
  double heartbeat_timeout_seconds = 15;
  // Elastic size: a formation may go on without the members that have not
  // joined rejoin_timeout_seconds after it began, once at least min_size of
  // TF_CONFIG's members have (the leader, rank 0, always among them: its
  // address is the one everyone knows). The group formed numbers them 0..
  // in TF_CONFIG order (rank() and size() change); a member left out that
  // comes back waits to join until the others agree to let it in
  // (Communicator::AgreeOnJoiners). 0: every member, always
  // (RINGMASTER_MIN_SIZE, RINGMASTER_REJOIN_TIMEOUT_SECONDS).
  int min_size = 0;
  double rejoin_timeout_seconds = 30;
  // Packs in flight at once; each has its own connection per peer
  // (RINGMASTER_STREAMS, 1..8).
  int streams = 2;
  // The flight recorder: the last this many collectives, in fixed memory
  // (RINGMASTER_FLIGHT_RECORDER_SIZE).
  int flight_recorder_size = 1024;
  // On a failure, the recorder is dumped as one JSON line on stderr and,
  // when set, into <dir>/<task>.json (RINGMASTER_FLIGHT_RECORDER_DIR).
  std::string flight_recorder_dir;
  // The failure's one-line verdict is written here (RINGMASTER_TERMINATION_LOG);
  // empty: /dev/termination-log when it exists (a Kubernetes container).
  std::string termination_log;

  // The job's key (raw bytes, 16 to 4096): every member proves it holds it
  // before it may join, read status or connect (docs/design.md). Empty: no
  // authentication, which every member must then agree on. FromEnvironment
  // reads it from the file RINGMASTER_JOB_KEY_FILE names.
  std::string job_key;

  static StatusOr<CommunicatorSettings> FromEnvironment();
  // InvalidArgument naming the first field out of range (Communicator::Create
  // checks them before it serves or forms anything).
  Status Validate() const;
  // RINGMASTER_PORT's value: "" (none), one port, or one per member.
  static StatusOr<std::vector<int>> ParseControlPorts(std::string_view value, size_t members);
};

class CollectiveHandle;
namespace internal {
struct CallState;
class CommunicatorImpl;
struct CommunicatorAccess;
CollectiveHandle MakeHandle(std::shared_ptr<CallState> state);
}  // namespace internal

// The outcome of one asynchronous call; its packs proceed in the background.
class CollectiveHandle {
 public:
  CollectiveHandle() = default;
  // Blocks until every pack of the call is done; returns its first error.
  // Never outlives the call's timeout by more than a second.
  Status Wait();
  bool Done() const;
  // Calls `done` once with the call's status when its last pack finishes, on
  // the engine thread that finished it (or right here if it is done), so
  // an asynchronous framework kernel needs no thread to wait. `done` must be
  // short and must not issue collectives. Without a timeout, a call queued
  // behind a collective that never ends never calls back: Wait's extra
  // deadline check is not applied here.
  void Then(std::function<void(const Status&)> done);

 private:
  friend CollectiveHandle internal::MakeHandle(std::shared_ptr<internal::CallState> state);
  explicit CollectiveHandle(std::shared_ptr<internal::CallState> s) : state_(std::move(s)) {}
  std::shared_ptr<internal::CallState> state_;
};

class Communicator {
 public:
  // Starts the control service and forms the group (blocks until every
  // member has joined, or fails after the formation timeout).
  static StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorSettings& settings);
  static StatusOr<std::unique_ptr<Communicator>> FromEnvironment();
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  std::string TaskName(int rank) const;  // "/job:worker/task:1"

  // Reduces the tensors element-wise across the group, in place. Tensors are
  // packed (options.bytes_per_pack) and each pack is one collective.
  Status AllReduce(std::span<const Tensor> tensors, ReduceOp op, const CommunicationOptions& options = {});
  // The same, returning at once; the tensors must stay valid until Wait().
  CollectiveHandle AllReduceAsync(std::span<const Tensor> tensors, ReduceOp op,
                                  const CommunicationOptions& options = {});
  // Copies root's tensors to every member.
  Status Broadcast(std::span<const Tensor> tensors, int root, const CommunicationOptions& options = {});
  // Concatenates every member's `input` in rank order into `output`
  // (output.count == size() * input.count; equal sizes on every member).
  Status AllGather(const Tensor& input, const Tensor& output, const CommunicationOptions& options = {});
  // All-gather with a size per member: member r contributes counts[r]
  // elements (input.count == counts[rank()]); output (sum of counts) gets
  // every member's input in rank order. `counts` has size() entries and is
  // the same on every member (Horovod's allgather of unequal first
  // dimensions: the caller agrees on the counts first).
  Status AllGatherV(const Tensor& input, std::span<const int64_t> counts, const Tensor& output,
                    const CommunicationOptions& options = {});
  // Every member sends block r of `input` (send_counts[r] elements, in rank
  // order) to member r and receives member r's block for it at offset
  // sum(recv_counts[0..r)) of `output`. send_counts[r] here must equal
  // recv_counts[rank()] on member r. Host memory only.
  Status AllToAll(const Tensor& input, std::span<const int64_t> send_counts, const Tensor& output,
                  std::span<const int64_t> recv_counts, const CommunicationOptions& options = {});
  // `input` (sum of counts elements, the same counts on every member) is
  // reduced element-wise across the group; member r receives block r
  // (counts[r] elements at offset sum(counts[0..r))) in `output`, which
  // must not overlap `input`. MEAN divides by size(). Host memory only.
  Status ReduceScatter(const Tensor& input, std::span<const int64_t> counts, const Tensor& output,
                       ReduceOp op, const CommunicationOptions& options = {});
  // Returns once every member has entered it.
  Status Barrier(const CommunicationOptions& options = {});
  // tf.distribute's reduce(op, value, axis): `value` has `shape`; with an
  // axis, it is first reduced along that axis (MEAN divides by the element
  // count along the axis summed over all members, so short batches weigh
  // right); `output` has `shape` without that axis (or `shape` itself).
  Status Reduce(ReduceOp op, const Tensor& value, std::span<const int64_t> shape, std::optional<int> axis,
                const Tensor& output, const CommunicationOptions& options = {});

  // Process sets (Horovod's; MPI's communicators): a subgroup of the formed
  // group, `ranks` (in any order; sorted here) renumbered 0..n-1 in rank
  // order, with its own sequence of collectives over the same connections.
  // Every member of the whole group calls this with the same `id` (> 0, never
  // reused while the set exists) and the same ranks; a member that disagrees
  // makes it fail on every member (FailedPrecondition naming who differs).
  // Members get the set's Communicator, the others null. A set's collectives
  // queue apart from the whole group's, on one stream; sets that share
  // members must be used in the same order by those members. The set's
  // Communicator must be destroyed before this one; Abort and health are
  // the whole group's. Host memory only for now. A set belongs to the
  // formation it was added in: after Reform() its calls fail with
  // FailedPrecondition; destroy it, and every member (survivors and new
  // incarnations alike) adds the sets again.
  StatusOr<std::unique_ptr<Communicator>> AddProcessSet(int id, std::span<const int> ranks);
  // 0 for the whole group, else the process set's id.
  int process_set_id() const;

  // The timeline (Horovod's start_timeline): every collective this member
  // runs from now on, one Chrome trace event per pack (chrome://tracing,
  // Perfetto: name, start, duration, dtype, bytes, algorithm, outcome), in
  // the JSON array file `path` (created or truncated). Starting again
  // switches files; StopTimeline ends the array. Per member, not collective.
  Status StartTimeline(const std::string& path);
  Status StopTimeline();

  // Fails every collective in flight on every member with Aborted; later
  // calls fail fast with Aborted until Reform().
  void Abort(const std::string& reason);
  // OK while the group is usable, else why it is not (Aborted, Unavailable...).
  Status health() const;
  // Forms the group again (a new incarnation) after an abort; every member
  // must call it. A member that failed comes back as a new process at the
  // same address (Create), and the survivors' Reform() forms the group with
  // it; the wait is bounded by formation_timeout_seconds and fails naming
  // who did not come back.
  Status Reform();
  // Recovery in place: where the group resumes, agreed by every member as
  // its first call after a formation (a survivor after Reform(), a new
  // incarnation after Create). `committed_step`: the last step this member
  // committed, -1 when it holds no state. Every member gets the same
  // answer: the highest step committed and the lowest rank holding it; the
  // caller then broadcasts its state from that root (with the newcomer's
  // -1, the survivors win). Everyone at -1 is a first start: step -1, root 0.
  StatusOr<ResumePoint> AgreeOnResume(int64_t committed_step);
  // Elastic size: how many of TF_CONFIG's members wait to join the group
  // (left out of this formation and come back, or restarted), as the leader
  // sees them, agreed by every member (a broadcast from rank 0). Not 0:
  // every member calls Reform() to let them in. Called at a step boundary
  // (Horovod's check_host_updates at a commit). Without an elastic size
  // (min_size 0) it is 0 at once, with no collective.
  StatusOr<int> AgreeOnJoiners();

 private:
  friend struct internal::CommunicatorAccess;
  explicit Communicator(std::unique_ptr<internal::CommunicatorImpl> impl);
  std::unique_ptr<internal::CommunicatorImpl> impl_;
};

}  // namespace ringmaster
