// PlanJob's contract with the shell: the order of its steps and what a
// failure of each means, and the objects it asks for. What it decides
// step by step is in the transcripts (testdata/plan/*.txt,
// plan_transcript_test.cc).
#include "reconcile.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;
using testing::PodWithPhase;
using testing::QuickstartObject;

constexpr int64_t kNow = 1'800'000'000;

// The plan's steps, each as "on-failure: kind kind ...".
std::vector<std::string> Shape(const Plan& p) {
  std::vector<std::string> out;
  for (const Step& s : p.steps) {
    std::string line(OnFailureName(s.on_failure));
    line += ":";
    for (const ApiAction& a : s.actions) line += " " + std::string(ApiActionKindName(a.kind));
    out.push_back(line);
  }
  return out;
}

const ApiAction* Find(const Plan& p, ApiActionKind kind) {
  for (const Step& s : p.steps) {
    for (const ApiAction& a : s.actions) {
      if (a.kind == kind) return &a;
    }
  }
  return nullptr;
}

// Pods as the plan would create them, in the given phase.
std::vector<json> AllPods(const json& job, const std::string& phase) {
  std::vector<json> pods;
  for (const Step& s : PlanJob(job, {}, nullptr, {}, kNow, {}).steps) {
    for (const ApiAction& a : s.actions) {
      if (a.kind == ApiActionKind::kCreatePod) pods.push_back(PodWithPhase(a.object, phase));
    }
  }
  return pods;
}

// The quickstart job under restartPolicy ExitCode (backoffLimit 5), its
// pods running but worker 1's, which was SIGKILLed (exit 137).
struct WorkerExited {
  json job = QuickstartObject();
  std::vector<json> pods;
  WorkerExited() {
    job["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode";
    job["spec"]["runPolicy"]["backoffLimit"] = 5;
    pods = AllPods(job, "Running");
    pods[2] = PodWithPhase(pods[2], "Failed", 137);
  }
};

json WithStatus(json job, const Plan& p) {
  if (p.status) job["status"] = *p.status;
  return job;
}

TEST(PlanOrder, ANewJobCreatesItsPrerequisitesThenServiceAndPodsThenWritesTheStatus) {
  BuildOptions opts;
  opts.network_policy = true;
  const Plan p = PlanJob(QuickstartObject(), {}, nullptr, {}, kNow, opts);
  EXPECT_EQ(Shape(p), (std::vector<std::string>{
                          "no-new-pods: create-key-secret create-network-policy",
                          "continue: create-service create-pod create-pod create-pod",
                          "stop: write-status",
                      }));
}

TEST(PlanOrder, ARestartWritesTheStatusAndTellsItsEventBeforeItDeletesTheEvidence) {
  // Once the pod is gone nothing tells the restart again: an event that
  // cannot be delivered stops the plan (the soak lost one when the leader
  // was killed with it still queued behind a slow API server).
  WorkerExited w;
  w.pods[2]["metadata"]["uid"] = "pod-uid-2";
  const json svc = json::object();
  const Plan p = PlanJob(w.job, w.pods, &svc, {}, kNow, {});
  EXPECT_EQ(Shape(p),
            (std::vector<std::string>{"stop: write-status", "stop: record-events", "continue: delete-pod"}));
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].once, "restart.pod-uid-2");
}

TEST(PlanOrder, ALeaderThatTakesOverMidRestartTellsTheSameRestartEvent) {
  // The first leader counts worker 1's exit and is killed before deleting
  // its pod; the next one sees the same pod (its uid): it deletes it,
  // counts nothing, and tells the restart's event under the same name.
  WorkerExited w;
  json& job = w.job;
  auto& pods = w.pods;
  pods[2]["metadata"]["uid"] = "pod-uid-2";
  const json svc = json::object();
  const Plan first = PlanJob(job, pods, &svc, {}, kNow, {});
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].reason, "JobRestarting");
  EXPECT_EQ(first.events[0].once, "restart.pod-uid-2");
  const Plan next = PlanJob(WithStatus(job, first), pods, &svc, {}, kNow + 1, {});
  ASSERT_EQ(next.events.size(), 1u);
  EXPECT_EQ(next.events[0].reason, "JobRestarting");
  EXPECT_EQ(next.events[0].once, first.events[0].once);
  const json status = next.status.value_or(WithStatus(job, first)["status"]);
  EXPECT_EQ(status.value("restartCount", -1), 1) << "counted again";
}

