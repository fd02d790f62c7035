#include "work_queue.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

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

// A clock the test moves, and an observer that records what it is told.
struct FakeClock {
  WorkQueue::Clock::time_point t{};
  WorkQueue::Now now() {
    return [this] { return t; };
  }
};
struct Recorder : WorkQueueObserver {
  int adds = 0, retries = 0;
  size_t depth = 0;
  std::vector<double> queued, worked;
  double unfinished = -1, longest = -1;
  void Added() override { ++adds; }
  void Retried() override { ++retries; }
  void Depth(size_t n) override { depth = n; }
  void Queued(double s) override { queued.push_back(s); }
  void Worked(double s) override { worked.push_back(s); }
  void Unfinished(double total, double max) override { unfinished = total, longest = max; }
};

TEST(WorkQueue, AddAfterDelaysAndKeepsTheEarliest) {
  FakeClock clock;
  WorkQueue q(milliseconds(5), milliseconds(60'000), clock.now());
  q.AddAfter("ns/a", milliseconds(60'000));
  q.AddAfter("ns/a", milliseconds(1));
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value());
  clock.t += milliseconds(1);
  EXPECT_EQ(q.Get(milliseconds(0)).value_or(""), "ns/a");
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value())
      << "the later AddAfter of the same key is not a second add";
  clock.t += milliseconds(60'000);
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value());
}

TEST(WorkQueue, RateLimitedCountsFailuresAndForgetResets) {
  FakeClock clock;
  WorkQueue q(milliseconds(1), milliseconds(4), clock.now());
  q.AddRateLimited("ns/a");  // due after 1 ms
  q.AddRateLimited("ns/a");  // after 2 ms: the earliest wins
  EXPECT_EQ(q.Failures("ns/a"), 2);
  q.Forget("ns/a");
  EXPECT_EQ(q.Failures("ns/a"), 0);
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value());
  clock.t += milliseconds(1);
  EXPECT_EQ(q.Get(milliseconds(0)).value_or(""), "ns/a");
}

TEST(WorkQueue, DelaysFollowTheInjectedClockWithoutSleeping) {
  FakeClock clock;
  WorkQueue q(milliseconds(5), milliseconds(60'000), clock.now());
  q.AddAfter("ns/a", milliseconds(30'000));
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value());
  clock.t += std::chrono::seconds(29);
  EXPECT_FALSE(q.Get(milliseconds(0)).has_value());
  clock.t += std::chrono::seconds(1);
  EXPECT_EQ(q.Get(milliseconds(0)).value_or(""), "ns/a");
}

TEST(WorkQueue, TellsTheObserverWhatClientGoMeasures) {
  FakeClock clock;
  Recorder r;
  WorkQueue q(milliseconds(5), milliseconds(60'000), clock.now(), &r);
  q.Add("ns/a");
  q.Add("ns/a");  // already queued: not an add
  q.Add("ns/b");
  EXPECT_EQ(r.adds, 2);
  EXPECT_EQ(r.depth, 2u);
  clock.t += std::chrono::seconds(3);
  auto a = q.Get(milliseconds(0));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(r.queued, std::vector<double>{3.0});
  EXPECT_EQ(r.depth, 1u);
  clock.t += std::chrono::seconds(2);
  q.ReportUnfinished();
  EXPECT_EQ(r.unfinished, 2.0);
  EXPECT_EQ(r.longest, 2.0);
  q.Done(*a);
  EXPECT_EQ(r.worked, std::vector<double>{2.0});
  q.AddRateLimited("ns/a");
  EXPECT_EQ(r.retries, 1);
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
