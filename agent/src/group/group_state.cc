#include "group/group_state.h"

#include "transport/peer_loss.h"

namespace ringmaster::internal {

GroupState::GroupState(int rank, std::vector<std::string> names, double heartbeat_timeout_s,
                       Clock::time_point now, const std::vector<int>& watched)
    : rank_(rank),
      names_(std::move(names)),
      hb_timeout_(
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(heartbeat_timeout_s))),
      hb_timeout_s_(heartbeat_timeout_s),
      last_seen_(names_.size(), now),
      gone_(names_.size(), false),
      watched_(names_.size(), watched.empty()),
      lost_(names_.size(), false) {
  for (int p : watched)
    if (p >= 0 && p < static_cast<int>(watched_.size())) watched_[p] = true;
  if (rank_ >= 0 && rank_ < static_cast<int>(gone_.size()))
    gone_[rank_] = true;  // no heartbeats from ourselves
}

GroupDecision GroupState::AbortWith(const Status& cause, bool tell_peers, bool report) {
  if (aborted_) return {};
  aborted_ = true;
  cause_ = cause;
  return {true, tell_peers, report};
}

std::string GroupState::Self() const {
  return rank_ >= 0 && rank_ < static_cast<int>(names_.size()) ? names_[rank_] : std::string("this member");
}

void GroupState::HeardFrom(int peer, Clock::time_point now) {
  if (peer >= 0 && peer < static_cast<int>(last_seen_.size())) last_seen_[peer] = now;
}

void GroupState::Paused(Clock::duration paused) {
  if (paused <= Clock::duration::zero()) return;
  for (auto& seen : last_seen_) seen += paused;
}

GroupDecision GroupState::Tick(Clock::time_point now) {
  for (size_t p = 0; p < last_seen_.size(); ++p) {
    if (gone_[p] || !watched_[p] || now - last_seen_[p] <= hb_timeout_) continue;
    gone_[p] = true;
    lost_[p] = true;
    return AbortWith(UnreachableError(names_[p], Self(), HowNoHeartbeat(hb_timeout_s_)), true, true);
  }
  return {};
}

GroupDecision GroupState::ConnectionLost(int peer, const std::string& how) {
  if (peer < 0 || peer >= static_cast<int>(gone_.size())) return {};
  const bool said_goodbye = gone_[peer];
  gone_[peer] = true;
  if (said_goodbye) return {};  // its close after a goodbye is the orderly end
  lost_[peer] = true;
  return AbortWith(UnreachableError(names_[peer], Self(), how), true, true);
}

GroupDecision GroupState::Goodbye(int peer) {
  if (peer >= 0 && peer < static_cast<int>(gone_.size())) gone_[peer] = true;
  return {};
}

GroupDecision GroupState::AbortFrame(int /*peer*/, StatusCode code, const std::string& text) {
  if (code == StatusCode::kOk || static_cast<int>(code) > 16) code = StatusCode::kAborted;
  // The peer's own words: every member reports one cause in one wording.
  // The first one is passed on to our fingers (the flood over the control
  // overlay: each member sends its one abort once, so the copies stop).
  return AbortWith(Status(code, text), true, true);
}

GroupDecision GroupState::ReformFrame(int /*peer*/, const std::string& text) {
  GroupDecision d = AbortWith(AbortedError(text), true, false);
  if (d.abort) peer_reformed_ = true;
  d.reform = d.abort;  // passed on as what it is
  return d;
}

GroupDecision GroupState::ProtocolError(int peer) {
  if (peer >= 0 && peer < static_cast<int>(gone_.size())) gone_[peer] = lost_[peer] = true;
  return AbortWith(InternalError("protocol error on the control connection from " + names_[peer]), true,
                   true);
}

GroupDecision GroupState::CollectiveFailed(const Status& status) {
  return AbortWith(status, true, true);
}

GroupDecision GroupState::AbortRequested(const std::string& reason) {
  return AbortWith(AbortedError("aborted by " + names_[rank_] + ": " + reason), true, true);
}

GroupDecision GroupState::ReformRequested() {
  GroupDecision d = AbortWith(AbortedError(names_[rank_] + " is forming the group again"), true, false);
  d.reform = d.abort;
  return d;
}

GroupDecision GroupState::Stopping(bool destroyed) {
  return AbortWith(destroyed ? CancelledError("the communicator of " + names_[rank_] + " was destroyed")
                             : AbortedError("the group is being formed again"),
                   false, false);
}

Status GroupState::ForNewCall() const {
  if (!aborted_) return OkStatus();
  return Status(cause_.code() == StatusCode::kUnavailable ? StatusCode::kUnavailable : StatusCode::kAborted,
                cause_.message());
}

Status GroupState::ForFailedCall(const Status& own) const {
  return aborted_ ? cause_ : own;
}

bool GroupState::Watching(int peer) const {
  return peer >= 0 && peer < static_cast<int>(gone_.size()) && watched_[peer] && !gone_[peer] && !aborted_;
}

Clock::time_point GroupState::NextDeadline() const {
  Clock::time_point next = Clock::time_point::max();
  for (size_t p = 0; p < last_seen_.size(); ++p)
    if (!gone_[p] && watched_[p]) next = std::min(next, last_seen_[p] + hb_timeout_);
  return next;
}

}  // namespace ringmaster::internal
