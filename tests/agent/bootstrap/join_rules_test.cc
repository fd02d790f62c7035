// A follower's decisions (bootstrap/join_rules.h), pure: which tables it
// takes, a peer's host, and where the leader's entry goes.
#include "bootstrap/join_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bootstrap/table.h"

namespace ringmaster::internal {
namespace {

// A follower takes a table only when it is a group it can be in.
TEST(CheckTable, OnlyAGroupThatHasTheLeaderAndUsInRankOrder) {
  auto table = [](std::vector<int> ranks) {
    Table t;
    for (int r : ranks) t.members.push_back(MemberEntry{r, "t" + std::to_string(r), "h", 1, 1});
    return t;
  };
  EXPECT_EQ(*CheckTable(table({0, 1, 2}), 3, 0, 2), 2);
  EXPECT_EQ(*CheckTable(table({0, 2}), 3, 2, 2), 1);  // elastic: rank 2 is the second of two
  EXPECT_THAT(CheckTable(table({0, 2}), 3, 0, 2).status().message(),
              ::testing::HasSubstr("sent 2 members, expected 3"));
  EXPECT_THAT(CheckTable(table({0}), 3, 2, 0).status().message(), ::testing::HasSubstr("expected 2 to 3"));
  EXPECT_THAT(CheckTable(table({0, 1}), 3, 2, 2).status().message(),
              ::testing::HasSubstr("leaves out rank 2"));
  EXPECT_THAT(CheckTable(table({1, 2}), 3, 2, 2).status().message(), ::testing::HasSubstr("rank order"));
  EXPECT_THAT(CheckTable(table({0, 2, 1}), 3, 2, 1).status().message(), ::testing::HasSubstr("rank order"));
}

// The host of gRPC's peer address, where a follower's Join came from (or
// where it was answered from); nothing for a form that has none.
TEST(PeerHost, TheAddressOfAnIpv4OrIpv6PeerNothingElse) {
  EXPECT_EQ(PeerHost("ipv4:10.0.0.5:5555"), "10.0.0.5");
  EXPECT_EQ(PeerHost("ipv6:[::1]:5555"), "::1");
  EXPECT_EQ(PeerHost("ipv6:[fd00::7]:2222"), "fd00::7");
  EXPECT_EQ(PeerHost("unix:/tmp/sock"), "");
  EXPECT_EQ(PeerHost("ipv4:10.0.0.5"), "");
  EXPECT_EQ(PeerHost(""), "");
}

// The leader's entry (its TF_CONFIG name) becomes the address that answered
// our Join; the other entries and an unknown answer leave the table as it is.
TEST(UseLeaderAddress, TheLeadersEntryGoesWhereTheJoinWasAnswered) {
  Table t;
  t.members = {MemberEntry{0, "/job:chief/task:0", "chief-0.job", 1, 1},
               MemberEntry{1, "/job:worker/task:0", "10.0.0.2", 2, 2}};
  UseLeaderAddress(t, "");
  EXPECT_EQ(t.members[0].data_host, "chief-0.job");
  UseLeaderAddress(t, "10.0.0.9");
  EXPECT_EQ(t.members[0].data_host, "10.0.0.9");
  EXPECT_EQ(t.members[1].data_host, "10.0.0.2");
  Table empty;
  UseLeaderAddress(empty, "10.0.0.9");
  EXPECT_TRUE(empty.members.empty());
}

}  // namespace
}  // namespace ringmaster::internal
