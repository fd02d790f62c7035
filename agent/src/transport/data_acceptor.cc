#include "transport/data_acceptor.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "transport/net.h"
#include "transport/wire.h"

namespace ringmaster::internal {

namespace {

constexpr int kHeld = -2;

struct Pending {
  int fd;
  std::string host;
  Deadline until;
  HandshakeAcceptor hs;
};

}  // namespace

DataAcceptor::DataAcceptor(int listen_fd, const MeshView& view, RefusalLog* refusals,
                           const std::vector<std::vector<int>>& held)
    : listen_fd_(listen_fd), key_(*view.key), view_(view), refusals_(refusals) {
  view_.key = &key_;
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  for (int ch = 0; ch < view_.channels; ++ch) ready_.push_back(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  slots_.assign(static_cast<size_t>(view_.size), std::vector<int>(static_cast<size_t>(view_.channels), -1));
  for (size_t p = 0; p < slots_.size() && p < held.size(); ++p) {
    for (size_t ch = 0; ch < slots_[p].size() && ch < held[p].size(); ++ch) {
      if (held[p][ch] >= 0) slots_[p][ch] = kHeld;
    }
  }
  thread_ = std::thread([this] { Loop(); });
}

void DataAcceptor::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  thread_.join();
  CloseFd(listen_fd_);
}

DataAcceptor::~DataAcceptor() {
  Stop();
  CloseFd(stop_fd_);
  for (int& fd : ready_) CloseFd(fd);
  for (auto& v : slots_)
    for (int& fd : v)
      if (fd >= 0) CloseFd(fd);
}

int DataAcceptor::Take(int peer, int channel) {
  std::lock_guard<std::mutex> lock(mu_);
  int& slot = slots_[static_cast<size_t>(peer)][static_cast<size_t>(channel)];
  if (slot < 0) return -1;
  const int fd = slot;
  slot = kHeld;
  return fd;
}

void DataAcceptor::Drain(int channel) {
  uint64_t n;
  (void)!::read(ready_[static_cast<size_t>(channel)], &n, sizeof n);
}

std::string DataAcceptor::RefusalLocked(int from, int channel) const {
  // The control connections are formation's, all made before this starts.
  if (channel == 0) return "a control connection after formation";
  if (slots_[static_cast<size_t>(from)][static_cast<size_t>(channel)] != -1)
    return "a second connection for the same member and channel";
  return "";
}

void DataAcceptor::Loop() {
  std::vector<Pending> pending;
  Deadline rest_until = Clock::now();  // out of descriptors: the listener rests until then
  auto drop = [&](size_t i, const std::string& why) {
    if (!why.empty()) refusals_->Refuse(pending[i].host, why);
    CloseFd(pending[i].fd);
    pending.erase(pending.begin() + static_cast<long>(i));
  };
  while (true) {
    const auto now = Clock::now();
    for (size_t i = pending.size(); i-- > 0;) {
      if (now >= pending[i].until)
        drop(i, "no complete handshake within " + FormatSeconds(kHandshakeSeconds));
    }
    std::vector<pollfd> pfds;
    Deadline wake = NoDeadline();
    for (const auto& h : pending) {
      pfds.push_back({h.fd, POLLIN, 0});
      wake = std::min(wake, h.until);
    }
    // Else new ones wait in the backlog.
    const bool room = pending.size() < kMaxPending && now >= rest_until;
    if (now < rest_until) wake = std::min(wake, rest_until);
    pfds.push_back({stop_fd_, POLLIN, 0});
    if (room) pfds.push_back({listen_fd_, POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), PollTimeoutMs(wake)) <= 0) continue;
    if (pfds[pending.size()].revents) break;  // stopping
    for (size_t i = pending.size(); i-- > 0;) {
      if (!pfds[i].revents) continue;
      auto& h = pending[i];
      auto read = ReadHandshake(h.fd, h.hs);
      if (!read) continue;
      auto step = std::move(*read);
      if (step.kind == HandshakeAcceptor::Kind::kAccepted) {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto why = RefusalLocked(h.hs.from(), h.hs.channel()); !why.empty()) {
          // An Ack that refuses: the dialer gives up at once, naming us,
          // rather than taking a bare close for a handshake to try again.
          const Ack no{kAckMagic, 1};
          step = {HandshakeAcceptor::Kind::kRejected,
                  std::string(reinterpret_cast<const char*>(&no), sizeof no), why};
        }
      }
      if (step.kind == HandshakeAcceptor::Kind::kRejected) {
        // Logged before the answer: whoever reads the refusal finds it counted.
        refusals_->Refuse(h.host, step.why);
        if (!step.reply.empty()) (void)WriteAll(h.fd, step.reply.data(), step.reply.size(), h.until);
        drop(i, "");
        continue;
      }
      if (!step.reply.empty() && !WriteAll(h.fd, step.reply.data(), step.reply.size(), h.until).ok()) {
        drop(i, kClosedDuringHandshake);
        continue;
      }
      if (step.kind == HandshakeAcceptor::Kind::kAccepted) {
        const int from = h.hs.from(), channel = h.hs.channel();
        TuneDataSocket(h.fd);
        {
          std::lock_guard<std::mutex> lock(mu_);
          slots_[static_cast<size_t>(from)][static_cast<size_t>(channel)] = h.fd;
        }
        uint64_t one = 1;
        (void)!::write(ready_[static_cast<size_t>(channel)], &one, sizeof one);
        pending.erase(pending.begin() + static_cast<long>(i));
      }
    }
    if (room && pfds.back().revents) {
      while (pending.size() < kMaxPending) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        int fd =
            ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
          // The connection stays queued, and polling again would spin: rest
          // (its dialer's own bound names us if no descriptor frees up).
          rest_until = Clock::now() + std::chrono::milliseconds(100);
          break;
        }
        if (fd < 0) break;
        pending.push_back({fd, AddressText(addr), DeadlineAfter(kHandshakeSeconds),
                           HandshakeAcceptor(view_, FreshNonce())});
      }
    }
  }
  for (size_t i = pending.size(); i-- > 0;) drop(i, "");
}

}  // namespace ringmaster::internal
