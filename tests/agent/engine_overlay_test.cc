// The control overlay's fingers (group/overlay.h): symmetric, at most
// 2⌈log2 n⌉ of them, and a graph whose diameter is ⌈log2 n⌉, so news that
// one member floods to its fingers reaches every member in that many hops.
#include <gtest/gtest.h>

#include <algorithm>
#include <queue>
#include <vector>

#include "group/overlay.h"

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

}  // namespace
}  // namespace ringmaster::internal
