// The operator's expectations (operator/core/expectations.h): what it asked
// of the API server and waits to see in its cache.
#include "expectations.h"

#include <gtest/gtest.h>

namespace ringmaster::op {
namespace {

using nlohmann::json;

json Pod(const std::string& name, bool terminating = false) {
  json pod = {{"metadata", {{"name", name}, {"namespace", "ns"}}}, {"status", {{"phase", "Failed"}}}};
  if (terminating) pod["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  return pod;
}

ApiAction Delete(const std::string& name) {
  return {ApiActionKind::kDeletePod, name, json(), "RestartingPod"};
}

ApiAction Create(const std::string& name) {
  return {ApiActionKind::kCreatePod, name, json::object(), "SuccessfulCreatePod"};
}

TEST(Expectations, PendingUntilThePodsShowIt) {
  Expectations e(300);
  e.Asked("ns/j", Create("j-worker-0"), 100);
  e.Answered("ns/j", Create("j-worker-0"), 201);
  e.Asked("ns/j", Delete("j-worker-1"), 100);
  e.Answered("ns/j", Delete("j-worker-1"), 200);
  Pending p = e.Settle("ns/j", {Pod("j-worker-1")}, 101);  // the cache lags
  EXPECT_EQ(p.creating, std::set<std::string>{"j-worker-0"});
  EXPECT_EQ(p.deleting, std::set<std::string>{"j-worker-1"});
  EXPECT_TRUE(e.Get("ns/other", 101).creating.empty());
  // The created pod shows, the deleted one terminates.
  p = e.Settle("ns/j", {Pod("j-worker-0"), Pod("j-worker-1", /*terminating=*/true)}, 102);
  EXPECT_TRUE(p.creating.empty());
  EXPECT_TRUE(p.deleting.empty());
  EXPECT_TRUE(e.Get("ns/j", 102).deleting.empty());
}

// The e2e-kueue failure: the watch event that shows the pod terminating is
// handled after a reconcile read the pods (the failed pod, not yet
// terminating) and before it read what is pending. Its plan must still see
// the deletion pending, or it counts the failure again.
TEST(Expectations, AnEventAfterThePodsWereReadDoesNotLowerADeletion) {
  Expectations e(300);
  e.Asked("ns/j", Delete("j-worker-1"), 100);
  e.Answered("ns/j", Delete("j-worker-1"), 200);
  const std::vector<json> read = {Pod("j-worker-1")};
  e.Observe("ns/j", WatchEventType::kModified, Pod("j-worker-1", /*terminating=*/true));
  EXPECT_EQ(e.Settle("ns/j", read, 100).deleting, std::set<std::string>{"j-worker-1"});
  // Gone (DELETED) after the read: the same.
  e.Observe("ns/j", WatchEventType::kDeleted, Pod("j-worker-1"));
  EXPECT_EQ(e.Settle("ns/j", read, 100).deleting, std::set<std::string>{"j-worker-1"});
  // The next reconcile reads the cache without it.
  EXPECT_TRUE(e.Settle("ns/j", {}, 101).deleting.empty());
}

TEST(Expectations, ADeleteAnswered404WaitsForTheCache) {
  Expectations e(300);
  e.Asked("ns/j", Delete("j-worker-0"), 100);
  e.Answered("ns/j", Delete("j-worker-0"), 404);
  EXPECT_EQ(e.Settle("ns/j", {Pod("j-worker-0")}, 100).deleting, std::set<std::string>{"j-worker-0"});
  EXPECT_TRUE(e.Settle("ns/j", {}, 101).deleting.empty());
}

TEST(Expectations, RefusedRequestsLeaveNothingToWaitFor) {
  Expectations e(300);
  e.Asked("ns/j", Delete("j-worker-0"), 100);
  e.Answered("ns/j", Delete("j-worker-0"), 500);
  e.Asked("ns/j", Create("j-worker-1"), 100);
  e.Answered("ns/j", Create("j-worker-1"), 0);  // no answer
  e.Asked("ns/j", Create("j-worker-2"), 100);
  e.Answered("ns/j", Create("j-worker-2"), 409);  // AlreadyExists: the cache will show it
  const Pending p = e.Settle("ns/j", {Pod("j-worker-0")}, 100);
  EXPECT_TRUE(p.deleting.empty());
  EXPECT_EQ(p.creating, std::set<std::string>{"j-worker-2"});
}

// Any event of a pod being created tells that the creation reached the API
// server: a pod created and deleted before a reconcile saw it is gone, not
// pending.
TEST(Expectations, AnEventLowersACreation) {
  Expectations e(300);
  e.ExpectCreate("ns/j", "j-worker-0", 100);
  e.Observe("ns/j", WatchEventType::kAdded, Pod("j-worker-0"));
  e.Observe("ns/j", WatchEventType::kDeleted, Pod("j-worker-0"));
  EXPECT_TRUE(e.Settle("ns/j", {}, 101).creating.empty());
}

TEST(Expectations, ExpireAfterTtl) {
  Expectations e(10);
  e.ExpectCreate("ns/j", "j-worker-0", 100);
  e.ExpectDelete("ns/j", "j-worker-1", 100);
  EXPECT_EQ(e.Settle("ns/j", {Pod("j-worker-1")}, 109).creating.size(), 1u);
  const Pending p = e.Settle("ns/j", {Pod("j-worker-1")}, 110);
  EXPECT_TRUE(p.creating.empty());
  EXPECT_TRUE(p.deleting.empty());
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
