#include "bootstrap/mesh.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "agent_log.h"
#include "bootstrap/join_rules.h"
#include "bootstrap/mesh_ledger.h"
#include "bootstrap/random_id.h"
#include "clock.h"
#include "transport/data_dial.h"
#include "transport/fd_budget.h"
#include "transport/handshake.h"
#include "transport/net.h"

namespace ringmaster::internal {

namespace {

// A round whose mesh cannot form: a member of it left (its process ended, or
// it gave up on this mesh and closed its connections). Not final: FormMesh
// takes the next round, with whoever joins it, within the same deadline.
Status LeftRound(const std::string& why) {
  return AbortedError("group formation: " + why);
}

// The peer (its place in the round's group) one of whose connections of this
// round has been closed, if any: it left the round. Before the mesh forms on
// our side a peer may already send (it formed on its own), so only the hang-up
// counts, never readable data.
std::optional<int> PeerThatLeft(const std::vector<std::vector<int>>& conns) {
  std::vector<pollfd> pfds;
  std::vector<int> who;
  for (int p = 0; p < static_cast<int>(conns.size()); ++p) {
    for (int fd : conns[p]) {
      if (fd < 0) continue;
      pfds.push_back({fd, POLLRDHUP, 0});
      who.push_back(p);
    }
  }
  if (pfds.empty() || ::poll(pfds.data(), pfds.size(), 0) <= 0) return std::nullopt;
  for (size_t i = 0; i < pfds.size(); ++i) {
    if (pfds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) return who[i];
  }
  return std::nullopt;
}

// Our side of one connection to a lower rank: Hello, check its Challenge,
// Proof, Ack (handshake.h). Its listener was open before the table was handed
// out, so a refused connection means it is gone from this round; so does a
// hang-up on a connection we already hold (the leader closes all of its own
// when the round is overtaken).
StatusOr<int> ConnectTo(const MeshConfig& c, const MeshView& view, const Table& table, int p, int ch,
                        Deadline deadline, const std::vector<std::vector<int>>& held) {
  const std::string& peer = c.names[p];
  auto gone = [&](int err) -> Status {
    if (err == ECONNREFUSED) return LeftRound(peer + " is not listening: it left this round");
    if (auto q = PeerThatLeft(held))
      return LeftRound(c.names[*q] + " closed its connection: it left this round");
    return OkStatus();
  };
  auto fd = ConnectWithRetry(c.hosts[p], table.members[p].data_port, deadline, gone);
  if (!fd.ok() && fd.status().code() == StatusCode::kAborted) return fd.status();
  if (!fd.ok() && fd.status().code() == StatusCode::kFailedPrecondition)  // ours, not the peer's
    return FailedPreconditionError("group formation: " + fd.status().message());
  if (!fd.ok())
    return UnavailableError("group formation: cannot reach " + peer + ": " + fd.status().message());
  int sock = *fd;
  const char* what = ch == 0 ? "control connection" : "data connection";
  Status st = ConnectorHandshake(sock, view, p, ch, peer, deadline);
  if (!st.ok()) {
    CloseFd(sock);
    if (st.code() == StatusCode::kUnauthenticated && st.message().empty()) {
      return UnauthenticatedError("group formation: " + peer +
                                  " did not accept our proof of the job key (the "
                                  "members were started with different keys)");
    }
    if (st.code() == StatusCode::kUnauthenticated)
      return UnauthenticatedError("group formation: " + st.message());
    // A refusal is an Ack that says so; a connection closed before it is the
    // peer leaving this round (a member that gives one up drops its
    // handshakes too).
    if (st.code() == StatusCode::kUnavailable)
      return LeftRound(peer + " closed our " + what + " during the handshake (" + st.message() +
                       "): it left this round");
    return Status(st.code(),
                  "group formation: " + peer + " did not complete our " + what + ": " + st.message());
  }
  return sock;
}

// One stranger's connection while it says who it is.
struct PendingHandshake {
  int fd;
  std::string host;
  Deadline until;
  HandshakeAcceptor hs;
};

// How often a member waiting for connections looks whether its round was
// left (a hang-up on a connection it holds; at the leader, a member of the
// round joining the next one).
constexpr int kLeftCheckMs = 100;

// The mesh: the higher rank connects, once per channel (to the members the
// ledger connects: with a control overlay, our fingers), and authenticates;
// the lower one accepts, handling every pending handshake at once (a slow or
// hostile connection holds up nobody else). Aborted (LeftRound): a member
// left the round.
Status ConnectMesh(const MeshConfig& c, const Table& table, int listen_fd, Deadline deadline,
                   MeshLedger& ledger, Bootstrap& bootstrap) {
  const int rank = c.rank, size = static_cast<int>(c.names.size()), channels = c.channels;
  const MeshView view{c.key, table.incarnation, rank, size, channels};
  const int awaited = c.first_use ? 1 : channels;  // the control channel only, or all
  for (int p = 0; p < rank; ++p) {
    if (!ledger.Connects(p)) continue;
    for (int ch = 0; ch < awaited; ++ch) {
      auto fd = ConnectTo(c, view, table, p, ch, deadline, ledger.conns());
      if (!fd.ok()) return fd.status();
      ledger.Connected(p, ch, *fd);
    }
  }
  std::vector<PendingHandshake> pending;
  auto drop = [&](size_t i, const std::string& why) {
    if (!why.empty()) c.refusals->Refuse(pending[i].host, why);
    CloseFd(pending[i].fd);
    pending.erase(pending.begin() + static_cast<long>(i));
  };
  while (ledger.expected() > 0) {
    const auto now = Clock::now();
    for (size_t i = pending.size(); i-- > 0;) {
      if (now >= pending[i].until)
        drop(i, "no complete handshake within " + FormatSeconds(kHandshakeSeconds));
    }
    if (now >= deadline) {
      for (size_t i = pending.size(); i-- > 0;) drop(i, "");
      return ledger.TimedOut(c.names, c.timeout_s);
    }
    Status left;
    if (auto q = PeerThatLeft(ledger.conns())) {
      left = LeftRound(c.names[*q] + " closed its connection: it left this round");
    } else if (bootstrap.Superseded(table)) {
      left = LeftRound("a member of this round joined the next one (it restarted, or gave up on this round)");
    }
    if (!left.ok()) {
      for (size_t i = pending.size(); i-- > 0;) drop(i, "");
      return left;
    }
    std::vector<pollfd> pfds;
    Deadline wake = std::min(deadline, now + std::chrono::milliseconds(kLeftCheckMs));
    for (const auto& h : pending) {
      pfds.push_back({h.fd, POLLIN, 0});
      wake = std::min(wake, h.until);
    }
    const bool room = pending.size() < kMaxPendingHandshakes;  // else new ones wait in the backlog
    if (room) pfds.push_back({listen_fd, POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), PollTimeoutMs(wake)) <= 0) continue;
    // Handshakes first (in reverse, so erasing keeps the indices below valid).
    for (size_t i = pending.size(); i-- > 0;) {
      if (!pfds[i].revents) continue;
      auto& h = pending[i];
      auto read = ReadHandshake(h.fd, h.hs);
      if (!read) continue;
      auto step = std::move(*read);
      if (step.kind == HandshakeAcceptor::Kind::kAccepted) {
        if (auto why = ledger.Refusal(h.hs.from(), h.hs.channel()))
          step = {HandshakeAcceptor::Kind::kRejected, "", *why};
      }
      const Deadline write_by = std::min(h.until, deadline);
      if (!step.reply.empty() && !WriteAll(h.fd, step.reply.data(), step.reply.size(), write_by).ok()) {
        drop(i, step.kind == HandshakeAcceptor::Kind::kRejected ? step.why : kClosedDuringHandshake);
        continue;
      }
      if (step.kind == HandshakeAcceptor::Kind::kRejected) {
        drop(i, step.why);
      } else if (step.kind == HandshakeAcceptor::Kind::kAccepted) {
        ledger.Connected(h.hs.from(), h.hs.channel(), h.fd);
        pending.erase(pending.begin() + static_cast<long>(i));
      }
    }
    if (room && pfds.back().revents) {
      while (pending.size() < kMaxPendingHandshakes) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
          // The pending connection stays in the backlog: polling again would spin.
          const bool system_wide = errno == ENFILE;  // before the closes below change errno
          for (size_t i = pending.size(); i-- > 0;) drop(i, "");
          return FailedPreconditionError(
              std::string("group formation: out of file descriptors accepting connections") +
              (system_wide ? " (the system's table is full)" : "") + ": " + DescribeFdLimit());
        }
        if (fd < 0) break;
        pending.push_back(
            {fd, AddressText(addr), DeadlineAfter(kHandshakeSeconds), HandshakeAcceptor(view, FreshNonce())});
      }
    }
  }
  for (size_t i = pending.size(); i-- > 0;) drop(i, "");
  return OkStatus();
}

