// The engine behind a Communicator: it forms the group through the
// Bootstrap it is given (bootstrap/), runs one Group (health, group.h) and
// one Executor (executor.h) per formation, and turns calls into ops
// (collectives.h; GPU memory: gpu/gpu_backend.h).
// Private to agent/src: nothing outside the engine includes it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/mesh.h"
#include "group/executor.h"
#include "ringmaster/communicator.h"
#include "transport/auth.h"

namespace ringmaster::internal {

class Timeline;
class GpuBackend;
class DataAcceptor;

// How a communicator forms its group (bootstrap/): the exchange of the
// table and the data mesh built from it. Empty, the agent's: its gRPC
// control service (StartAgentBootstrap, begun by Start() once the settings
// are checked) and FormMesh over TCP. Tests and simulations give an
// in-process bootstrap (tests/agent/local_bootstrap.h).
struct Formation {
  std::unique_ptr<Bootstrap> bootstrap;
  MeshFactory mesh;
};

class CommunicatorImpl {
 public:
  explicit CommunicatorImpl(const CommunicatorSettings& settings, Formation formation = {});
  ~CommunicatorImpl();

  // Process set `id` (> 0) of `parent`: `members` (formation ranks,
  // ascending) must include the parent's rank. Its collectives run on the
  // parent's process-set executor, over the same connections, with the
  // set's own sequence numbers; it must not outlive the parent.
  CommunicatorImpl(CommunicatorImpl* parent, int id, int wire_key, std::vector<int> members);
  // The collective half of making a process set: every member of the whole
  // group calls it with the same id and ranks (checked: a disagreement fails
  // on every member, naming who differs). Members of the set get its
  // communicator, the others null.
  StatusOr<std::unique_ptr<CommunicatorImpl>> AddProcessSet(int id, std::span<const int> ranks);
  int process_set_id() const { return set_id_; }

  // The timeline (timeline.h): every collective of this member, the process
  // sets' included, from now until StopTimeline, into `path`. Starting again
  // closes the previous file first. A process set's call is its group's.
  Status StartTimeline(const std::string& path);
  Status StopTimeline();

  Status Start();  // the settings checked, the bootstrap started, the first formation
  Status Reform();
  StatusOr<ResumePoint> AgreeOnResume(int64_t committed_step);  // see Communicator
  StatusOr<int> AgreeOnJoiners();                               // see Communicator
  void Abort(const std::string& reason);
  Status Health();

  // The group as formed: with an elastic size (CommunicatorSettings::
  // min_size) a formation may leave members out and number the others
  // 0.. in TF_CONFIG order, so these change in Reform() (never while a
  // collective runs: Reform stops the executor first).
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name(int r) const { return names_[r]; }
  // The leader's: members of TF_CONFIG waiting to join the next formation
  // (left out of this one, or restarted); 0 elsewhere.
  int Joiners() const;

  // sync: the caller waits for the handle at once (see Executor::Submit).
  CollectiveHandle AllReduceAsync(std::span<const Tensor> tensors, ReduceOp op, const CommunicationOptions& o,
                                  bool sync = false);
  CollectiveHandle BroadcastAsync(std::span<const Tensor> tensors, int root, const CommunicationOptions& o,
                                  bool sync = false);
  CollectiveHandle AllGatherAsync(const Tensor& in, const Tensor& out, const CommunicationOptions& o,
                                  bool sync = false);
  CollectiveHandle BarrierAsync(const CommunicationOptions& o, bool sync = false);
  // strategy.reduce (see Communicator::Reduce): with an axis, reduced along
  // it first; MEAN over the global element count along it.
  Status Reduce(ReduceOp op, const Tensor& value, std::span<const int64_t> shape, std::optional<int> axis,
                const Tensor& output, const CommunicationOptions& o);
  // The variable-size collectives (host memory only).
  CollectiveHandle AllGatherVAsync(const Tensor& in, std::span<const int64_t> counts, const Tensor& out,
                                   const CommunicationOptions& o);
  CollectiveHandle AllToAllAsync(const Tensor& in, std::span<const int64_t> send_counts, const Tensor& out,
                                 std::span<const int64_t> recv_counts, const CommunicationOptions& o);
  CollectiveHandle ReduceScatterAsync(const Tensor& in, std::span<const int64_t> counts, const Tensor& out,
                                      ReduceOp op, const CommunicationOptions& o);

