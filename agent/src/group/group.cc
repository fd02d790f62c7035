// The group's shell (group.h): the abort and its word to the peers, the
// monitor thread (heartbeats, control frames), the progress exchange, and
// closing the control connections. A failure's report is written by
// failure_report.cc, a progress answer's frame by progress_wire.cc.
#include "group/group.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "group/progress_wire.h"
#include "group/terminate.h"
#include "transport/net.h"
#include "transport/peer_loss.h"
#include "transport/wire.h"

namespace ringmaster::internal {

Group::Group(Config config, std::vector<int> control_fds)
    : config_(std::move(config)),
      state_(config_.rank, config_.names, config_.heartbeat_timeout_s, config_.clock->Now(),
             config_.heartbeat_peers),
      control_fds_(std::move(control_fds)),
      formed_(!config_.forming),
      flood_(static_cast<int>(config_.names.size())) {
  if (!config_.recorder) config_.recorder = std::make_shared<FlightRecorder>();
  control_fds_.resize(config_.names.size(), -1);
  abort_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Group::~Group() {
  Close(/*goodbye=*/false);
  CloseFd(abort_fd_);
}

Status Group::AbortStatus() const {
  if (!aborted_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  return state_.cause();
}

bool Group::PeerReformed() const {
  if (!aborted_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return state_.peer_reformed();
}

Status Group::ForNewCall() const {
  if (!aborted_.load(std::memory_order_acquire)) return OkStatus();  // no lock on the hot path
  std::lock_guard<std::mutex> lock(mu_);
  return state_.ForNewCall();
}

Status Group::ForFailedCall(const Status& own) const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.ForFailedCall(own);
}

void Group::SendLocked(uint32_t type, uint32_t code, const void* body, size_t bytes, int only, int except) {
  bytes = std::min<size_t>(bytes, kMaxControlText);
  ControlHeader h{kControlMagic, type, code, static_cast<uint32_t>(bytes)};
  std::string frame(reinterpret_cast<const char*>(&h), sizeof h);
  frame.append(static_cast<const char*>(body), bytes);
  for (int r = 0; r < static_cast<int>(control_fds_.size()); ++r) {
    if (control_fds_[r] < 0 || (only >= 0 && r != only) || r == except) continue;
    // Control frames are tiny; a peer that cannot take one in 200 ms is dead anyway.
    (void)WriteAll(control_fds_[r], frame.data(), frame.size(), DeadlineAfter(0.2));
  }
}

void Group::Apply(const GroupDecision& d, const Status& cause) {
  if (!d.abort) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_.store(true, std::memory_order_release);
    uint64_t one = 1;
    if (abort_fd_ >= 0) (void)!::write(abort_fd_, &one, sizeof one);
    if (d.tell_peers) {
      const std::string& text = cause.message();
      SendLocked(d.reform ? kReformFrame : kAbortFrame, static_cast<uint32_t>(cause.code()), text.data(),
                 text.size());
    }
  }
  answers_cv_.notify_all();
  if (d.report && formed_.load(std::memory_order_acquire)) Report(cause);
}

// Runs one event on the state machine and carries out its decision.
template <class Event>
void Group::Run(Event&& event) {
  GroupDecision d;
  Status cause;
  {
    std::lock_guard<std::mutex> lock(mu_);
    d = event(state_);
    cause = state_.cause();
  }
  Apply(d, cause);
}

void Group::CollectiveFailed(const Status& status) {
  Run([&](GroupState& s) { return s.CollectiveFailed(status); });
}
void Group::ConnectionLost(int peer, const std::string& how) {
  Run([&](GroupState& s) { return s.ConnectionLost(peer, how); });
}
void Group::AbortRequested(const std::string& reason) {
  Run([&](GroupState& s) { return s.AbortRequested(reason); });
}
void Group::ReformRequested() {
  Run([&](GroupState& s) { return s.ReformRequested(); });
}
void Group::Stopping(bool destroyed) {
  Run([&](GroupState& s) { return s.Stopping(destroyed); });
}

void Group::Formed() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = config_.clock->Now();
    for (int p = 0; p < size(); ++p) state_.HeardFrom(p, now);
  }
  formed_.store(true, std::memory_order_release);
}

void Group::WaitForAbort(int ms) const {
  pollfd pf{abort_fd_, POLLIN, 0};
  (void)::poll(&pf, 1, ms);
}

void Group::Report(const Status& cause) {
  WriteFailureReport(config_.report, name(rank()), rank(), size(), cause, config_.recorder->Snapshot());
}

