// The control overlay's fingers (group/overlay.h): symmetric, at most
// 2⌈log2 n⌉ of them, and a graph whose diameter is ⌈log2 n⌉, so news that
// one member floods to its fingers reaches every member in that many hops.
#include "group/overlay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <queue>
#include <string>
#include <vector>

#include "group/group_state.h"

namespace ringmaster::internal {
namespace {

int CeilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// Hops from `from` to the farthest member, over the fingers; -1 if some
// member cannot be reached (or `dead` is the only way).
int Eccentricity(int from, int n, int dead = -1) {
  std::vector<int> dist(static_cast<size_t>(n), -1);
  std::queue<int> q;
  dist[from] = 0;
  q.push(from);
  while (!q.empty()) {
    int r = q.front();
    q.pop();
    for (int p : Fingers(r, n)) {
      if (p == dead || dist[p] >= 0) continue;
      dist[p] = dist[r] + 1;
      q.push(p);
    }
  }
  int far = 0;
  for (int r = 0; r < n; ++r) {
    if (r == dead) continue;
    if (dist[r] < 0) return -1;
    far = std::max(far, dist[r]);
  }
  return far;
}

TEST(Overlay, SmallGroupsAreFullyConnectedAndOneMemberHasNone) {
  EXPECT_EQ(Fingers(0, 1), std::vector<int>{});
  EXPECT_EQ(Fingers(0, 2), std::vector<int>{1});
  EXPECT_EQ(Fingers(1, 3), (std::vector<int>{0, 2}));
  EXPECT_EQ(Fingers(0, 5), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(Fingers(0, 6), (std::vector<int>{1, 2, 4, 5}));
  EXPECT_EQ(Fingers(3, 16), (std::vector<int>{1, 2, 4, 5, 7, 11, 15}));
}

TEST(Overlay, FingersAreSymmetricFewAndReachEveryoneInLog2NHops) {
  for (int n : {2, 3, 5, 7, 8, 12, 16, 33, 100, 128, 255, 256, 1000, 1024}) {
    for (int r = 0; r < n; ++r) {
      const auto f = Fingers(r, n);
      EXPECT_LE(static_cast<int>(f.size()), 2 * CeilLog2(n)) << r << " of " << n;
      for (int p : f) {
        const auto back = Fingers(p, n);
        EXPECT_TRUE(std::binary_search(back.begin(), back.end(), r)) << r << " -> " << p << " of " << n;
      }
    }
    // The graph is vertex-transitive (r -> r + 1 maps it onto itself): one
    // member's distances are everyone's.
    EXPECT_LE(Eccentricity(0, n), CeilLog2(n)) << n;
  }
}

TEST(Overlay, OneLostMemberCutsNobodyOff) {
  for (int n : {4, 5, 16, 100, 1024}) {
    for (int dead : {1, n / 2, n - 1}) EXPECT_GE(Eccentricity(0, n, dead), 1) << n << " without " << dead;
  }
}

// A flood's books on one member: the first sight of (origin, id) passes it
// on and remembers the way back; copies and older floods are dropped.
TEST(FloodSeen, PassesAFloodOnOnceAndRemembersTheWayBack) {
  FloodSeen seen(8);
  EXPECT_TRUE(seen.FirstSight(3, 1, 2));
  EXPECT_EQ(seen.WayBack(3, 1), 2);
  EXPECT_FALSE(seen.FirstSight(3, 1, 4)) << "a copy from another finger";
  EXPECT_EQ(seen.WayBack(3, 1), 2) << "the first finger stays the way back";
  EXPECT_TRUE(seen.FirstSight(3, 2, 4)) << "the origin's next flood";
  EXPECT_EQ(seen.WayBack(3, 2), 4);
  EXPECT_EQ(seen.WayBack(3, 1), -1) << "a late answer to the earlier flood";
  EXPECT_FALSE(seen.FirstSight(3, 1, 5)) << "an older flood arriving late";
  EXPECT_TRUE(seen.FirstSight(5, 1, 6)) << "origins are apart";
  EXPECT_FALSE(seen.FirstSight(8, 1, 0)) << "no such member";
  EXPECT_FALSE(seen.FirstSight(-1, 1, 0));
  EXPECT_EQ(seen.WayBack(6, 1), -1) << "never seen";
}

// One frame in flight over the overlay.
struct Frame {
  int from, to;
  int origin = -1;  // a query's asker; an answer's addressee
  int answerer = -1;
};

// The diagnosis's flood at n members, synchronous hops: `origin` asks, each
// member passes the query on once and answers back the way it came, answers
// relayed hop by hop. Every live member's answer arrives; returns the hops
// it took (-1 if some never came) and counts the frames each member sent.
int Diagnose(int n, int origin, int dead, std::vector<int>* sent) {
  std::vector<FloodSeen> seen(static_cast<size_t>(n), FloodSeen(n));
  sent->assign(static_cast<size_t>(n), 0);
  std::vector<bool> answered(static_cast<size_t>(n), false);
  answered[origin] = true;
  (void)seen[origin].FirstSight(origin, 1, -1);
  std::vector<Frame> hop;
  for (int f : Fingers(origin, n)) hop.push_back({origin, f, origin});
  (*sent)[origin] += static_cast<int>(hop.size());
  int hops = 0;
  while (!hop.empty()) {
    ++hops;
    std::vector<Frame> next;
    for (const Frame& fr : hop) {
      if (fr.to == dead) continue;
      auto& me = seen[static_cast<size_t>(fr.to)];
      if (fr.answerer < 0) {  // a query
        if (!me.FirstSight(fr.origin, 1, fr.from)) continue;
        for (int f : Fingers(fr.to, n))
          if (f != fr.from) next.push_back({fr.to, f, fr.origin}), ++(*sent)[fr.to];
        next.push_back({fr.to, fr.from, fr.origin, fr.to});
        ++(*sent)[fr.to];
      } else if (fr.to == fr.origin) {
        answered[fr.answerer] = true;
      } else {
        next.push_back({fr.to, me.WayBack(fr.origin, 1), fr.origin, fr.answerer});
        ++(*sent)[fr.to];
      }
    }
    hop = std::move(next);
  }
  for (int r = 0; r < n; ++r)
    if (r != dead && !answered[r]) return -1;
  return hops;
}

TEST(Overlay, TheDiagnosisReachesEveryoneAndItsAnswersComeBackWithin2Log2NHops) {
  for (int n : {2, 3, 8, 13, 64, 128, 256}) {
    for (int dead : {-1, n / 2}) {
      if (dead == 0) continue;
      std::vector<int> sent;
      const int hops = Diagnose(n, 0, dead, &sent);
      ASSERT_GE(hops, 0) << n << " without " << dead;
      // Out ⌈log2 N⌉ and back as many, plus the hop a dead finger costs.
      EXPECT_LE(hops, 2 * CeilLog2(n) + 2 + 1) << n;
      // Each member sends the query once to each finger, its answer once,
      // and relays at most the others' answers: never a frame per member
      // to every member (n^2).
      const int fingers = static_cast<int>(Fingers(0, n).size());
      for (int r = 0; r < n; ++r) EXPECT_LE(sent[r], fingers + 1 + n) << r << " of " << n;
    }
  }
}

// The abort flood with GroupState itself: the finger that finds a member
// dead aborts naming it and tells its fingers; each member passes the first
// abort it receives on once (tell_peers), later copies are dropped. Every
// survivor has the cause, in the finder's words, within ⌈log2 N⌉ + 1 hops.
TEST(Overlay, AnAbortFloodsToEverySurvivorInTheFindersWordsOncePerMember) {
  for (int n : {3, 5, 8, 16, 100, 256}) {
    const int dead = n / 2;
    std::vector<std::string> names;
    for (int r = 0; r < n; ++r) names.push_back("/job:worker/task:" + std::to_string(r));
    std::vector<GroupState> g;
    for (int r = 0; r < n; ++r) g.emplace_back(r, names, 15.0, Clock::time_point{}, Fingers(r, n));
    std::vector<int> tells(static_cast<size_t>(n), 0);
    const int finder = (dead + 1) % n;
    GroupDecision d = g[finder].ConnectionLost(dead, "its connection was reset (the process died)");
    ASSERT_TRUE(d.abort && d.tell_peers);
    const std::string cause = g[finder].cause().message();
    EXPECT_NE(cause.find(names[dead]), std::string::npos) << cause;
    std::vector<Frame> hop;
    auto tell = [&](int from) {
      ++tells[from];
      for (int f : Fingers(from, n)) hop.push_back({from, f});
    };
    tell(finder);
    int hops = 0;
    while (!hop.empty()) {
      ++hops;
      auto now = std::move(hop);
      hop.clear();
      for (const Frame& fr : now) {
        if (fr.to == dead) continue;
        GroupDecision got = g[fr.to].AbortFrame(fr.from, StatusCode::kUnavailable, cause);
        if (got.tell_peers) tell(fr.to);
      }
    }
    EXPECT_LE(hops, CeilLog2(n) + 1) << n;
    for (int r = 0; r < n; ++r) {
      if (r == dead) continue;
      EXPECT_TRUE(g[r].aborted()) << r << " of " << n;
      EXPECT_EQ(g[r].cause().message(), cause) << r;
      EXPECT_EQ(tells[r], 1) << r << ": every member tells its fingers exactly once";
    }
  }
}

// A member cut off from all of its fingers at once has nobody to hear an
// abort from: it names the loss itself, the first finger it finds lost, and
// tells whoever is left (nobody here); the later losses change nothing.
TEST(Overlay, AMemberCutOffFromAllItsFingersNamesTheLossItself) {
  constexpr int kN = 16, kMe = 5;
  std::vector<std::string> names;
  for (int r = 0; r < kN; ++r) names.push_back("/job:worker/task:" + std::to_string(r));
  GroupState me(kMe, names, 15.0, Clock::time_point{}, Fingers(kMe, kN));
  const auto fingers = Fingers(kMe, kN);
  GroupDecision first = me.ConnectionLost(fingers[0], "its connection was reset (the process died)");
  EXPECT_TRUE(first.abort && first.tell_peers && first.report);
  EXPECT_EQ(me.ForNewCall().code(), StatusCode::kUnavailable);
  EXPECT_NE(me.cause().message().find(names[fingers[0]] + " is unreachable from " + names[kMe]),
            std::string::npos)
      << me.cause().message();
  for (size_t i = 1; i < fingers.size(); ++i) {
    GroupDecision later = me.ConnectionLost(fingers[i], "its connection was reset (the process died)");
    EXPECT_FALSE(later.abort || later.tell_peers || later.report) << fingers[i];
    EXPECT_TRUE(me.Lost(fingers[i]));
  }
  // A silent one is found the same way, by the clock alone.
  GroupState alone(kMe, names, 15.0, Clock::time_point{}, Fingers(kMe, kN));
  GroupDecision silent = alone.Tick(Clock::time_point{} + std::chrono::seconds(16));
  EXPECT_TRUE(silent.abort && silent.report);
  EXPECT_NE(alone.cause().message().find("no heartbeat for 15 s"), std::string::npos)
      << alone.cause().message();
}

}  // namespace
}  // namespace ringmaster::internal
