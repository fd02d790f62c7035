// Formation through the bootstrap seam (bootstrap/bootstrap.h) without
// gRPC: the in-process bootstrap (local_bootstrap.h) runs the leader's core
// and the followers' protocol in this process, one thread per member; the
// data mesh (bootstrap/mesh.h) forms over it on loopback, and a round a
// member left is formed again. The core's decisions step by step are the
// transcripts' (transcript_test.cc).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "bootstrap/mesh.h"
#include "group_util.h"
#include "local_bootstrap.h"
#include "transport/net.h"

namespace ringmaster {
namespace {

using internal::DeadlineAfter;
using internal::MemberEntry;
using internal::Table;
using testing::LocalBootstrapHub;

const std::vector<std::string> kNames = {"/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"};
const std::string kKey = "0123456789abcdef0123456789abcdef";

MemberEntry Entry(int rank, uint64_t process_id) {
  return MemberEntry{rank, kNames[rank], "10.0.0." + std::to_string(rank + 1), 4000 + rank, process_id};
}

// Every member of `ranks` exchanges at once; their answers in the same order.
std::vector<StatusOr<Table>> Round(LocalBootstrapHub& hub, const std::vector<int>& ranks,
                                   const std::vector<uint64_t>& process_ids, double timeout_s = 30,
                                   const std::vector<std::string>& keys = {}) {
  std::vector<StatusOr<Table>> out(ranks.size(), InternalError("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      auto member = hub.Member(ranks[i], keys.empty() ? kKey : keys[i]);
      out[i] = member->Exchange(Entry(ranks[i], process_ids[i]), DeadlineAfter(timeout_s));
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// Member `r`'s mesh on loopback, two channels per pair.
internal::MeshConfig LoopbackMesh(int r, uint64_t process_id, const internal::JobKey& key,
                                  internal::RefusalLog& refusals, double timeout_s) {
  internal::MeshConfig c;
  c.rank = r;
  c.names = kNames;
  c.hosts = {"127.0.0.1", "127.0.0.1", "127.0.0.1"};
  c.process_id = process_id;
  c.channels = 2;
  c.timeout_s = timeout_s;
  c.key = &key;
  c.refusals = &refusals;
  return c;
}

// Every member formed with `incarnation` and holds a connection to every
// other on every channel; the connections are closed after.
void ExpectFullMeshesAndClose(std::vector<StatusOr<internal::Mesh>>& meshes, uint64_t incarnation) {
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(meshes[r].ok()) << r << ": " << meshes[r].status().ToString();
    EXPECT_EQ(meshes[r]->incarnation, incarnation) << r;
    for (int p = 0; p < 3; ++p) {
      for (int ch = 0; ch < 2; ++ch) {
        EXPECT_EQ(meshes[r]->conns[p][ch] >= 0, p != r) << r << " to " << p << " channel " << ch;
      }
    }
  }
  for (auto& m : meshes)
    for (auto& v : m->conns)
      for (int& fd : v) internal::CloseFd(fd);
}

TEST(LocalBootstrap, EveryMemberGetsTheSameTableAndIncarnation) {
  LocalBootstrapHub hub(kNames, kKey);
  auto answers = Round(hub, {2, 0, 1}, {21, 1, 11});
  for (const auto& a : answers) {
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->incarnation, 101u);
    ASSERT_EQ(a->members.size(), 3u);
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(a->members[r].rank, r);
      EXPECT_EQ(a->members[r].task_name, kNames[r]);
      EXPECT_EQ(a->members[r].data_port, 4000 + r);
    }
    EXPECT_EQ(a->members[1].process_id, 11u);
  }
}

TEST(LocalBootstrap, ReformIsTheNextRoundWithANewIncarnationAndTheRestartedProcess) {
  LocalBootstrapHub hub(kNames, kKey);
  auto first = Round(hub, {0, 1, 2}, {1, 11, 21});
  ASSERT_TRUE(first[0].ok()) << first[0].status().ToString();
  // worker:1 restarted (a new process id); everyone forms the group again.
  auto second = Round(hub, {0, 1, 2}, {1, 11, 22});
  for (const auto& a : second) {
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->incarnation, 102u);
    EXPECT_EQ(a->members[2].process_id, 22u);
  }
}

TEST(LocalBootstrap, MembersWithAnotherKeyOrNoneAreRefusedNamingWhy) {
  LocalBootstrapHub hub(kNames, kKey);
  auto other = hub.Member(1, "fedcba9876543210fedcba9876543210")->Exchange(Entry(1, 11), DeadlineAfter(5));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(
      other.status().message(),
      "group formation: the leader /job:chief/task:0 at in-process refused /job:worker/task:0: the proof of "
      "/job:worker/task:0 does not match the leader's job key (a different key)");
  auto none = hub.Member(2, "")->Exchange(Entry(2, 21), DeadlineAfter(5));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(none.status().message().find("requires the job key and /job:worker/task:1 has none"),
            std::string::npos)
      << none.status().message();
  // Nothing of theirs stayed: the real members form the group.
  auto answers = Round(hub, {0, 1, 2}, {1, 11, 21});
  for (const auto& a : answers) EXPECT_TRUE(a.ok()) << a.status().ToString();
}

TEST(LocalBootstrap, ATimeoutNamesTheMemberThatNeverCame) {
  LocalBootstrapHub hub(kNames, kKey, 0.3);
  auto answers = Round(hub, {0, 1}, {1, 11}, 0.3);
  ASSERT_FALSE(answers[0].ok());
  EXPECT_EQ(answers[0].status().ToString(),
            "DeadlineExceeded: group formation timed out after 300 ms: missing /job:worker/task:1");
  ASSERT_FALSE(answers[1].ok());
  EXPECT_EQ(answers[1].status().ToString(),
            "DeadlineExceeded: group formation timed out: missing /job:worker/task:1 (at the leader "
            "/job:chief/task:0)");
}

// Every member forms its mesh at once over `hub`, with its configured hosts
// set to `host`; the meshes in rank order.
std::vector<StatusOr<internal::Mesh>> FormLoopbackMeshes(LocalBootstrapHub& hub, const internal::JobKey& key,
                                                         internal::RefusalLog& refusals, double timeout_s,
                                                         const std::string& host = "127.0.0.1") {
  std::vector<StatusOr<internal::Mesh>> meshes(3, InternalError("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto bootstrap = hub.Member(r, kKey);
      auto c = LoopbackMesh(r, 100 + r, key, refusals, timeout_s);
      c.hosts.assign(3, host);
      meshes[r] = internal::FormMesh(c, *bootstrap);
    });
  }
  for (auto& t : threads) t.join();
  return meshes;
}