std::vector<ProgressReport> Group::Exchange(uint64_t seq, Deadline deadline) {
  if (config_.probe) return config_.probe(seq);
  ++diagnosing_;
  struct Done {
    std::atomic<int>& n;
    ~Done() { --n; }
  } done{diagnosing_};
  std::lock_guard<std::mutex> one_at_a_time(exchange_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  asking_ = seq;
  asking_id_ = ++last_query_;
  (void)flood_.FirstSight(rank(), asking_id_, -1);  // our own question's copies come back: dropped
  answers_.assign(config_.names.size(), ProgressReport{});
  answers_[static_cast<size_t>(rank())] = config_.recorder->Report(seq);
  const bool connected =
      std::any_of(control_fds_.begin(), control_fds_.end(), [](int fd) { return fd >= 0; });
  ProgressQueryWire q{seq, asking_id_, rank()};
  SendLocked(kProgressQuery, 0, &q, sizeof q);
  // Everyone answers (through the flood, not only our fingers).
  auto all_in = [&] {
    if (!connected) return true;
    for (size_t r = 0; r < answers_.size(); ++r)
      if (answers_[r].progress == Progress::kUnknown) return false;
    return true;
  };
  answers_cv_.wait_until(lock, deadline, all_in);
  asking_ = 0;
  asking_id_ = 0;
  return answers_;
}

void Group::OnFrame(int peer, uint32_t type, uint32_t code, const std::string& body) {
  if (type == kReformFrame) {
    Run([&](GroupState& s) { return s.ReformFrame(peer, body); });
  } else if (type == kAbortFrame) {
    Run([&](GroupState& s) { return s.AbortFrame(peer, static_cast<StatusCode>(code), body); });
  } else if (type == kGoodbye) {
    std::lock_guard<std::mutex> lock(mu_);
    (void)state_.Goodbye(peer);
    if (control_fds_[peer] >= 0) ::shutdown(control_fds_[peer], SHUT_WR);
  } else if (type == kProgressQuery && body.size() == sizeof(ProgressQueryWire)) {
    ProgressQueryWire q;
    std::memcpy(&q, body.data(), sizeof q);
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A copy, or an older question: dropped. Else passed on to our other
      // fingers, once, and answered.
      if (!flood_.FirstSight(q.origin, q.id, peer)) return;
      SendLocked(kProgressQuery, 0, &q, sizeof q, -1, peer);
    }
    const ProgressReportWire w = ProgressToWire(config_.recorder->Report(q.seq), q, rank());
    std::lock_guard<std::mutex> lock(mu_);
    SendLocked(kProgressReport, 0, &w, sizeof w, peer);  // the way the question came
  } else if (type == kProgressReport && body.size() == sizeof(ProgressReportWire)) {
    ProgressReportWire w;
    std::memcpy(&w, body.data(), sizeof w);
    if (w.from < 0 || w.from >= size() || w.to < 0 || w.to >= size()) return;
    if (w.to != rank()) {  // someone else's answer: on towards its asker
      std::lock_guard<std::mutex> lock(mu_);
      const int hop = flood_.WayBack(w.to, w.id);
      if (hop >= 0 && hop != peer) SendLocked(kProgressReport, 0, &w, sizeof w, hop);
      return;
    }
    const ProgressReport r = ProgressFromWire(w);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (asking_id_ == 0 || asking_id_ != w.id || asking_ != w.seq) return;  // a late answer
      answers_[static_cast<size_t>(w.from)] = r;
    }
    answers_cv_.notify_all();
  }
}

Clock::duration Group::HeartbeatPeriod() const {
  return std::chrono::milliseconds(
      static_cast<int64_t>(std::clamp(config_.heartbeat_timeout_s * 1000 / 4, 50.0, 1000.0)));
}

void Group::StartMonitor() {
  stop_ = false;
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  monitor_ = std::thread([this] { MonitorLoop(); });
}

