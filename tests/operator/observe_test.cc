// Reading the API server's objects: owner references, the job a child
// belongs to, a pod's failed exit.
#include "observe.h"

#include <gtest/gtest.h>

#include "time_util.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

TEST(ControlledBy, NeedsTheControllerReferenceWithTheUid) {
  json obj = {{"metadata", {{"name", "x"}}}};
  obj["metadata"]["ownerReferences"] = json::parse(R"([{"uid": "u", "controller": false}])");
  EXPECT_FALSE(ControlledBy(obj, "u")) << "an owner that is not the controller";
  obj["metadata"]["ownerReferences"].push_back(json::parse(R"({"uid": "old", "controller": true})"));
  EXPECT_FALSE(ControlledBy(obj, "u")) << "another object's (an earlier job of the same name)";
  obj["metadata"]["ownerReferences"][1]["uid"] = "u";
  EXPECT_TRUE(ControlledBy(obj, "u"));
  EXPECT_FALSE(ControlledBy(obj, "")) << "an empty uid controls nothing";
  EXPECT_FALSE(ControlledBy(json("text"), "u"));
}

// The case the planner's pods and the shell's Secret and NetworkPolicy
// once disagreed on: no controller reference at all (made by hand, or
// orphaned by `kubectl delete --cascade=orphan`, which removes references)
// is not ours.
TEST(ControlledBy, AnObjectWithoutAControllerReferenceIsNobodys) {
  EXPECT_FALSE(ControlledBy(json{{"metadata", {{"name", "x"}}}}, "u"));
  EXPECT_FALSE(ControlledBy(json{{"metadata", {{"name", "x"}, {"ownerReferences", json::array()}}}}, "u"));
  EXPECT_FALSE(ControlledBy(json{{"metadata", {{"name", "x"}, {"ownerReferences", nullptr}}}}, "u"));
  EXPECT_FALSE(ControlledBy(json::object(), "u"));
}

TEST(JobKeyOf, IsTheNamespaceAndTheJobNameLabel) {
  json pod = {{"metadata", {{"name", "j-worker-0"}, {"namespace", "ns"}}}};
  EXPECT_EQ(JobKeyOf(pod), "") << "no labels";
  pod["metadata"]["labels"] = {{"app", "x"}};
  EXPECT_EQ(JobKeyOf(pod), "") << "not ours";
  pod["metadata"]["labels"]["ringmaster.io/job-name"] = 3;
  EXPECT_EQ(JobKeyOf(pod), "") << "not a string";
  pod["metadata"]["labels"]["ringmaster.io/job-name"] = "j";
  EXPECT_EQ(JobKeyOf(pod), "ns/j");
  EXPECT_EQ(JobKeyOf(json("text")), "");
}

TEST(ObserveFailure, ReadsStateThenLastStateAndPrefersAMessage) {
  json pod = {
      {"metadata",
       {{"name", "j-worker-2"},
        {"labels", {{"ringmaster.io/replica-type", "worker"}, {"ringmaster.io/replica-index", "2"}}}}}};
  EXPECT_FALSE(ObserveFailure(pod));
  json sidecar = {{"name", "sidecar"}, {"state", {{"terminated", {{"exitCode", 2}}}}}};
  json trainer = {{"name", "trainer"}, {"state", {{"running", json::object()}}}};
  trainer["lastState"]["terminated"] = {
      {"exitCode", 1}, {"message", "why"}, {"finishedAt", "2027-01-15T08:00:00Z"}};
  pod["status"]["containerStatuses"] = json::array({sidecar, trainer});
  auto f = ObserveFailure(pod);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->replica, "worker-2");
  EXPECT_EQ(f->exit_code, 1);
  EXPECT_EQ(f->message, "why");
  EXPECT_EQ(f->finished, *ParseRfc3339("2027-01-15T08:00:00Z"));
  pod["status"]["containerStatuses"][1]["lastState"]["terminated"]["exitCode"] = 0;
  f = ObserveFailure(pod);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->exit_code, 2);
  EXPECT_EQ(f->message, "");
}

}  // namespace
}  // namespace ringmaster::op
