// The simulation of docs/benchmarks/mesh.md at N = 1,024 (mesh_sim.h): the
// group forms, the first ring all-reduce is exact, and every member's
// connections and messages stay within c x log2 N, c = 12 (a full mesh
// would give each member N - 1 = 1,023 connections, far over the bound of
// 120: the last test shows the check refuses it).
#include "mesh_sim.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ringmaster::testing {
namespace {

constexpr double kLogFactor = 12;

TEST(MeshSim, ThousandMembersFormAllReduceAndGrowAsLogN) {
  MeshSimConfig c;
  c.n = 1024;
  c.timeout_s = 120;
  const MeshSimResult r = RunMeshSim(c);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.formed);
  EXPECT_TRUE(r.correct);
  std::string why;
  EXPECT_TRUE(WithinLogBound(r, c.n, kLogFactor, &why)) << why;
  // The parts: control fingers are 2 log2 N - 1 at a power of two (+-N/2 is
  // one member); a follower calls the leader twice (challenge, Join), takes
  // the table from its parent and sends it to at most log2 N - 1 children
  // (place 1); the leader answers every call and sends the table to its
  // log2 N children, not to all: log2 N tables of N entries, where it sent
  // N - 1 of them.
  EXPECT_EQ(r.max_follower.control_connections, 2 * 10 - 1);
  EXPECT_EQ(r.max_follower.formation_messages, 4 + 2 * (1 + 9));
  EXPECT_EQ(r.bills[0].formation_messages, 4 * (c.n - 1) + 2 * 10);
  EXPECT_EQ(r.bills[0].formation_entries, 10u * c.n);
  EXPECT_EQ(r.max_follower.formation_entries, 9u * c.n);
  EXPECT_LE(r.max_follower.data_connections, 10 + 2 + 2);
  RecordProperty("formation_s", std::to_string(r.formation_s));
  RecordProperty("allreduce_s", std::to_string(r.allreduce_s));
}

// A longer all-reduce through every segment of the ring, at a smaller N.
TEST(MeshSim, EverySegmentOfTheRingIsExact) {
  MeshSimConfig c;
  c.n = 96;
  c.count = 3 * 96 + 5;
  c.timeout_s = 60;
  const MeshSimResult r = RunMeshSim(c);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.formed);
  EXPECT_TRUE(r.correct);
}

// The bound can fail: a member of a full mesh (N - 1 peers) is refused.
TEST(MeshSim, TheBoundRefusesAFullMesh) {
  MeshSimResult r;
  r.bills.resize(1024);
  for (auto& b : r.bills) b.control_connections = 1023;
  std::string why;
  EXPECT_FALSE(WithinLogBound(r, 1024, kLogFactor, &why));
  EXPECT_EQ(why.substr(0, 24), "rank 0: 1023 connections");
}

}  // namespace
}  // namespace ringmaster::testing
