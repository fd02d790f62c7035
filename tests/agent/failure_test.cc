// Failure semantics over TCP: timeouts, aborts, re-forming, formation
// timeouts naming the missing tasks, and hostile bytes on both ports.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "bootstrap/control_server.h"
#include "bootstrap/control_service.h"
#include "bootstrap/join_checks.h"
#include "bootstrap/mesh.h"
#include "collectives/link_model.h"
#include "group_util.h"
#include "ringmaster/agent.grpc.pb.h"
#include "transport/net.h"
#include "transport/tcp_transport.h"
#include "transport/wire.h"

namespace ringmaster {
namespace {

using Clock = std::chrono::steady_clock;
using testing::FormGroup;
using testing::Group;
using testing::LocalSettings;
using testing::OnAll;
using testing::Via;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// All members all-reduce and check the sum (after a re-formation, say).
void ExpectWorkingGroup(Group& g) {
  testing::ExpectExactSum(g, 100001);
}

bool WaitUnhealthy(Communicator& c, double seconds) {
  auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    if (!c.health().ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(Timeout, StalledMemberGivesDeadlineExceededThenReformWorks) {
  const int n = 3;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<Status> st(n);
  std::vector<double> took(n);
  OnAll(n, [&](int r) {
    if (r == 2) {  // stalls: never enters the collective
      EXPECT_TRUE(WaitUnhealthy(*g[r], 20)) << "the stalled member never heard of the abort";
      return;
    }
    std::vector<float> v(50000, 1.0f);
    Tensor t{v.data(), int64_t(v.size()), DataType::kFloat32};
    CommunicationOptions o;
    o.timeout_seconds = 1.0;
    auto start = Clock::now();
    st[r] = g[r]->AllReduce({&t, 1}, ReduceOp::kSum, o);
    took[r] = Since(start);
  });
  bool some_deadline = false;
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(st[r].code() == StatusCode::kDeadlineExceeded || st[r].code() == StatusCode::kAborted)
        << st[r].ToString();
    some_deadline |= st[r].code() == StatusCode::kDeadlineExceeded;
    // The culprit is named, and so are those that waited.
    EXPECT_NE(st[r].message().find(g[0]->TaskName(2) + " never entered it (it has finished none)"),
              std::string::npos)
        << st[r].ToString();
    EXPECT_NE(st[r].message().find(g[0]->TaskName(0) + " and " + g[0]->TaskName(1) + " waited"),
              std::string::npos)
        << st[r].ToString();
    // Contract: within timeout + 1 s; generous margin for sanitizer builds.
    EXPECT_LT(took[r], 1.0 + 3.0) << "rank " << r;
  }
  EXPECT_TRUE(some_deadline);
  // After the abort, calls fail fast with Aborted.
  float x = 1;
  Tensor t{&x, 1, DataType::kFloat32};
  auto start = Clock::now();
  Status s = g[0]->AllReduce({&t, 1}, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_LT(Since(start), 1.0);
  // Forming again in the same processes works.
  std::vector<Status> re(n);
  OnAll(n, [&](int r) { re[r] = g[r]->Reform(); });
  for (int r = 0; r < n; ++r) ASSERT_TRUE(re[r].ok()) << re[r].ToString();
  ExpectWorkingGroup(g);
}

TEST(Mismatch, DifferentSizesNameBothMembersAndShapesOverTcp) {
  const int n = 2;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<Status> st(n);
  OnAll(n, [&](int r) {
    std::vector<double> v(r == 0 ? 100 : 300, 1.0);
    Tensor t{v.data(), int64_t(v.size()), DataType::kFloat64};
    st[r] = g[r]->AllReduce({&t, 1}, ReduceOp::kSum);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kInvalidArgument) << st[r].ToString();
    EXPECT_NE(st[r].message().find("800 bytes of float64"), std::string::npos) << st[r].ToString();
    EXPECT_NE(st[r].message().find("2400 bytes of float64"), std::string::npos) << st[r].ToString();
    EXPECT_NE(st[r].message().find(g[0]->TaskName(0)), std::string::npos);
    EXPECT_NE(st[r].message().find(g[0]->TaskName(1)), std::string::npos);
    EXPECT_EQ(st[r].message().find("magic"), std::string::npos) << "no wire internals: " << st[r].ToString();
  }
}

TEST(Abort, ReachesEveryMemberAndFailsInFlightCalls) {
  const int n = 4;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<Status> st(n);
  OnAll(n, [&](int r) {
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      g[r]->Abort("drill");
      return;
    }
    std::vector<double> v(10000, 1.0);
    Tensor t{v.data(), int64_t(v.size()), DataType::kFloat64};
    st[r] = g[r]->AllReduce({&t, 1}, ReduceOp::kSum);  // no timeout: only the abort ends it
  });
  for (int r : {0, 2, 3}) {
    EXPECT_EQ(st[r].code(), StatusCode::kAborted) << st[r].ToString();
    EXPECT_NE(st[r].message().find("/job:worker/task:0"), std::string::npos) << st[r].message();
    EXPECT_NE(st[r].message().find("drill"), std::string::npos) << st[r].message();
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(g[r]->Barrier().code(), StatusCode::kAborted);
  std::vector<Status> re(n);
  OnAll(n, [&](int r) { re[r] = g[r]->Reform(); });
  for (int r = 0; r < n; ++r) ASSERT_TRUE(re[r].ok()) << re[r].ToString();
  ExpectWorkingGroup(g);
  // And a second time.
  OnAll(n, [&](int r) {
    if (r == 0) g[r]->Abort("again");
  });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(WaitUnhealthy(*g[r], 10));
  OnAll(n, [&](int r) { re[r] = g[r]->Reform(); });
  for (int r = 0; r < n; ++r) ASSERT_TRUE(re[r].ok()) << re[r].ToString();
  ExpectWorkingGroup(g);
}

TEST(Formation, TimeoutNamesTheMissingTasks) {
  auto settings = LocalSettings(3);
  for (auto& s : settings) s.formation_timeout_seconds = 2;
  std::vector<Status> st(2);
  auto start = Clock::now();
  OnAll(2, [&](int r) { st[r] = Communicator::Create(settings[r]).status(); });  // worker:1 never comes
  EXPECT_LT(Since(start), 10.0);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kDeadlineExceeded) << st[r].ToString();
    EXPECT_NE(st[r].message().find("/job:worker/task:1"), std::string::npos) << st[r].message();
    EXPECT_EQ(st[r].message().find("/job:worker/task:0,"), std::string::npos) << st[r].message();
  }
  // Without the leader.
  Status s = Communicator::Create(settings[2]).status();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("/job:chief/task:0"), std::string::npos) << s.message();
}

TEST(Formation, SingleMemberNeedsNoNetwork) {
  auto settings = LocalSettings(1);
  auto c = Communicator::Create(settings[0]);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> v = {1, 2, 3};
  Tensor t{v.data(), 3, DataType::kFloat32};
  ASSERT_TRUE((*c)->AllReduce({&t, 1}, ReduceOp::kMean).ok());
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE((*c)->Barrier().ok());
}

int ConnectLocal(int port) {
  auto fd = internal::ConnectWithRetry("127.0.0.1", port, internal::DeadlineAfter(5));
  return fd.ok() ? *fd : -1;
}

TEST(Hostile, GarbageOnTheControlPortIsRejected) {
  auto settings = LocalSettings(3);
  const int leader_port = settings[0].control_ports.at(0);  // the agent's port, not TF_CONFIG's
  std::thread attacker([&] {
    for (int k = 0; k < 5; ++k) {
      int fd = ConnectLocal(leader_port);
      if (fd < 0) continue;
      std::string junk(64 * 1024, static_cast<char>(0xff));
      if (k == 1)
        junk = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + std::string("\xff\xff\xff\x04\x00\x00\x00\x00\x00", 9);
      (void)!::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
      ::close(fd);
    }
  });
  Group g = FormGroup(settings, nullptr, Via::kGrpc);
  attacker.join();
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(g[r]);
  ExpectWorkingGroup(g);
  // Well-formed RPCs with wrong contents are refused by the leader.
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(settings[0].control_ports.at(0)),
                                     grpc::InsecureChannelCredentials());
  auto stub = ringmaster::agent::v1::Agent::NewStub(channel);
  for (int variant = 0; variant < 3; ++variant) {
    ringmaster::agent::v1::JoinRequest req;
    req.set_rank(variant == 0 ? 7 : 1);
    req.set_group_size(variant == 1 ? 1000000 : 3);
    req.set_task_name(variant == 2 ? "/job:evil/task:0" : "/job:worker/task:0");
    req.set_data_port(1234);
    ringmaster::agent::v1::JoinResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    auto s = stub->Join(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << variant << ": " << s.error_message();
  }
  ringmaster::agent::v1::StatusResponse sr;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(stub->GetStatus(&ctx, {}, &sr).ok());
  EXPECT_EQ(sr.task_name(), "/job:chief/task:0");
  EXPECT_NE(sr.incarnation(), 0u);
  ExpectWorkingGroup(g);
}

// A fake rank 1 speaks the protocol by hand to a real rank 0: garbage and a
// wrong incarnation are refused at the handshake, and a frame announcing an
// absurd length fails the collective without a crash or an allocation.
TEST(Hostile, GarbageOnTheDataPortIsRejected) {
  auto settings = LocalSettings(2);
  settings[0].formation_timeout_seconds = 20;
  std::unique_ptr<Communicator> leader;
  Status leader_status;
  std::thread t0([&] {
    auto c = Communicator::Create(settings[0]);
    if (c.ok())
      leader = std::move(*c);
    else
      leader_status = c.status();
  });
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(settings[0].control_ports.at(0)),
                                     grpc::InsecureChannelCredentials());
  auto stub = ringmaster::agent::v1::Agent::NewStub(channel);
  ringmaster::agent::v1::JoinRequest req;
  req.set_rank(1);
  req.set_group_size(2);
  req.set_task_name("/job:worker/task:0");
  req.set_data_port(9);  // never used: rank 1 only connects
  req.set_process_id(42);
  ringmaster::agent::v1::JoinResponse table;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  ctx.set_wait_for_ready(true);
  auto js = stub->Join(&ctx, req, &table);
  ASSERT_TRUE(js.ok()) << js.error_message();
  ASSERT_EQ(table.members_size(), 2);
  const int data_port = table.members(0).data_port();
  const uint64_t inc = table.incarnation();
  using internal::Hello;
  // The whole handshake of a member without a key (the group has none).
  auto send_hello = [&](Hello h, bool expect_ack) {
    int fd = ConnectLocal(data_port);
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(internal::WriteAll(fd, &h, sizeof h, internal::DeadlineAfter(5)).ok());
    internal::Challenge c{};
    Status r = internal::ReadAll(fd, &c, sizeof c, internal::DeadlineAfter(5));
    EXPECT_EQ(r.ok(), expect_ack) << r.ToString();
    if (!expect_ack) {
      ::close(fd);
      return -1;
    }
    EXPECT_EQ(c.magic, internal::kChallengeMagic);
    internal::Proof p{internal::kProofMagic, 0, {}};
    EXPECT_TRUE(internal::WriteAll(fd, &p, sizeof p, internal::DeadlineAfter(5)).ok());
    internal::Ack ack{};
    EXPECT_TRUE(internal::ReadAll(fd, &ack, sizeof ack, internal::DeadlineAfter(5)).ok());
    EXPECT_EQ(ack.magic, internal::kAckMagic);
    return fd;
  };
  {
    int fd = ConnectLocal(data_port);
    std::string junk(100000, 'x');
    (void)!::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    char c;
    EXPECT_LE(::recv(fd, &c, 1, 0), 0);  // the leader hangs up
    ::close(fd);
  }
  Hello good{internal::kHelloMagic, internal::kProtocolVersion, inc, 1, 0, 0, 2, 0, 0, {}};
  Hello wrong_inc = good;
  wrong_inc.incarnation = inc + 1;
  send_hello(wrong_inc, false);
  Hello wrong_rank = good;
  wrong_rank.from_rank = 77;
  send_hello(wrong_rank, false);
  std::vector<int> fds;
  for (uint32_t c = 0; c < 4; ++c) {  // control + 2 data streams + the process sets' stream
    Hello h = good;
    h.channel = c;
    fds.push_back(send_hello(h, true));
  }
  // The link probe after formation (link_model.h) on the first data stream:
  // every message of the leader's is answered in kind.
  {
    std::vector<char> payload(internal::kProbeBulkBytes);
    for (int m = 0; m < internal::kProbeLatencyRounds + internal::kProbeBulkRounds + 1; ++m) {
      internal::WireHeader h{};
      ASSERT_TRUE(internal::ReadAll(fds[1], &h, sizeof h, internal::DeadlineAfter(10)).ok()) << m;
      ASSERT_EQ(h.magic, internal::kDataMagic);
      ASSERT_LE(h.length, payload.size());
      ASSERT_TRUE(internal::ReadAll(fds[1], payload.data(), h.length, internal::DeadlineAfter(10)).ok());
      ASSERT_TRUE(internal::WriteAll(fds[1], &h, sizeof h, internal::DeadlineAfter(10)).ok());
      ASSERT_TRUE(internal::WriteAll(fds[1], payload.data(), h.length, internal::DeadlineAfter(10)).ok());
    }
  }
  t0.join();
  ASSERT_TRUE(leader) << leader_status.ToString();
  // The leader's first collective (#1) runs on stream 1 % 2 = channel 2.
  std::thread hostile([&] {
    internal::WireHeader h{internal::kDataMagic, 0, 1, uint64_t{1} << 60};
    (void)internal::WriteAll(fds[2], &h, sizeof h, internal::DeadlineAfter(5));
  });
  std::vector<float> v(1000, 1.0f);
  Tensor t{v.data(), 1000, DataType::kFloat32};
  CommunicationOptions o;
  o.implementation = Implementation::kRing;
  o.timeout_seconds = 10;
  Status s = leader->AllReduce({&t, 1}, ReduceOp::kSum, o);
  hostile.join();
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("protocol error from /job:worker/task:0"), std::string::npos) << s.message();
  EXPECT_FALSE(leader->health().ok());
  // The fake's control connection tells it about the abort.
  char buf[256];
  ssize_t got = 0;
  auto until = Clock::now() + std::chrono::seconds(5);
  bool saw_abort = false;
  while (!saw_abort && Clock::now() < until) {
    got = ::recv(fds[0], buf, sizeof buf, MSG_DONTWAIT);
    if (got >= static_cast<ssize_t>(sizeof(internal::ControlHeader))) {
      for (ssize_t off = 0; off + 16 <= got; off += 4) {
        internal::ControlHeader h;
        std::memcpy(&h, buf + off, sizeof h);
        if (h.magic == internal::kControlMagic && h.type == internal::kAbortFrame) saw_abort = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(saw_abort);
  leader.reset();
  for (int fd : fds) ::close(fd);
}

}  // namespace
}  // namespace ringmaster