// One round of FormMesh; Aborted (LeftRound): a member left that round.
StatusOr<Mesh> FormRound(const MeshConfig& c, Bootstrap& bootstrap, Deadline deadline);

}  // namespace

StatusOr<Mesh> FormMesh(const MeshConfig& c, Bootstrap& bootstrap) {
  const int size = static_cast<int>(c.names.size());
  if (size == 1) {
    Mesh mesh;
    mesh.conns = std::move(MeshLedger(c.rank, size, c.channels).conns());
    mesh.incarnation = RandomId();
    mesh.members = {0};
    return mesh;
  }
  // Before anything is opened: a group too large for the process's
  // descriptor limit fails now, saying so, not at the formation deadline.
  const int control = c.control_peers ? static_cast<int>(c.control_peers(c.rank, size).size()) : -1;
  if (Status st =
          EnsureMeshDescriptors(MeshDescriptors(size, c.channels, control, c.first_use), size, c.channels);
      !st.ok())
    return st;
  const Deadline deadline = c.deadline ? *c.deadline : DeadlineAfter(c.timeout_s);
  // A round that a member left is given up by everyone in it (each closes
  // its connections, which tells the others), and all take the next one:
  // with a restarted member's new process, or without it until the deadline
  // names it.
  while (true) {
    auto mesh = FormRound(c, bootstrap, deadline);
    if (mesh.ok() || mesh.status().code() != StatusCode::kAborted) return mesh;
    if (Clock::now() >= deadline) {
      return DeadlineExceededError("group formation timed out after " + FormatSeconds(c.timeout_s) +
                                   "; its last round: " + mesh.status().message());
    }
    Info(c.names[c.rank] + ": " + mesh.status().message() + "; forming again");
  }
}

