// The life of one formation of the group as a pure state machine, as
// api/job_state is for jobs: events in (a peer heard from or silent, a
// connection lost, a goodbye, an abort frame, a collective failed here, a
// local abort or reform), decisions out (abort with which cause, tell the
// peers or not, dump the flight recorder, which status each caller gets).
// No clock, no sockets, no threads: group.cc is its shell and feeds it the
// time; tests drive it step by step.
#pragma once

#include <string>
#include <vector>

#include "clock.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

struct GroupDecision {
  bool abort = false;       // the group is aborted now, with cause()
  bool tell_peers = false;  // send the cause to our fingers (who pass it on: a flood)
  bool report = false;      // a failure: print it, dump the recorder, write the termination log
  bool reform = false;      // what the peers are told is a reform (kReformFrame), not a failure
};

class GroupState {
 public:
  // `watched`: the peers whose heartbeats this member expects (its fingers
  // on the control overlay, overlay.h); empty: every peer.
  GroupState(int rank, std::vector<std::string> names, double heartbeat_timeout_s, Clock::time_point now,
             const std::vector<int>& watched = {});

  // The control plane.
  void HeardFrom(int peer, Clock::time_point now);  // any bytes are a heartbeat
  GroupDecision Tick(Clock::time_point now);        // declares silent peers unreachable
  // This member itself did not run for `paused` (its process starved of CPU,
  // or stopped): it heard nobody meanwhile, though its peers' heartbeats
  // wait unread in the sockets. That time does not count against their
  // silence, so a member that wakes late does not declare live peers lost.
  // (The shell tells: its own turn came that much later than its period.)
  void Paused(Clock::duration paused);
  GroupDecision ConnectionLost(int peer, const std::string& how);
  GroupDecision Goodbye(int peer);  // an orderly exit: not a failure by itself
  // A peer's abort (its own, or one it passes on): the first is ours too,
  // in its words, and is passed on to our fingers; later ones are dropped.
  GroupDecision AbortFrame(int peer, StatusCode code, const std::string& text);
  // A peer announced Reform() (or passes it on): our collectives stop, but
  // nothing failed; passed on once like an abort.
  GroupDecision ReformFrame(int peer, const std::string& text);
  GroupDecision ProtocolError(int peer);

  // A collective failed here (its status already carries the diagnosis).
  GroupDecision CollectiveFailed(const Status& status);
  // Communicator::Abort.
  GroupDecision AbortRequested(const std::string& reason);
  // Reform(): the peers are told, so they stop waiting for us.
  GroupDecision ReformRequested();
  // The communicator is going away (destroyed, or its threads stopped for a
  // reform already announced): queued calls fail, nobody is told.
  GroupDecision Stopping(bool destroyed);

  bool aborted() const { return aborted_; }
  const Status& cause() const { return cause_; }
  // The abort's cause is a peer's Reform(): nothing failed, the group is
  // being formed again (a member that sees it in the middle of a collective
  // the peer already finished joins that re-formation).
  bool peer_reformed() const { return peer_reformed_; }
  // What a call submitted now gets: OK while healthy; after an abort the
  // cause, as Unavailable for a lost member (what TF reports) and Aborted
  // for every other cause.
  Status ForNewCall() const;
  // What a caller whose collective failed gets: the first cause.
  Status ForFailedCall(const Status& own) const;
  // Whether heartbeats from `peer` are still expected (never from a peer
  // that is not watched: its own fingers watch it).
  bool Watching(int peer) const;
  // Whether `peer` was found lost here (closed, silent or garbled; not a
  // goodbye): nobody waits for it to close its end.
  bool Lost(int peer) const {
    return peer >= 0 && peer < static_cast<int>(lost_.size()) && lost_[static_cast<size_t>(peer)];
  }
  // How long `peer` has been silent at `now` (zero for a peer out of range).
  Clock::duration Silence(int peer, Clock::time_point now) const {
    if (peer < 0 || peer >= static_cast<int>(last_seen_.size())) return Clock::duration::zero();
    return now - last_seen_[static_cast<size_t>(peer)];
  }
  // A reform may begin once this formation is aborted.
  bool MayReform() const { return aborted_; }
  // When Tick must run next (the earliest heartbeat deadline).
  Clock::time_point NextDeadline() const;

 private:
  GroupDecision AbortWith(const Status& cause, bool tell_peers, bool report);
  std::string Self() const;  // our task's name, for "unreachable from"

  int rank_;
  std::vector<std::string> names_;
  Clock::duration hb_timeout_;
  double hb_timeout_s_;
  std::vector<Clock::time_point> last_seen_;
  std::vector<bool> gone_;     // closed, said goodbye, or declared lost
  std::vector<bool> watched_;  // heartbeats expected
  std::vector<bool> lost_;     // found lost here
  bool aborted_ = false;
  bool peer_reformed_ = false;
  Status cause_;
};

}  // namespace ringmaster::internal
