// The shell around GroupState for one formation of the group: it owns the
// control connections, the abort eventfd every wait polls, and the monitor
// thread (heartbeats, control frames, answering progress queries), feeds
// GroupState the events and carries out its decisions: waking waiters,
// telling peers, and reporting a failure (failure_report.h: a stderr line,
// the flight recorder's dump, the container's termination message).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/link_model.h"
#include "group/failure_report.h"
#include "group/flight_recorder_ring.h"
#include "group/group_state.h"
#include "group/overlay.h"
#include "transport/transport.h"

namespace ringmaster::internal {

// What code outside the engine (the GPU backend) may know of a formation.
// How long a diagnosis may wait for the other members' answers: a dead or
// frozen member cannot stall it longer.
inline constexpr double kDiagnosisBoundSeconds = 1.0;

class GroupView {
 public:
  virtual ~GroupView() = default;
  virtual Status AbortStatus() const = 0;
  // What the formation measured of its links (the same on every member).
  virtual const LinkModel& link() const = 0;
};

class Group final : public GroupView {
 public:
  struct Config {
    int rank = 0;
    std::vector<std::string> names;
    double heartbeat_timeout_s = 15;
    // Whom heartbeats go to and are expected from: this member's fingers on
    // the control overlay (overlay.h); empty: every member.
    std::vector<int> heartbeat_peers;
    std::shared_ptr<FlightRecorder> recorder;
    FailureReport report;
    const EngineClock* clock = &EngineClock::Steady();
    // Tests without control connections: answers a progress query for
    // every member directly (production asks over the control plane).
    std::function<std::vector<ProgressReport>(uint64_t seq)> probe;
    // Still forming (the link probe runs): failures are not reported until
    // Formed().
    bool forming = false;
  };
  // control_fds[r]: the control connection to member r (-1: none).
  Group(Config config, std::vector<int> control_fds);
  ~Group() override;
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  int rank() const { return config_.rank; }
  int size() const { return static_cast<int>(config_.names.size()); }
  const std::string& name(int r) const { return config_.names[static_cast<size_t>(r)]; }
  const std::vector<std::string>& names() const { return config_.names; }
  FlightRecorder& recorder() { return *config_.recorder; }

  Status AbortStatus() const override;
  const LinkModel& link() const override { return link_; }
  // Once, after ProbeLinks and before any op runs (the monitor never reads it).
  void SetLink(const LinkModel& link) { link_ = link; }
  // The formation is complete (its link probe done): a failure from now on
  // is reported (stderr, flight recorder, termination log); before, the
  // caller forms again or fails formation itself.
  // Heartbeats are sent while forming, but silence counts from Formed() on:
  // a finger still connecting its own fingers sends none yet.
  void Formed();
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  int abort_fd() const { return abort_fd_; }
  Status ForNewCall() const;
  Status ForFailedCall(const Status& own) const;
  bool PeerReformed() const;  // GroupState::peer_reformed

  // Events from the engine's threads.
  void CollectiveFailed(const Status& status);
  void ConnectionLost(int peer, const std::string& how);
  void AbortRequested(const std::string& reason);
  void ReformRequested();
  void Stopping(bool destroyed);
  // Waits up to `ms` for an abort (a peer's word on its way).
  void WaitForAbort(int ms) const;

  // The diagnosis: asks every member (bounded by `deadline`) where it stands
  // with collective #seq; a member that does not answer is kUnknown. The
  // question floods over the control connections (the overlay's fingers),
  // the answers come back the way it came (overlay.h, FloodSeen).
  std::vector<ProgressReport> Exchange(uint64_t seq, Deadline deadline);

  void StartMonitor();
  // Stops the monitor; `goodbye`: say so to the peers and wait (up to 1 s)
  // for them to close, so no unread byte turns our close into a reset.
  void Close(bool goodbye);

 private:
  void Apply(const GroupDecision& d, const Status& cause);
  template <class Event>
  void Run(Event&& event);
  // To every control connection, or `only` that one, never to `except`.
  void SendLocked(uint32_t type, uint32_t code, const void* body, size_t bytes, int only = -1,
                  int except = -1);
  void Report(const Status& cause);
  void MonitorLoop();
  Clock::duration HeartbeatPeriod() const;  // T / 4, within [50 ms, 1 s]
  void OnFrame(int peer, uint32_t type, uint32_t code, const std::string& body);
  [[noreturn]] void Terminate();  // SIGTERM (terminate.h): report, then die of it

  Config config_;
  mutable std::mutex mu_;  // state_, control_fds_, answers_, asking_*, flood_
  GroupState state_;
  std::vector<int> control_fds_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> formed_;
  int abort_fd_ = -1;
  // The exchange in progress (one at a time per member).
  std::mutex exchange_mu_;
  mutable std::condition_variable answers_cv_;
  uint64_t asking_ = 0;
  uint32_t asking_id_ = 0;  // our flood's number (0: none in progress)
  uint32_t last_query_ = 0;
  FloodSeen flood_{0};
  std::vector<ProgressReport> answers_;
  std::thread monitor_;
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> diagnosing_{0};  // exchanges in progress
  LinkModel link_;
};

}  // namespace ringmaster::internal