TEST(LocalBootstrap, TheDataMeshFormsOverItWithoutGrpc) {
  LocalBootstrapHub hub(kNames, kKey);
  const internal::JobKey key(kKey);
  internal::RefusalLog refusals("test");
  auto meshes = FormLoopbackMeshes(hub, key, refusals, 30);
  ExpectFullMeshesAndClose(meshes, 101u);
  EXPECT_EQ(refusals.count(), 0u);
}

// A replaced pod's name gives its old address for seconds: the mesh connects
// where the round's table lists each member (the address its Join came from;
// the leader, where the Join was answered), never to the configured names.
// Here every configured host is an address where nobody listens
// (192.0.2.1, TEST-NET-1); the members are reached on loopback.
TEST(LocalBootstrap, TheDataMeshGoesWhereTheTableListsEachMember) {
  const double timeout_s = 20;  // connecting to the configured hosts fails after this long
  LocalBootstrapHub hub(kNames, kKey, timeout_s);
  hub.SeeEveryoneAt("127.0.0.1");
  const internal::JobKey key(kKey);
  internal::RefusalLog refusals("test");
  auto meshes = FormLoopbackMeshes(hub, key, refusals, timeout_s, "192.0.2.1");
  ExpectFullMeshesAndClose(meshes, 101u);
  EXPECT_EQ(refusals.count(), 0u);
}

// A member joined a round, got its table and died before connecting anyone
// (its listener closed): the round lists a dead entry. The survivors must not
// wait for it until the deadline: the member's new process joining the next
// round (the leader sees it), or a member refused by the dead listener,
// ends the round at once for everyone, and the group forms with the new
// process. `dead` is the rank that died: 2 is the highest (nobody connects
// to it; only the leader can tell), 1 sits in the middle (rank 2 is refused
// by its listener and leaves the round first).
class LeftRound : public ::testing::TestWithParam<int> {};

