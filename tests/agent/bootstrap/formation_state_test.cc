// The leader's rounds (bootstrap/formation_state.h), pure: a table asked
// for is given only while its round is the current one, and the answer says
// when it was left.
#include "bootstrap/formation_state.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "bootstrap/table.h"
#include "transport/auth.h"

namespace ringmaster {
namespace {

using internal::MemberEntry;

// The leader gives a round's table while that round is its current one, and
// otherwise says it was left: a member of it joined the next round, the
// leader did, a later round formed, or the leader never knew it. Pure.
TEST(FormationState, ATableAskedForIsGivenOnlyWhileItsRoundIsTheCurrentOne) {
  const std::vector<std::string> names = {"/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"};
  const internal::JobKey none;
  uint64_t next_id = 0;
  internal::FormationState state(0, names, &none, [&] { return ++next_id; });
  const auto now = std::chrono::steady_clock::now();
  auto join = [&](int r, uint64_t process) {
    internal::JoinClaim c;
    c.rank = r;
    c.group_size = 3;
    c.task_name = names[r];
    c.data_port = 4000 + r;
    c.process_id = process;
    c.control_port = 5000 + r;
    return state.Join(c, "h", now);
  };
  auto ask = [&](uint64_t incarnation, int r = 1) {
    return state.FetchTable(internal::TableAsk{incarnation, r, names[r]}, now);
  };
  using R = internal::FetchedRound;
  state.LeaderJoins(MemberEntry{0, names[0], "h", 4000, 1}, now);
  join(1, 11);
  EXPECT_EQ(ask(1).round, R::kSuperseded);  // not formed: nobody holds incarnation 1 yet
  ASSERT_TRUE(join(2, 12).completed);
  auto f = ask(1);
  ASSERT_TRUE(f.refused.ok()) << f.refused.ToString();
  EXPECT_EQ(f.round, R::kFormed);
  EXPECT_EQ(f.table.incarnation, 1u);
  EXPECT_EQ(f.table.members.size(), 3u);
  EXPECT_EQ(f.table.members[2].control_port, 5002);
  // A claim that is not the asker's is refused, not answered.
  f = state.FetchTable(internal::TableAsk{1, 2, names[1]}, now);
  EXPECT_EQ(f.refused.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(f.stranger);
  // Rank 2 restarted and joins the next round: round 1's mesh cannot form.
  join(2, 13);
  f = ask(1);
  EXPECT_EQ(f.round, R::kSuperseded);
  EXPECT_EQ(f.why, "a member of it joined the next round");
  EXPECT_TRUE(f.table.members.empty());
  EXPECT_EQ(ask(99).why, "the leader does not know it (it restarted, or formed several rounds since)");
  // The next round forms: round 1 is behind it, round 2 is given ...
  state.LeaderJoins(MemberEntry{0, names[0], "h", 4000, 1}, now);
  ASSERT_TRUE(join(1, 11).completed);
  EXPECT_EQ(ask(1).why, "the leader formed a later round");
  EXPECT_EQ(ask(2).round, R::kFormed);
  // ... until the leader itself takes the next one.
  state.LeaderJoins(MemberEntry{0, names[0], "h", 4000, 1}, now);
  f = ask(2);
  EXPECT_EQ(f.round, R::kSuperseded);
  EXPECT_EQ(f.why, "the leader left it for the next round");
  // Only the leader answers.
  internal::FormationState follower(1, names, &none, [] { return uint64_t{7}; });
  EXPECT_EQ(follower.FetchTable(internal::TableAsk{1, 1, names[1]}, now).refused.code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ringmaster