TEST(PlanOrder, FailuresActedOnTogetherAreAnEventEachToldAgainUnderTheirNames) {
  // Workers 0 and 1 exit before one reconcile: one restart of both, and an
  // event for each failure, named for its pod. A leader killed before it
  // deletes them is followed by one that tells the same two events (the
  // API server keeps one of each), not a third under a name of its own.
  WorkerExited w;
  w.pods[1] = PodWithPhase(w.pods[1], "Failed", 137);
  w.pods[1]["metadata"]["uid"] = "pod-uid-1";
  w.pods[2]["metadata"]["uid"] = "pod-uid-2";
  const json svc = json::object();
  const Plan first = PlanJob(w.job, w.pods, &svc, {}, kNow, {});
  auto names = [](const Plan& p) {
    std::vector<std::string> out;
    for (const JobEvent& e : p.events) out.push_back(e.reason + " " + e.once + ": " + e.message);
    return out;
  };
  const std::vector<std::string> want{"JobRestarting restart.pod-uid-1: restarting Worker 0",
                                      "JobRestarting restart.pod-uid-2: restarting Worker 1"};
  EXPECT_EQ(names(first), want);
  ASSERT_TRUE(first.status);
  EXPECT_EQ(first.status->value("restartCount", -1), 2);
  const Plan next = PlanJob(WithStatus(w.job, first), w.pods, &svc, {}, kNow + 1, {});
  EXPECT_EQ(names(next), want);
  const json status = next.status.value_or(WithStatus(w.job, first)["status"]);
  EXPECT_EQ(status.value("restartCount", -1), 2) << "counted again";
}

TEST(PlanOrder, TheTtlWritesTheStatusBeforeTheJobIsDeleted) {
  json job = QuickstartObject();
  job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 30;
  auto pods = AllPods(job, "Running");
  pods[0] = PodWithPhase(pods[0], "Succeeded", 0);  // the chief
  const json svc = json::object();
  const Plan done = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_EQ(Shape(done), (std::vector<std::string>{"stop: write-status", "stop: record-events",
                                                   "continue: delete-pod delete-pod"}));
  // The end is told again (a once-event: one Event whoever tells it).
  const Plan ttl = PlanJob(WithStatus(job, done), {}, &svc, {}, kNow + 31, {});
  EXPECT_EQ(Shape(ttl),
            (std::vector<std::string>{"stop: write-status", "stop: record-events", "continue: delete-job"}));
  ASSERT_EQ(ttl.events.size(), 1u);
  EXPECT_EQ(ttl.events[0].once, "end");
  EXPECT_EQ(ttl.events[0].reason, "JobSucceeded");
  // Long after the end (an Event's life in the API server), it is not.
  const Plan late = PlanJob(WithStatus(job, done), {}, &svc, {}, kNow + 4000, {});
  EXPECT_TRUE(late.events.empty());
}

TEST(PlanOrder, WithoutDeletionsTheStatusComesLastAndItsEventsAfterIt) {
  json job = QuickstartObject();
  job["spec"]["replicaSpecs"]["Worker"]["replicas"] = -1;
  const Plan p = PlanJob(job, {}, nullptr, {}, kNow, {});
  EXPECT_EQ(Shape(p), (std::vector<std::string>{"stop: write-status", "continue: record-events"}));
  EXPECT_TRUE(Shape(PlanJob(WithStatus(job, p), {}, nullptr, {}, kNow, {})).empty());
}

TEST(PlanJob, TheKeySecretHasNoDataAndEveryPodMountsIt) {
  const Plan p = PlanJob(QuickstartObject(), {}, nullptr, {}, kNow, {});
  const ApiAction* secret = Find(p, ApiActionKind::kCreateKeySecret);
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ(secret->object["kind"], "Secret");
  EXPECT_FALSE(secret->object.contains("data"));  // the shell's random key, never the planner's
  for (const json& pod : AllPods(QuickstartObject(), "Pending")) {
    ASSERT_EQ(pod["spec"]["volumes"].size(), 1u);
    EXPECT_EQ(pod["spec"]["volumes"][0]["secret"]["secretName"], secret->name);
  }
}

TEST(PlanJob, TheNetworkPolicyIsTheBuildersObject) {
  BuildOptions opts;
  opts.network_policy = true;
  const Plan p = PlanJob(QuickstartObject(), {}, nullptr, {}, kNow, opts);
  const ApiAction* np = Find(p, ApiActionKind::kCreateNetworkPolicy);
  ASSERT_NE(np, nullptr);
  EXPECT_EQ(np->object["kind"], "NetworkPolicy");
  EXPECT_EQ(np->object["metadata"]["name"], np->name);
}

}  // namespace
}  // namespace ringmaster::op

namespace ringmaster::op {
namespace {

// A deleted job's pods: Kueue's finalizer is dropped from those on their way
// out (with the patch that removes it alone), and nothing else is touched.
TEST(PlanDeletedJob, DropsKueuesFinalizerFromDeletingPodsOnly) {
  auto pod = [](const std::string& name, bool deleting, json finalizers) {
    json p = {{"metadata", {{"name", name}, {"finalizers", std::move(finalizers)}}}};
    if (deleting) p["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
    return p;
  };
  const std::vector<json> pods = {
      pod("j-worker-0", true, {"kueue.x-k8s.io/managed", "other/x"}),
      pod("j-worker-1", false, {"kueue.x-k8s.io/managed"}),  // not deleted: Kueue's to keep
      pod("j-worker-2", true, {"other/x"}),                  // none of Kueue's
      json("not a pod"),
  };
  const auto actions = PlanDeletedJob(pods);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, ApiActionKind::kPatchPod);
  EXPECT_EQ(actions[0].name, "j-worker-0");
  EXPECT_EQ(
      actions[0].object,
      json::parse(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["kueue.x-k8s.io/managed"]}})"));
}

}  // namespace
}  // namespace ringmaster::op