TEST_P(LeftRound, ARestartedMembersDeadEntryEndsItsRoundAndTheGroupFormsWithItsNewProcess) {
  const int dead = GetParam();
  const double timeout_s = 60;  // without the fix: everyone waits this long, then fails
  LocalBootstrapHub hub(kNames, kKey, timeout_s);
  const internal::JobKey key(kKey);
  internal::RefusalLog refusals("test");
  std::vector<StatusOr<internal::Mesh>> meshes(3, InternalError("not run"));
  std::vector<std::thread> threads;
  // The first process of `dead`: joins with a real listener's port, takes the
  // table and dies (the listener closes; it connects nobody).
  std::thread ghost([&] {
    int port = 0;
    auto lfd = internal::Listen(0, &port);
    ASSERT_TRUE(lfd.ok()) << lfd.status().ToString();
    auto table =
        hub.Member(dead, kKey)
            ->Exchange(MemberEntry{dead, kNames[dead], "127.0.0.1", port, 900}, DeadlineAfter(timeout_s));
    EXPECT_TRUE(table.ok()) << table.status().ToString();
    if (table.ok()) {
      EXPECT_EQ(table->incarnation, 101u);
    }
    int fd = *lfd;
    internal::CloseFd(fd);
  });
  for (int r = 0; r < 3; ++r) {
    if (r == dead) continue;
    threads.emplace_back([&, r] {
      auto bootstrap = hub.Member(r, kKey);
      meshes[r] = internal::FormMesh(LoopbackMesh(r, 100 + r, key, refusals, timeout_s), *bootstrap);
    });
  }
  ghost.join();
  // Its new process (restarted), once the old one is gone.
  threads.emplace_back([&] {
    auto bootstrap = hub.Member(dead, kKey);
    meshes[dead] = internal::FormMesh(LoopbackMesh(dead, 901, key, refusals, timeout_s), *bootstrap);
  });
  for (auto& t : threads) t.join();
  // Not round 0's (incarnation 101), which listed the dead entry: the next one.
  ExpectFullMeshesAndClose(meshes, 102u);
}

INSTANTIATE_TEST_SUITE_P(DeadRank, LeftRound, ::testing::Values(1, 2));

// The same at eight members with the control overlay (each member connects
// the control channel to its fingers only): most members hold no connection
// to the dead entry, and a member whose fingers all live may even finish its
// part of round 0's mesh. The news still travels over the fingers: a member
// that gives the round up closes its connections, which its fingers see,
// during formation or (watched from then on) during the link probe, whose
// abort floods. Every member takes the next round with the new process, long
// before the deadline, and the group works.
class LeftRoundSparse : public ::testing::TestWithParam<int> {};

TEST_P(LeftRoundSparse, AtEightEveryMemberFormsTheNextRoundWithTheNewProcess) {
  constexpr int kN = 8;
  const int dead = GetParam();
  auto settings = testing::LocalSettings(kN);
  for (auto& s : settings) s.formation_timeout_seconds = 60;  // without the fix: everyone waits this long
  auto bootstraps = testing::InProcessBootstraps(settings);
  testing::Group g(kN);
  std::vector<Status> st(kN);
  const auto start = internal::Clock::now();
  std::vector<std::thread> threads;
  // The first process of `dead`: joins with a real listener's port, takes
  // the table and dies (the listener closes; it connects nobody).
  std::thread ghost([&] {
    int port = 0;
    auto lfd = internal::Listen(0, &port);
    ASSERT_TRUE(lfd.ok()) << lfd.status().ToString();
    auto table = bootstraps[dead]->Exchange(
        MemberEntry{dead, settings[0].group.members[dead].TaskName(), "127.0.0.1", port, 900},
        DeadlineAfter(60));
    EXPECT_TRUE(table.ok()) << table.status().ToString();
    int fd = *lfd;
    internal::CloseFd(fd);
  });
  auto create = [&](int r) {
    auto c = internal::CommunicatorAccess::Create(settings[r], {std::move(bootstraps[r]), {}});
    if (c.ok())
      g[r] = std::move(*c);
    else
      st[r] = c.status();
  };
  for (int r = 0; r < kN; ++r)
    if (r != dead) threads.emplace_back(create, r);
  ghost.join();
  threads.emplace_back(create, dead);  // its new process
  for (auto& t : threads) t.join();
  EXPECT_LT(std::chrono::duration<double>(internal::Clock::now() - start).count(), 20.0)
      << "nobody waited for the deadline";
  for (int r = 0; r < kN; ++r) ASSERT_TRUE(g[r]) << r << ": " << st[r].ToString();
  testing::ExpectExactSum(g);
}

INSTANTIATE_TEST_SUITE_P(DeadRank, LeftRoundSparse, ::testing::Values(3, 7));

}  // namespace
}  // namespace ringmaster
