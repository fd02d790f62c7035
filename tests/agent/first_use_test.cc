// Data connections opened the first time an algorithm needs a peer
// (docs/engine.md, "Connections at scale"): formation connects the control
// overlay only (each member to its fingers); a ring opens 2 per stream and member, an all-to-all every pair;
// the acceptor keeps what it authenticated for its channel's transport and
// refuses the rest; a peer that cannot be reached fails the collective
// naming it, and a member awaiting a connection wakes on the group's abort.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "group/overlay.h"
#include "group_util.h"
#include "transport/data_acceptor.h"
#include "transport/data_dial.h"
#include "transport/net.h"
#include "transport/tcp_transport.h"

namespace ringmaster::testing {
namespace {

// Sockets this process holds (every member of an in-process group is here).
int SocketsInProcess() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    struct stat st {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (e->d_name[0] != '.' && ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ++n;
  }
  ::closedir(d);
  return n;
}

// The data sockets of a group of n formed in this process: all of its
// sockets but the control overlay's (one per member and finger: the same
// count for every member) and each member's data listener.
int DataSockets(int n, int before) {
  return SocketsInProcess() - before - n * static_cast<int>(internal::Fingers(0, n).size()) - n;
}

std::vector<CommunicatorSettings> Settings(int n, int streams) {
  auto s = LocalSettings(n);
  for (auto& m : s) m.streams = streams;
  return s;
}

// The data connections formation itself opens, on the first stream, for a
// power-of-two n: the link probe's ring exchange (each member to its right)
// and its agreement by recursive doubling (each member to r ^ 2^k).
int ProbeConnections(int n) {
  std::set<std::pair<int, int>> pairs;
  for (int r = 0; r < n; ++r) {
    pairs.insert(std::minmax(r, (r + 1) % n));
    for (int k = 1; k < n; k <<= 1) pairs.insert(std::minmax(r, r ^ k));
  }
  return static_cast<int>(pairs.size());
}

TEST(FirstUse, FormationOpensOnlyTheLinkProbesConnections) {
  constexpr int kN = 8;
  const int before = SocketsInProcess();
  std::vector<Status> errors;
  Group g = FormGroup(Settings(kN, 2), &errors);
  for (int r = 0; r < kN; ++r) ASSERT_TRUE(g[r]) << errors[r].ToString();
  // 16 connections (a socket at each end), not the full mesh's 28 per stream
  // and process sets' channel.
  ASSERT_EQ(ProbeConnections(kN), 16);
  EXPECT_EQ(DataSockets(kN, before), 2 * ProbeConnections(kN));
}

TEST(FirstUse, ARingAllReduceAtEightOpensTwoConnectionsPerStreamAndMember) {
  constexpr int kN = 8, kStreams = 2;
  const int before = SocketsInProcess();
  std::vector<Status> errors;
  Group g = FormGroup(Settings(kN, kStreams), &errors);
  for (int r = 0; r < kN; ++r) ASSERT_TRUE(g[r]) << errors[r].ToString();
  const int formed = DataSockets(kN, before);
  // Two tensors, one pack each: the packs go to both streams.
  std::vector<std::vector<float>> a(kN, std::vector<float>(1000)), b(kN, std::vector<float>(1000));
  std::vector<Status> st(kN);
  OnAll(kN, [&](int r) {
    for (auto& x : a[r]) x = float(r + 1);
    for (auto& x : b[r]) x = float(2 * (r + 1));
    Tensor t[2] = {{a[r].data(), 1000, DataType::kFloat32}, {b[r].data(), 1000, DataType::kFloat32}};
    CommunicationOptions o;
    o.algorithm = Algorithm::kRing;
    o.bytes_per_pack = 1;
    st[r] = g[r]->AllReduce(t, ReduceOp::kSum, o);
  });
  for (int r = 0; r < kN; ++r) {
    ASSERT_TRUE(st[r].ok()) << st[r].ToString();
    EXPECT_EQ(a[r][999], float(kN * (kN + 1) / 2));
    EXPECT_EQ(b[r][0], float(kN * (kN + 1)));
  }
  // The first stream's ring was open since the probe; the second stream's
  // opened now: its left and right neighbours' per member, nobody else's.
  EXPECT_EQ(DataSockets(kN, before) - formed, 2 * kN);
  EXPECT_EQ(DataSockets(kN, before), 2 * ProbeConnections(kN) + 2 * kN);
}

TEST(FirstUse, AnAllToAllConnectsEveryPair) {
  constexpr int kN = 8;
  const int before = SocketsInProcess();
  std::vector<Status> errors;
  Group g = FormGroup(Settings(kN, 1), &errors);
  for (int r = 0; r < kN; ++r) ASSERT_TRUE(g[r]) << errors[r].ToString();
  // 16 of the 28 pairs, from the probe; the all-to-all (one stream) needs all.
  ASSERT_EQ(DataSockets(kN, before), 2 * ProbeConnections(kN));
  std::vector<std::vector<int64_t>> in(kN, std::vector<int64_t>(kN)), out(kN, std::vector<int64_t>(kN));
  const std::vector<int64_t> counts(kN, 1);
  std::vector<Status> st(kN);
  OnAll(kN, [&](int r) {
    for (int p = 0; p < kN; ++p) in[r][p] = 100 * r + p;
    Tensor i{in[r].data(), kN, DataType::kInt64}, o{out[r].data(), kN, DataType::kInt64};
    st[r] = g[r]->AllToAll(i, counts, o, counts);
  });
  for (int r = 0; r < kN; ++r) {
    ASSERT_TRUE(st[r].ok()) << st[r].ToString();
    for (int p = 0; p < kN; ++p) EXPECT_EQ(out[r][p], 100 * p + r) << r << " from " << p;
  }
  EXPECT_EQ(DataSockets(kN, before), kN * (kN - 1));
  // And the group goes on over them.
  ExpectExactSum(g);
}

// Two members of one formation, by hand: rank 1 dials rank 0's acceptor.
struct Pair {
  internal::JobKey key{"0123456789abcdef0123456789abcdef"};
  internal::RefusalLog refusals{"test"};
  int port = 0;
  std::unique_ptr<internal::DataAcceptor> acceptor;  // rank 0's
  internal::MeshView View(int rank) const { return {&key, 77, rank, 2, 3}; }
  internal::DialTarget ToZero() const {
    return {"127.0.0.1", port, 0, "/job:worker/task:0", "/job:worker/task:1"};
  }
  Pair() {
    auto lfd = internal::Listen(0, &port);
    EXPECT_TRUE(lfd.ok());
    std::vector<std::vector<int>> held(2, std::vector<int>(3, -1));
    acceptor = std::make_unique<internal::DataAcceptor>(*lfd, View(0), &refusals, held);
  }
};

TEST(FirstUse, TheAcceptorKeepsAnAuthenticatedConnectionForItsChannelOnce) {
  Pair pair;
  EXPECT_EQ(pair.acceptor->Take(1, 1), -1);
  auto dialed = internal::DialPeer(pair.View(1), pair.ToZero(), 1, internal::DeadlineAfter(10));
  ASSERT_TRUE(dialed.ok()) << dialed.status().ToString();
  // The acceptor stores it before it says so on the channel's ready fd.
  pollfd pf{pair.acceptor->ready_fd(1), POLLIN, 0};
  ASSERT_EQ(::poll(&pf, 1, 10000), 1);
  pair.acceptor->Drain(1);
  int fd = pair.acceptor->Take(1, 1);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(pair.acceptor->Take(1, 1), -1) << "taken once";
  EXPECT_EQ(pair.acceptor->Take(1, 2), -1) << "another channel";
  const char hi[] = "hi";
  char got[3] = {};
  ASSERT_TRUE(internal::WriteAll(*dialed, hi, 3, internal::DeadlineAfter(5)).ok());
  ASSERT_TRUE(internal::ReadAll(fd, got, 3, internal::DeadlineAfter(5)).ok());
  EXPECT_STREQ(got, "hi");
  // A second one for the same member and channel, and one on the control
  // channel, are refused, and say so.
  auto again = internal::DialPeer(pair.View(1), pair.ToZero(), 1, internal::DeadlineAfter(10));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().ToString(),
            "Unavailable: /job:worker/task:0 is unreachable from /job:worker/task:1: it refused our data "
            "connection on channel 1");
  auto control = internal::DialPeer(pair.View(1), pair.ToZero(), 0, internal::DeadlineAfter(10));
  ASSERT_FALSE(control.ok());
  EXPECT_EQ(pair.refusals.count(), 2u);
  internal::CloseFd(fd);
  internal::CloseFd(*dialed);
}

TEST(FirstUse, AnotherKeyIsRefusedAsAtFormation) {
  Pair pair;
  internal::JobKey other("fedcba9876543210fedcba9876543210");
  internal::MeshView v = pair.View(1);
  v.key = &other;
  auto dialed = internal::DialPeer(v, pair.ToZero(), 1, internal::DeadlineAfter(10));
  ASSERT_FALSE(dialed.ok());
  EXPECT_EQ(dialed.status().code(), StatusCode::kUnauthenticated) << dialed.status().ToString();
  EXPECT_NE(dialed.status().message().find("/job:worker/task:0"), std::string::npos)
      << dialed.status().ToString();
  EXPECT_EQ(pair.acceptor->Take(1, 1), -1);
}

internal::TcpTransport::Hooks TestHooks(int abort_fd, const std::function<Status()>& aborted) {
  internal::TcpTransport::Hooks h;
  h.peer_name = [](int r) { return "/job:worker/task:" + std::to_string(r); };
  h.abort_status = aborted;
  h.abort_fd = abort_fd;
  return h;
}

TEST(FirstUse, APeerUnreachableAtFirstUseFailsTheCollectiveNamingIt) {
  // Where rank 0's data listener was: nobody listens there now.
  int port = 0;
  auto lfd = internal::Listen(0, &port);
  ASSERT_TRUE(lfd.ok());
  int fd = *lfd;
  internal::CloseFd(fd);
  internal::JobKey key;
  auto hooks = TestHooks(-1, [] { return OkStatus(); });
  hooks.first_use.dial = [&](int p, internal::Deadline d) {
    return internal::DialPeer({&key, 1, 1, 2, 2},
                              {"127.0.0.1", port, p, "/job:worker/task:0", "/job:worker/task:1"}, 1, d);
  };
  hooks.first_use.take = [](int) { return -1; };
  hooks.first_use.drain = [] {};
  internal::TcpTransport t(1, 2, {-1, -1}, hooks);
  t.Begin(1, internal::NoDeadline());  // no timeout: the error must come anyway
  char b[4] = {};
  int req = t.Isend(0, 7, b, sizeof b);
  Status st = t.Wait(req);
  EXPECT_EQ(
      st.ToString(),
      "Unavailable: /job:worker/task:0 is unreachable from /job:worker/task:1: nobody listens at its data "
      "port (the process exited or was killed)");
  EXPECT_EQ(t.connected(), 0);
}

TEST(FirstUse, ConnectingPastTheCollectivesDeadlineIsItsTimeoutForTheDiagnosis) {
  auto hooks = TestHooks(-1, [] { return OkStatus(); });
  hooks.first_use.dial = [](int, internal::Deadline) -> StatusOr<int> {
    return UnavailableError("/job:worker/task:0 is unreachable from /job:worker/task:1: it did not answer");
  };
  hooks.first_use.take = [](int) { return -1; };
  hooks.first_use.drain = [] {};
  internal::TcpTransport t(1, 2, {-1, -1}, hooks);
  t.Begin(3, internal::Clock::now());  // its deadline has passed
  char b[4] = {};
  Status st = t.Wait(t.Isend(0, 7, b, sizeof b));
  EXPECT_EQ(st.ToString(), "DeadlineExceeded: collective #3 timed out");
  // Within its time, the dial's own error names the peer.
  t.Begin(4, internal::NoDeadline());
  st = t.Wait(t.Isend(0, 7, b, sizeof b));
  EXPECT_EQ(st.ToString(),
            "Unavailable: /job:worker/task:0 is unreachable from /job:worker/task:1: it did not answer");
}

// The flight recorder's "heard from" comes from the transport: every
// sender of the collective, whatever its rank (a 64-bit mask once dropped
// ranks from 64 up), each once, and none left over for the next one.
TEST(FirstUse, TheTransportHearsRanksPast64) {
  constexpr int kN = 100;
  int a[2], b[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
  auto hooks = [] {
    auto h = TestHooks(-1, [] { return OkStatus(); });
    h.first_use.dial = [](int, internal::Deadline) -> StatusOr<int> { return InternalError("not used"); };
    h.first_use.take = [](int) { return -1; };
    h.first_use.drain = [] {};
    return h;
  };
  std::vector<int> fds0(kN, -1), fds70(kN, -1), fds99(kN, -1);
  fds0[70] = a[0];
  fds0[99] = b[0];
  fds70[0] = a[1];
  fds99[0] = b[1];
  internal::TcpTransport t0(0, kN, fds0, hooks()), t70(70, kN, fds70, hooks()), t99(99, kN, fds99, hooks());
  for (uint64_t seq : {1, 2}) {
    int32_t x = 70, y = 99, got[2] = {};
    t0.Begin(seq, internal::NoDeadline());
    t70.Begin(seq, internal::NoDeadline());
    t99.Begin(seq, internal::NoDeadline());
    const int r1 = t0.Irecv(70, 5, &got[0], 4), r2 = t0.Irecv(99, 5, &got[1], 4);
    std::thread s70([&] { EXPECT_TRUE(t70.Wait(t70.Isend(0, 5, &x, 4)).ok()); });
    std::thread s99([&] { EXPECT_TRUE(t99.Wait(t99.Isend(0, 5, &y, 4)).ok()); });
    EXPECT_TRUE(t0.Wait(r1).ok());
    EXPECT_TRUE(t0.Wait(r2).ok());
    s70.join();
    s99.join();
    EXPECT_EQ(got[0], 70);
    EXPECT_EQ(got[1], 99);
    std::vector<int> heard(t0.HeardFrom().begin(), t0.HeardFrom().end());
    std::sort(heard.begin(), heard.end());
    EXPECT_EQ(heard, (std::vector<int>{70, 99})) << "collective " << seq;
    EXPECT_TRUE(t70.HeardFrom().empty());
  }
  t0.Begin(3, internal::NoDeadline());
  EXPECT_TRUE(t0.HeardFrom().empty()) << "a new collective starts with nobody heard";
}

TEST(FirstUse, AMemberAwaitingAConnectionWakesOnTheGroupsAbort) {
  const int abort_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int ready_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  std::atomic<bool> aborted{false};
  auto hooks = TestHooks(abort_fd, [&] {
    return aborted ? UnavailableError("/job:worker/task:1 is unreachable from /job:worker/task:2: it died")
                   : OkStatus();
  });
  hooks.first_use.dial = [](int, internal::Deadline) -> StatusOr<int> { return InternalError("not used"); };
  hooks.first_use.take = [](int) { return -1; };  // rank 1 never connects to us
  hooks.first_use.ready_fd = ready_fd;
  hooks.first_use.drain = [] {};
  internal::TcpTransport t(0, 2, {-1, -1}, hooks);
  t.Begin(1, internal::NoDeadline());
  char b[4];
  int req = t.Irecv(1, 7, b, sizeof b);
  // The group aborts (a member that could not reach its peer says so):
  // whenever it comes, the wait ends with its cause.
  std::thread abort([&] {
    aborted = true;
    uint64_t one = 1;
    (void)!::write(abort_fd, &one, sizeof one);
  });
  Status st = t.Wait(req);
  abort.join();
  EXPECT_EQ(st.ToString(), "Unavailable: /job:worker/task:1 is unreachable from /job:worker/task:2: it died");
  ::close(abort_fd);
  ::close(ready_fd);
}

}  // namespace
}  // namespace ringmaster::testing
