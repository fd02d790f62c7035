// The leader's core behind a lock (bootstrap/formation_hub.h): a Join held
// without a thread is answered once, with the table, at its deadline naming
// who is missing, on cancel, or at shutdown.
#include "bootstrap/formation_hub.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/table.h"
#include "transport/auth.h"

namespace ringmaster {
namespace {

using internal::DeadlineAfter;
using internal::MemberEntry;

// A Join held without a thread (FollowerJoinLater) is answered exactly once:
// with the table when its round completes, or naming who is missing at its
// deadline, when its call is cancelled, or at shutdown.
TEST(FormationHub, AJoinHeldWithoutAThreadIsAnsweredOnceNamingWhoIsMissing) {
  const std::vector<std::string> names = {"/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"};
  const internal::JobKey none;
  uint64_t next_id = 0;
  internal::FormationHub hub(0, names, &none, [&] { return ++next_id; });
  auto claim = [&](int r) {
    internal::JoinClaim c;
    c.rank = r;
    c.group_size = 3;
    c.task_name = names[r];
    c.data_port = 4000 + r;
    c.process_id = 10 + r;
    return c;
  };
  std::mutex mu;
  std::vector<std::string> answers;
  auto record = [&](const std::string& who) {
    return [&, who](StatusOr<internal::Table> t) {
      std::lock_guard<std::mutex> lock(mu);
      answers.push_back(who + ": " +
                        (t.ok() ? "table " + std::to_string(t->incarnation) : t.status().ToString()));
    };
  };
  auto answered = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return answers;
  };
  bool stranger = false;
  // Refused at once: no ticket.
  internal::JoinClaim bad = claim(1);
  bad.task_name = "/job:worker/task:9";
  EXPECT_EQ(hub.FollowerJoinLater(bad, "h", DeadlineAfter(10), record("bad"), &stranger), 0u);
  EXPECT_FALSE(stranger);
  ASSERT_EQ(answered().size(), 1u);
  EXPECT_THAT(answered()[0], ::testing::HasSubstr("bad: InvalidArgument"));
  // Its deadline passes (the hub's timer): the leader and worker 1 are missing.
  EXPECT_NE(hub.FollowerJoinLater(claim(1), "h", DeadlineAfter(0.05), record("w0"), &stranger), 0u);
  for (int i = 0; i < 500 && answered().size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(answered().size(), 2u);
  EXPECT_THAT(answered()[1], ::testing::HasSubstr("w0: DeadlineExceeded"));
  EXPECT_THAT(answered()[1], ::testing::HasSubstr("missing /job:chief/task:0, /job:worker/task:1"));
  EXPECT_EQ(hub.Waiting(), 0);
  // Cancelled: answered now; a second Cancel does nothing.
  const uint64_t t1 = hub.FollowerJoinLater(claim(2), "h", DeadlineAfter(10), record("w1"), &stranger);
  EXPECT_EQ(hub.Waiting(), 1);
  hub.Cancel(t1);
  hub.Cancel(t1);
  ASSERT_EQ(answered().size(), 3u);
  EXPECT_THAT(answered()[2], ::testing::HasSubstr("w1: DeadlineExceeded"));
  // The round completes with the leader: both joiners get its table.
  hub.FollowerJoinLater(claim(1), "h", DeadlineAfter(10), record("w0"), &stranger);
  hub.FollowerJoinLater(claim(2), "h", DeadlineAfter(10), record("w1"), &stranger);
  EXPECT_EQ(hub.Waiting(), 2);
  auto table = hub.LeaderJoin(MemberEntry{0, names[0], "h", 4000, 10}, DeadlineAfter(10), 10);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(answered().size(), 5u);
  EXPECT_EQ(answered()[3], "w0: table " + std::to_string(table->incarnation));
  EXPECT_EQ(answered()[4], "w1: table " + std::to_string(table->incarnation));
  // Shutdown answers whoever waits.
  hub.FollowerJoinLater(claim(1), "h", DeadlineAfter(10), record("w0"), &stranger);
  hub.Shutdown();
  ASSERT_EQ(answered().size(), 6u);
  EXPECT_THAT(answered()[5], ::testing::HasSubstr("w0: Unavailable: the leader is shutting down"));
  EXPECT_EQ(hub.Waiting(), 0);
}

}  // namespace
}  // namespace ringmaster