void Group::MonitorLoop() {
  const int n = size();
  const auto hb_period = HeartbeatPeriod();
  std::vector<int> fds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fds = control_fds_;
  }
  std::vector<ControlFrameParser> parsers(static_cast<size_t>(n));
  std::vector<bool> closed(static_cast<size_t>(n), false);
  for (int p = 0; p < n; ++p) closed[p] = fds[p] < 0;
  Clock::time_point next_hb = config_.clock->Now();
  Clock::time_point last_turn = next_hb;
  while (!stop_.load()) {
    auto now = config_.clock->Now();
    // A turn far later than the period: this process did not run (starved
    // or stopped), and the peers' heartbeats are still unread.
    if (now - last_turn > 2 * hb_period) {
      std::lock_guard<std::mutex> lock(mu_);
      state_.Paused(now - last_turn - hb_period);
    }
    last_turn = now;
    if (now >= next_hb) {
      std::lock_guard<std::mutex> lock(mu_);
      if (config_.heartbeat_peers.empty()) {
        SendLocked(kHeartbeat, 0, nullptr, 0);
      } else {  // only the fingers watch us: N log N heartbeats a period, not N^2
        for (int p : config_.heartbeat_peers) SendLocked(kHeartbeat, 0, nullptr, 0, p);
      }
      next_hb = now + hb_period;
    }
    if (formed_.load(std::memory_order_acquire)) Run([&](GroupState& s) { return s.Tick(now); });
    std::vector<pollfd> pfds;
    std::vector<int> who;
    for (int p = 0; p < n; ++p) {
      if (!closed[p]) {
        pfds.push_back({fds[p], POLLIN, 0});
        who.push_back(p);
      }
    }
    pfds.push_back({wake_fd_, POLLIN, 0});
    if (TerminationFd() >= 0) pfds.push_back({TerminationFd(), POLLIN, 0});
    // Wake for the next heartbeat to send, or the next one due from a peer.
    Clock::time_point wake = next_hb;
    if (formed_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mu_);
      wake = std::min(wake, state_.NextDeadline());
    }
    int t = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(wake - config_.clock->Now()).count());
    ::poll(pfds.data(), pfds.size(), std::max(1, t));
    if (TerminationFd() >= 0 && pfds.back().revents) Terminate();
    for (size_t i = 0; i < who.size(); ++i) {
      if (!pfds[i].revents) continue;
      const int p = who[i];
      char tmp[4096];
      // Never more than one frame buffered per peer: what does not fit
      // waits in the socket (and a peer that floods stalls only itself).
      const size_t room = std::min(sizeof tmp, parsers[p].Room());
      if (room == 0) {  // only after a bad frame (the parser is then closed)
        closed[p] = true;
        Run([&](GroupState& s) { return s.ProtocolError(p); });
        continue;
      }
      ssize_t r = ::recv(fds[p], tmp, room, 0);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        closed[p] = true;
        const std::string how = HowFromErrno(r == 0 ? 0 : errno);
        Run([&](GroupState& s) { return s.ConnectionLost(p, how); });
        continue;
      }
      if (r < 0) continue;
      {
        std::lock_guard<std::mutex> lock(mu_);
        state_.HeardFrom(p, config_.clock->Now());
      }
      parsers[p].Feed(tmp, static_cast<size_t>(r));
      ControlHeader h;
      std::string body;
      ControlFrameParser::Result res;
      while ((res = parsers[p].Next(&h, &body)) == ControlFrameParser::Result::kFrame) {
        OnFrame(p, h.type, h.code, body);
        if (h.type == kGoodbye) {
          closed[p] = true;
          break;
        }
      }
      if (res == ControlFrameParser::Result::kError) {
        closed[p] = true;
        Run([&](GroupState& s) { return s.ProtocolError(p); });
      }
    }
  }
}

void Group::Terminate() {
  // A diagnosis in progress finishes first (its exchange is bounded), so the
  // report names the culprit rather than our own termination.
  const auto until = Clock::now() + std::chrono::duration<double>(kDiagnosisBoundSeconds + 0.5);
  while (diagnosing_.load() > 0 && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Run([&](GroupState& s) { return s.AbortRequested("terminated (SIGTERM)"); });
  DieOfSigterm();
}

void Group::Close(bool goodbye) {
  if (monitor_.joinable()) {
    stop_ = true;
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    monitor_.join();
  }
  CloseFd(wake_fd_);
  std::vector<int> fds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (goodbye) SendLocked(kGoodbye, 0, nullptr, 0);
    fds = control_fds_;
    control_fds_.assign(control_fds_.size(), -1);
  }
  answers_cv_.notify_all();
  std::vector<pollfd> open;
  for (int p = 0; p < static_cast<int>(fds.size()); ++p) {
    const int fd = fds[p];
    bool lost;
    {
      std::lock_guard<std::mutex> lock(mu_);
      lost = state_.Lost(p) || state_.Silence(p, config_.clock->Now()) > 2 * HeartbeatPeriod();
    }
    // A peer found dead, or silent for two heartbeat periods (a frozen one,
    // found by another of its fingers), is not waited for: else its fingers
    // would exit a drain's bound later than the members that had no
    // connection to it.
    if (fd >= 0 && !lost) {
      ::shutdown(fd, SHUT_WR);
      open.push_back({fd, POLLIN, 0});
    }
  }
  // Drain until every peer closed too (so none reads a reset before our
  // last frame), but never longer than a silent peer would be waited for.
  Deadline d = DeadlineAfter(goodbye ? 1.0 : config_.heartbeat_timeout_s);
  while (!open.empty()) {
    int t = PollTimeoutMs(d);
    if (t == 0 || ::poll(open.data(), open.size(), t) <= 0) break;
    for (size_t i = 0; i < open.size();) {
      if (open[i].revents) {
        char b[4096];
        ssize_t r = ::recv(open[i].fd, b, sizeof b, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
          open.erase(open.begin() + static_cast<long>(i));
          continue;
        }
      }
      ++i;
    }
  }
  for (int& fd : fds) CloseFd(fd);
}

}  // namespace ringmaster::internal