 private:
  Status Form();
  Status FormOnce(Deadline until);  // one round; Aborted: a member left it
  void Stop(bool destroyed);
  // The agent's control port of `rank` (CommunicatorSettings::control_ports;
  // 0: the kernel picks).
  StatusOr<int> ControlPort(int rank) const;
  // A process set's: the parent's set executor (null if the set is of an
  // earlier formation).
  std::shared_ptr<Executor> executor() const;
  // Why executor() is null: no formation, or a set of an earlier one.
  Status NotFormed() const;
  CommunicatorImpl& root() { return parent_ ? *parent_ : *this; }
  // Validates and merges; `device` (only callers that take GPU memory pass
  // it) is set for a call of GPU tensors.
  StatusOr<CommunicationOptions> Resolve(const CommunicationOptions& o, std::span<const Tensor> tensors,
                                         bool* device = nullptr);
  // Options merged for a call of host tensors `in` and `out` that refuses
  // GPU memory ("<what>: host memory only").
  StatusOr<CommunicationOptions> ResolveHost(const char* what, const CommunicationOptions& o,
                                             const Tensor& in, const Tensor& out);
  CollectiveHandle Submit(const std::shared_ptr<Executor>& ex, std::vector<Op> ops,
                          const CommunicationOptions& o, const std::string& what, bool sync = false);

  CommunicatorSettings settings_;
  std::atomic<int> rank_, size_;            // in the group formed (see rank())
  std::vector<std::string> names_, hosts_;  // of the group formed
  // TF_CONFIG's members and our place there: what every formation starts from.
  int config_rank_;
  std::vector<std::string> config_names_, config_hosts_;
  uint64_t process_id_;
  std::shared_ptr<FlightRecorder> recorder_;
  JobKey key_;
  RefusalLog refusals_;
  std::unique_ptr<Bootstrap> bootstrap_;  // the group's (null in a process set's)
  MeshFactory mesh_;

  mutable std::mutex mu_;               // executor_
  std::shared_ptr<Executor> executor_;  // the current formation (null: none)
  // The same formation's process-set executor: one slot on a connection of
  // its own per pair (so a set's collectives never queue behind the whole
  // group's), its own flight recorder.
  std::shared_ptr<Executor> set_executor_;
  std::shared_ptr<FlightRecorder> set_recorder_;  // the set executor's, across formations
  // The formation's acceptor of data connections opened at first use.
  std::shared_ptr<DataAcceptor> acceptor_;
  std::mutex timeline_mu_;
  std::shared_ptr<Timeline> timeline_;
  CommunicatorImpl* parent_ = nullptr;  // a process set's; null for the group
  int set_id_ = 0;
  int wire_key_ = 0;  // a process set's key on the wire (AddProcessSet)
  // The group's: process sets added since the current formation. Form()
  // starts it again at 0, so a survivor of a re-formation and a new
  // incarnation (a fresh process) number the sets they add alike.
  std::atomic<int> sets_added_{0};
  // The group's: formations so far; a process set's: its group's when it was
  // added. A set from an earlier formation is refused (its ranks and wire key
  // were that formation's): add it again.
  std::atomic<int> formation_{0};
  std::vector<int> members_;  // a process set's formation ranks
  std::atomic<uint64_t> incarnation_{0};
  std::atomic<bool> nccl_warned_{false};
  std::atomic<bool> host_choice_logged_{false};
  std::unique_ptr<GpuBackend> gpu_;  // GPU memory: NCCL or host staging (gpu/gpu_backend.h)
};

// Makes Communicators (whose constructor is private): the public Create,
// and tests that give their own Formation.
struct CommunicatorAccess {
  static StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorSettings& settings,
                                                        Formation formation);
};

}  // namespace ringmaster::internal