namespace {

StatusOr<Mesh> FormRound(const MeshConfig& c, Bootstrap& bootstrap, Deadline deadline) {
  const int size = static_cast<int>(c.names.size());
  Mesh mesh;
  int data_port = 0;
  auto lfd = Listen(0, &data_port);
  if (!lfd.ok()) return lfd.status();
  int listen_fd = *lfd;
  const MemberEntry self{c.rank, c.names[c.rank], c.hosts[c.rank], data_port, c.process_id};
  auto table = bootstrap.Exchange(self, deadline);
  StatusOr<int> place = table.ok() ? CheckTable(*table, size, c.min_size, c.rank) : table.status();
  if (!place.ok()) {
    CloseFd(listen_fd);
    return place.status();
  }
  // The group the table forms: its members, renumbered in rank order.
  MeshConfig g = c;
  g.rank = *place;
  g.names.clear();
  g.hosts.clear();
  for (const auto& m : table->members) {
    mesh.members.push_back(m.rank);
    g.names.push_back(c.names[m.rank]);
    // Where the table lists it: the address its Join came from (the leader:
    // where our Join was answered), not its name, which lags a replaced pod.
    g.hosts.push_back(m.data_host.empty() ? c.hosts[m.rank] : m.data_host);
  }
  const int gsize = static_cast<int>(g.names.size());
  MeshLedger ledger(g.rank, gsize, c.channels, c.first_use ? 1 : -1,
                    c.control_peers ? c.control_peers(g.rank, gsize) : std::vector<int>{});
  Status st = ConnectMesh(g, *table, listen_fd, deadline, ledger, bootstrap);
  // With data channels on first use, the listener serves them from now on.
  if (!st.ok() || !c.first_use) CloseFd(listen_fd);
  auto& conns = ledger.conns();
  if (!st.ok()) {
    for (auto& v : conns)
      for (int& fd : v) CloseFd(fd);
    return st;
  }
  mesh.incarnation = table->incarnation;
  mesh.rank = g.rank;
  for (auto& v : conns)
    for (int fd : v)
      if (fd >= 0) TuneDataSocket(fd);
  mesh.conns = std::move(conns);
  if (c.first_use) {
    mesh.listen_fd = listen_fd;
    mesh.data_hosts = g.hosts;
    for (const auto& m : table->members) mesh.data_ports.push_back(m.data_port);
  }
  return mesh;
}

}  // namespace

}  // namespace ringmaster::internal
