// Kubernetes' native gang scheduling (gang.h) against discovery answers as
// the API servers of 1.33 (none), 1.35, 1.36 and 1.37 give them: the testbed
// runs 1.33, where the API does not exist (docs/operator.md, "Gang
// scheduling"), so these fakes of discovery are where this code runs.
#include "gang.h"

#include <gtest/gtest.h>

#include "pod_builder.h"
#include "reconcile.h"
#include "test_util.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;
using testing::QuickstartObject;

json Discovery(std::initializer_list<const char*> versions) {
  json g = {
      {"kind", "APIGroup"}, {"apiVersion", "v1"}, {"name", "scheduling.k8s.io"}, {"versions", json::array()}};
  for (const char* v : versions)
    g["versions"].push_back({{"groupVersion", std::string("scheduling.k8s.io/") + v}, {"version", v}});
  return g;
}

DistributedJob Job(json obj = QuickstartObject()) {
  LoadedJob l = DecodeJob(obj);
  EXPECT_TRUE(l.job.has_value());
  return *l.job;
}

TEST(GangDiscovery, TheNewestVersionTheOperatorSpeaks) {
  EXPECT_EQ(GangApiFromDiscovery(Discovery({"v1"})), GangApi::kNone);  // 1.33: PriorityClass only
  EXPECT_EQ(GangApiFromDiscovery(Discovery({"v1", "v1alpha1"})), GangApi::kV1Alpha1);
  EXPECT_EQ(GangApiFromDiscovery(Discovery({"v1", "v1alpha2"})), GangApi::kV1Alpha2);
  EXPECT_EQ(GangApiFromDiscovery(Discovery({"v1", "v1beta1", "v1alpha3"})), GangApi::kV1Beta1);
  EXPECT_EQ(GangApiFromDiscovery(Discovery({"v1alpha3"})), GangApi::kNone);  // unknown shape: not guessed
  EXPECT_EQ(GangApiFromDiscovery(json{{"kind", "Status"}, {"code", 404}}), GangApi::kNone);
  EXPECT_EQ(GangApiFromDiscovery(json()), GangApi::kNone);
}

TEST(GangObjects, Kubernetes135AWorkloadAndPodsPointingAtIt) {
  const DistributedJob job = Job();
  auto objects = BuildGangObjects(job, GangApi::kV1Alpha1);
  ASSERT_EQ(objects.size(), 1u);
  const json& w = objects[0];
  EXPECT_EQ(w["apiVersion"], "scheduling.k8s.io/v1alpha1");
  EXPECT_EQ(w["kind"], "Workload");
  EXPECT_EQ(w["metadata"]["name"], "quickstart");
  EXPECT_EQ(w["metadata"]["ownerReferences"][0]["uid"], "uid-1234");
  EXPECT_EQ(w["spec"]["podGroups"][0]["policy"]["gang"]["minCount"], 3);  // every pod of the job
  EXPECT_EQ(GangCollectionPath(w, "team-a"), "/apis/scheduling.k8s.io/v1alpha1/namespaces/team-a/workloads");
  BuildOptions opts;
  opts.gang_api = GangApi::kV1Alpha1;
  auto pod = BuildPod(job, {ReplicaType::kWorker, 0}, opts);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->pod["spec"]["workloadRef"], (json{{"name", "quickstart"}, {"podGroup", "job"}}));
  EXPECT_FALSE(pod->pod["spec"].contains("schedulingGroup"));
}

TEST(GangObjects, Kubernetes136And137AWorkloadAPodGroupAndPodsInTheGroup) {
  json obj = QuickstartObject();
  obj["spec"]["runPolicy"]["schedulingPolicy"] = {{"minAvailable", 2}};
  const DistributedJob job = Job(obj);
  for (GangApi api : {GangApi::kV1Alpha2, GangApi::kV1Beta1}) {
    auto objects = BuildGangObjects(job, api);
    ASSERT_EQ(objects.size(), 2u);
    EXPECT_EQ(objects[0]["kind"], "Workload");
    EXPECT_EQ(objects[0]["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"], 2);
    const json& g = objects[1];
    EXPECT_EQ(g["kind"], "PodGroup");
    EXPECT_EQ(g["spec"]["schedulingPolicy"]["gang"]["minCount"], 2);  // minAvailable
    EXPECT_EQ(GangCollectionPath(g, "ns"),
              "/apis/" + std::string(GangApiName(api)) + "/namespaces/ns/podgroups");
    if (api == GangApi::kV1Alpha2) {
      EXPECT_EQ(g["spec"]["podGroupTemplateRef"]["workload"]["workloadName"], "quickstart");
    } else {
      EXPECT_EQ(g["spec"]["workloadRef"], (json{{"workloadName", "quickstart"}, {"templateName", "job"}}));
    }
    BuildOptions opts;
    opts.gang_api = api;
    auto pod = BuildPod(job, {ReplicaType::kChief, 0}, opts);
    ASSERT_TRUE(pod.ok());
    EXPECT_EQ(pod->pod["spec"]["schedulingGroup"], (json{{"podGroupName", "quickstart"}}));
  }
}

TEST(GangPlan, TheGangComesBeforeThePodsAndNotForAQueuedJob) {
  BuildOptions opts;
  opts.gang_api = GangApi::kV1Beta1;
  Plan p = PlanJob(QuickstartObject(), {}, nullptr, {}, 1'800'000'000, opts);
  ASSERT_GE(p.steps.size(), 2u);
  std::vector<std::string> first;
  for (const ApiAction& a : p.steps[0].actions) first.push_back(a.object.value("kind", ""));
  EXPECT_EQ(p.steps[0].on_failure, OnFailure::kNoNewPods);  // no pod without its gang
  EXPECT_EQ(first, (std::vector<std::string>{"Secret", "Workload", "PodGroup"}));
  // Queued: Kueue admits the job whole already; no second gang.
  json queued = QuickstartObject();
  queued["spec"]["runPolicy"]["schedulingPolicy"] = {{"queue", "team-a"}};
  p = PlanJob(queued, {}, nullptr, {}, 1'800'000'000, opts);
  for (const Step& s : p.steps) {
    for (const ApiAction& a : s.actions) {
      EXPECT_NE(a.kind, ApiActionKind::kCreateGangObject);
      if (a.kind == ApiActionKind::kCreatePod) {
        EXPECT_FALSE(a.object["spec"].contains("schedulingGroup"));
      }
    }
  }
  // Without the API: nothing of it.
  p = PlanJob(QuickstartObject(), {}, nullptr, {}, 1'800'000'000, {});
  for (const Step& s : p.steps) {
    for (const ApiAction& a : s.actions) EXPECT_NE(a.kind, ApiActionKind::kCreateGangObject);
  }
}

}  // namespace
}  // namespace ringmaster::op
