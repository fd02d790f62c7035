#include "expectations.h"

#include <gtest/gtest.h>

namespace ringmaster::op {
namespace {

TEST(Expectations, PendingUntilObserved) {
  Expectations e(300);
  e.ExpectCreate("ns/j", "j-worker-0", 100);
  e.ExpectDelete("ns/j", "j-worker-1", 100);
  Pending p = e.Get("ns/j", 101);
  EXPECT_EQ(p.creating, std::set<std::string>{"j-worker-0"});
  EXPECT_EQ(p.deleting, std::set<std::string>{"j-worker-1"});
  EXPECT_TRUE(e.Get("ns/other", 101).creating.empty());
  e.ObservedCreate("ns/j", "j-worker-0");
  e.ObservedDelete("ns/j", "j-worker-1");
  p = e.Get("ns/j", 102);
  EXPECT_TRUE(p.creating.empty());
  EXPECT_TRUE(p.deleting.empty());
}

TEST(Expectations, ExpireAfterTtl) {
  Expectations e(10);
  e.ExpectCreate("ns/j", "j-worker-0", 100);
  EXPECT_EQ(e.Get("ns/j", 109).creating.size(), 1u);
  EXPECT_TRUE(e.Get("ns/j", 110).creating.empty());
}

TEST(Expectations, CancelAndForget) {
  Expectations e;
  e.ExpectCreate("ns/j", "a", 1);
  e.ExpectCreate("ns/j", "b", 1);
  e.Cancel("ns/j", "a");
  EXPECT_EQ(e.Get("ns/j", 2).creating, std::set<std::string>{"b"});
  e.Forget("ns/j");
  EXPECT_TRUE(e.Get("ns/j", 2).creating.empty());
}

}  // namespace
}  // namespace ringmaster::op
