// The formation tree (bootstrap/formation_tree.h): only groups of 64 or more
// send the table down it; one parent each, every place once within
// ceil(log2 N) hops.
#include "bootstrap/formation_tree.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bootstrap/table.h"
#include "transport/auth.h"

namespace ringmaster {
namespace {

using internal::MemberEntry;

const std::string kKey = "0123456789abcdef0123456789abcdef";

// Below kTreeFromMembers members every Join answer carries the whole table
// (a member that dies after its Join leaves nobody waiting for it); from
// it on, the incarnation and the member's parent.
TEST(FormationTree, OnlyGroupsOfSixtyFourOrMoreSendTheTableDownTheTree) {
  const internal::JobKey key(kKey);
  for (size_t n : {size_t{2}, size_t{8}, internal::kTreeFromMembers - 1, internal::kTreeFromMembers,
                   internal::kTreeFromMembers + 1}) {
    internal::Table table{9, {}};
    for (size_t r = 0; r < n; ++r) {
      const int rank = static_cast<int>(r);
      table.members.push_back(MemberEntry{rank, "/job:worker/task:" + std::to_string(r), "h", 4000 + rank,
                                          100u + r, r == 0 ? 0 : 5000 + rank});
    }
    internal::JoinClaim claim;
    claim.rank = 3 % static_cast<int>(n);
    claim.group_size = static_cast<int>(n);
    const internal::JoinAnswer a = internal::AnswerJoin(key, claim, table);
    const bool tree = n >= internal::kTreeFromMembers;
    EXPECT_EQ(internal::TableTravelsDownTree(table), tree) << n;
    EXPECT_EQ(a.forwarded, tree) << n;
    EXPECT_EQ(a.table.members.size(), tree ? 0u : n) << n;
    EXPECT_EQ(a.table.incarnation, 9u) << n;
  }
}

// The formation tree: every member but the leader has one parent, is its
// parent's child and is reached in at most ⌈log2 n⌉ hops; nobody sends more
// than ⌈log2 n⌉ tables.
TEST(FormationTree, EveryPlaceOnceWithinLog2NHops) {
  for (int n = 1; n <= 1100; n = n < 70 ? n + 1 : n * 2 - 3) {
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    std::vector<int> reached(n, 0);
    for (int p = 0; p < n; ++p) {
      const auto kids = internal::TreeChildren(p, n);
      EXPECT_LE(static_cast<int>(kids.size()), log2n) << n << " " << p;
      for (int c : kids) {
        ASSERT_LT(c, n);
        ++reached[c];
        EXPECT_EQ(internal::TreeParent(c), p) << n << " " << c;
      }
      int hops = 0;
      for (int q = p; q > 0; q = internal::TreeParent(q)) ++hops;
      EXPECT_LE(hops, log2n) << n << " " << p;
    }
    EXPECT_EQ(reached[0], 0);
    for (int p = 1; p < n; ++p) EXPECT_EQ(reached[p], 1) << n << " " << p;
    EXPECT_EQ(static_cast<int>(internal::TreeChildren(0, n).size()), log2n) << n;
  }
  EXPECT_EQ(internal::TreeChildren(0, 8), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(internal::TreeChildren(1, 8), (std::vector<int>{3, 5}));
  EXPECT_EQ(internal::TreeChildren(3, 8), (std::vector<int>{7}));
  EXPECT_EQ(internal::TreeParent(6), 2);
}

}  // namespace
}  // namespace ringmaster
