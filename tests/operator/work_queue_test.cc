#include "work_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace ringmaster::op {
namespace {

using std::chrono::milliseconds;

TEST(WorkQueue, DeduplicatesQueuedKeys) {
  WorkQueue q;
  q.Add("ns/a");
  q.Add("ns/a");
  q.Add("ns/b");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Get(milliseconds(0)).value(), "ns/a");
  EXPECT_EQ(q.Get(milliseconds(0)).value(), "ns/b");
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value());
}

TEST(WorkQueue, KeyBeingProcessedIsHandedOutAgainOnlyAfterDone) {
  WorkQueue q;
  q.Add("ns/a");
  auto k = q.Get(milliseconds(0));
  ASSERT_TRUE(k.has_value());
  q.Add("ns/a");  // changed while a worker holds it
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value());
  q.Done(*k);
  EXPECT_EQ(q.Get(milliseconds(0)).value(), "ns/a");
}

TEST(WorkQueue, AddAfterDelaysAndKeepsTheEarliest) {
  WorkQueue q;
  q.AddAfter("ns/a", milliseconds(60'000));
  q.AddAfter("ns/a", milliseconds(1));
  EXPECT_EQ(q.Get(milliseconds(5'000)).value_or(""), "ns/a");  // liveness bound only
}

TEST(WorkQueue, GetTimesOutWhenEmpty) {
  WorkQueue q;
  EXPECT_FALSE(q.Get(milliseconds(10)).has_value());
}

TEST(WorkQueue, ShutDownWakesWaiters) {
  WorkQueue q;
  std::thread t([&] { EXPECT_FALSE(q.Get(milliseconds(60'000)).has_value()); });
  q.ShutDown();
  t.join();
  q.Add("ns/a");
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value());
  EXPECT_TRUE(q.ShuttingDown());
}

TEST(WorkQueue, RateLimitedCountsFailuresAndForgetResets) {
  WorkQueue q(milliseconds(1), milliseconds(4));
  q.AddRateLimited("ns/a");
  q.AddRateLimited("ns/a");
  EXPECT_EQ(q.Failures("ns/a"), 2);
  q.Forget("ns/a");
  EXPECT_EQ(q.Failures("ns/a"), 0);
  EXPECT_EQ(q.Get(milliseconds(5'000)).value_or(""), "ns/a");
}

TEST(ItemBackoff, DoublesUpToTheCap) {
  ItemBackoff b(milliseconds(5), milliseconds(30));
  EXPECT_EQ(b.When("k"), milliseconds(5));
  EXPECT_EQ(b.When("k"), milliseconds(10));
  EXPECT_EQ(b.When("k"), milliseconds(20));
  EXPECT_EQ(b.When("k"), milliseconds(30));
  EXPECT_EQ(b.When("k"), milliseconds(30));
  EXPECT_EQ(b.When("other"), milliseconds(5));
  b.Forget("k");
  EXPECT_EQ(b.When("k"), milliseconds(5));
}

}  // namespace
}  // namespace ringmaster::op
