#include "transport/tcp_transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/net.h"
#include "transport/peer_loss.h"

namespace ringmaster::internal {

TcpTransport::TcpTransport(int rank, int size, std::vector<int> fds, Hooks hooks)
    : rank_(rank),
      size_(size),
      fds_(std::move(fds)),
      hooks_(std::move(hooks)),
      sendq_(size),
      recvq_(size),
      is_heard_(static_cast<size_t>(size), 0) {}

TcpTransport::~TcpTransport() {
  CloseAll();
}

void TcpTransport::CloseAll() {
  for (int& fd : fds_) CloseFd(fd);
}

int TcpTransport::connected() const {
  int n = 0;
  for (int fd : fds_) n += fd >= 0;
  return n;
}

Status TcpTransport::ConnectNeeded(bool* awaiting) {
  *awaiting = false;
  const FirstUse& fu = hooks_.first_use;
  if (!fu.dial) return OkStatus();
  bool drained = false;
  for (int p = 0; p < size_; ++p) {
    if (fds_[p] >= 0 || p == rank_ || (sendq_[p].empty() && recvq_[p].empty())) continue;
    if (p < rank_) {
      auto fd = fu.dial(p, deadline_);
      if (!fd.ok()) {
        Status aborted = hooks_.abort_status();
        if (!aborted.ok()) return aborted;  // the first cause wins
        // The collective's time ran out while connecting: a timeout like
        // any wait's, which the executor diagnoses (who never entered).
        if (Clock::now() >= deadline_) return DeadlineExceededError(WireSeqName(seq_) + " timed out");
        return fd.status();
      }
      fds_[p] = *fd;
      continue;
    }
    if (!drained) {
      fu.drain();
      drained = true;
    }
    fds_[p] = fu.take(p);
    if (fds_[p] < 0) *awaiting = true;
  }
  return OkStatus();
}

void TcpTransport::Begin(uint64_t seq, Deadline deadline) {
  seq_ = seq;
  deadline_ = deadline;
  reqs_.clear();
  for (auto& q : sendq_) q.clear();
  for (auto& q : recvq_) q.clear();
  pending_ = 0;
  for (int p : heard_) is_heard_[static_cast<size_t>(p)] = 0;
  heard_.clear();
}

int TcpTransport::Isend(int peer, uint32_t tag, const void* data, size_t bytes) {
  Req r{true, false, peer, tag, const_cast<char*>(static_cast<const char*>(data)), bytes};
  r.hdr = WireHeader{kDataMagic, tag, seq_, bytes};
  reqs_.push_back(r);
  int id = static_cast<int>(reqs_.size()) - 1;
  sendq_[peer].push_back(id);
  ++pending_;
  return id;
}

int TcpTransport::Irecv(int peer, uint32_t tag, void* data, size_t bytes) {
  reqs_.push_back(Req{false, false, peer, tag, static_cast<char*>(data), bytes});
  int id = static_cast<int>(reqs_.size()) - 1;
  recvq_[peer].push_back(id);
  ++pending_;
  return id;
}

Status TcpTransport::PeerError(int peer, int err) {
  Status aborted = hooks_.abort_status();
  if (!aborted.ok()) return aborted;  // the first cause wins
  return UnreachableError(hooks_.peer_name(peer), hooks_.peer_name(rank_), HowFromErrno(err));
}

// What is left of a request on the wire, header first: one sendmsg/recvmsg
// moves both, so a small message costs one system call.
msghdr TcpTransport::Remaining(Req& r, iovec iov[2]) {
  constexpr size_t kHdr = sizeof(WireHeader);
  int n = 0;
  if (r.done < kHdr) iov[n++] = {reinterpret_cast<char*>(&r.hdr) + r.done, kHdr - r.done};
  size_t pdone = r.done > kHdr ? r.done - kHdr : 0;
  if (pdone < r.bytes) iov[n++] = {r.data + pdone, r.bytes - pdone};
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = static_cast<size_t>(n);
  return m;
}

Status TcpTransport::Progress(bool* moved) {
  constexpr size_t kHdr = sizeof(WireHeader);
  for (int p = 0; p < size_; ++p) {
    if (fds_[p] < 0 && hooks_.first_use.dial) continue;  // not connected yet (ConnectNeeded)
    auto& sq = sendq_[p];
    while (!sq.empty()) {
      Req& r = reqs_[sq.front()];
      iovec iov[2];
      msghdr m = Remaining(r, iov);
      ssize_t w = ::sendmsg(fds_[p], &m, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return PeerError(p, errno);
      }
      *moved = true;
      r.done += static_cast<size_t>(w);
      if (r.done == kHdr + r.bytes) {
        r.complete = true;
        --pending_;
        sq.pop_front();
      }
    }
    auto& rq = recvq_[p];
    while (!rq.empty()) {
      Req& r = reqs_[rq.front()];
      iovec iov[2];
      msghdr m = Remaining(r, iov);
      ssize_t got = ::recvmsg(fds_[p], &m, 0);
      if (got == 0) return PeerError(p, 0);
      if (got < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return PeerError(p, errno);
      }
      *moved = true;
      bool had_header = r.done >= kHdr;
      r.done += static_cast<size_t>(got);
      // Acknowledge at once while a large message streams in. Linux delays
      // ACKs on a connection it thinks is request-response (ours, after the
      // small messages), and a sender limited by its window then waits for
      // the delayed ACK or a tail loss probe: 10-20 ms stalls at 64 KiB on
      // 1 Gbit/s links (docs/benchmarks/network.md). Linux clears the flag again,
      // so it is set after each read.
      if (r.bytes >= kQuickAckBytes && r.done < kHdr + r.bytes) {
        int one = 1;
        ::setsockopt(fds_[p], IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
      }
      if (!had_header && r.done >= kHdr) {
        const WireHeader& h = r.hdr;
        if (h.magic != kDataMagic) {
          return InternalError("protocol error from " + hooks_.peer_name(p) + " in " + WireSeqName(seq_) +
                               ": not a Ringmaster data frame");
        }
        if (h.seq != seq_ || h.tag != r.tag || h.length != r.bytes) {
          return InternalError("protocol error from " + hooks_.peer_name(p) + ": expected " +
                               WireSeqName(seq_) + " tag " + std::to_string(r.tag) + " with " +
                               std::to_string(r.bytes) + " bytes, got " + WireSeqName(h.seq) + " tag " +
                               std::to_string(h.tag) + " with " + std::to_string(h.length) + " bytes");
        }
      }
      if (r.done == kHdr + r.bytes) {
        r.complete = true;
        --pending_;
        if (!is_heard_[static_cast<size_t>(p)]) {
          is_heard_[static_cast<size_t>(p)] = 1;
          heard_.push_back(p);
        }
        rq.pop_front();
      }
    }
  }
  return OkStatus();
}

Status TcpTransport::WaitUntil(const std::function<bool()>& done) {
  std::vector<pollfd> pfds;
  // Before sleeping in poll, keep trying for a short while, yielding the CPU
  // between tries: the peer's bytes usually come within microseconds, and a
  // sleep and wake-up costs more than that on a busy (or virtual) machine.
  auto spin_until = Clock::now() + kSpinBeforePoll;
  while (true) {
    RM_RETURN_IF_ERROR(hooks_.abort_status());
    bool moved = false, awaiting = false;
    RM_RETURN_IF_ERROR(ConnectNeeded(&awaiting));
    RM_RETURN_IF_ERROR(Progress(&moved));
    if (done()) return OkStatus();
    if (moved) {
      spin_until = Clock::now() + kSpinBeforePoll;
      continue;
    }
    if (Clock::now() < spin_until) {
      ::sched_yield();
      continue;
    }
    pfds.clear();
    for (int p = 0; p < size_; ++p) {
      short ev = 0;
      if (!sendq_[p].empty()) ev |= POLLOUT;
      if (!recvq_[p].empty()) ev |= POLLIN;
      if (ev && fds_[p] >= 0) pfds.push_back({fds_[p], ev, 0});
    }
    if (awaiting) pfds.push_back({hooks_.first_use.ready_fd, POLLIN, 0});
    if (hooks_.abort_fd >= 0) pfds.push_back({hooks_.abort_fd, POLLIN, 0});
    int timeout = PollTimeoutMs(deadline_);
    if (timeout == 0) return DeadlineExceededError(WireSeqName(seq_) + " timed out");
    int rc = ::poll(pfds.data(), pfds.size(), timeout);
    if (rc < 0 && errno != EINTR) return InternalError(std::string("poll: ") + std::strerror(errno));
  }
}

Status TcpTransport::Wait(int request) {
  return WaitUntil([&] { return reqs_[request].complete; });
}

Status TcpTransport::WaitAll() {
  return WaitUntil([&] { return pending_ == 0; });
}

}  // namespace ringmaster::internal
