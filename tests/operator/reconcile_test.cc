#include "reconcile.h"

#include <gtest/gtest.h>

#include "observe.h"
#include "status_json.h"
#include "test_util.h"
#include "time_util.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;
using testing::PodWithPhase;
using testing::QuickstartObject;

constexpr int64_t kNow = 1'800'000'000;

std::vector<std::string> Names(const Plan& p, ApiActionKind kind) {
  std::vector<std::string> out;
  for (const auto& a : p.actions) {
    if (a.kind == kind) out.push_back(a.name);
  }
  return out;
}

// Pods as the plan would create them, in the given phase.
std::vector<json> AllPods(const json& job, const std::string& phase) {
  Plan p = PlanJob(job, {}, nullptr, {}, kNow, {});
  std::vector<json> pods;
  for (const auto& a : p.actions) {
    if (a.kind == ApiActionKind::kCreatePod) pods.push_back(PodWithPhase(a.object, phase));
  }
  return pods;
}

// The job after the plan's status is written, as the next reconcile sees it.
json WithStatus(json job, const Plan& p) {
  if (p.status) job["status"] = *p.status;
  return job;
}

json& Find(std::vector<json>& pods, const std::string& name) {
  for (auto& p : pods) {
    if (p["metadata"]["name"] == name) return p;
  }
  throw std::runtime_error("no pod " + name);
}

TEST(PlanJob, NewJobCreatesServiceAndEveryPodInOrder) {
  Plan p = PlanJob(QuickstartObject(), {}, nullptr, {}, kNow, {});
  EXPECT_EQ(Names(p, ApiActionKind::kCreateService), std::vector<std::string>{"quickstart"});
  EXPECT_EQ(Names(p, ApiActionKind::kCreatePod),
            (std::vector<std::string>{"quickstart-chief-0", "quickstart-worker-0", "quickstart-worker-1"}));
  ASSERT_TRUE(p.status.has_value());
  EXPECT_EQ(p.state, "Created");
  EXPECT_EQ((*p.status)["observedGeneration"], 1);
  EXPECT_EQ((*p.status)["conditions"][0]["type"], "Created");
  EXPECT_EQ((*p.status)["conditions"][0]["status"], "True");
  EXPECT_EQ((*p.status)["startTime"], "2027-01-15T08:00:00Z");
}

size_t IndexOf(const Plan& p, ApiActionKind kind) {
  for (size_t i = 0; i < p.actions.size(); ++i) {
    if (p.actions[i].kind == kind) return i;
  }
  return p.actions.size();
}

TEST(PlanJob, TheKeySecretComesBeforeThePodsWithoutItsData) {
  Plan p = PlanJob(QuickstartObject(), {}, nullptr, {}, kNow, {});
  EXPECT_EQ(Names(p, ApiActionKind::kCreateKeySecret), std::vector<std::string>{"quickstart-ringmaster-key"});
  EXPECT_LT(IndexOf(p, ApiActionKind::kCreateKeySecret), IndexOf(p, ApiActionKind::kCreatePod));
  const json& secret = p.actions[IndexOf(p, ApiActionKind::kCreateKeySecret)].object;
  EXPECT_EQ(secret["kind"], "Secret");
  EXPECT_FALSE(secret.contains("data"));  // the shell's random key, never the planner's
  EXPECT_TRUE(Names(p, ApiActionKind::kCreateNetworkPolicy).empty());
  for (const auto& a : p.actions) {
    if (a.kind == ApiActionKind::kCreatePod) {
      EXPECT_EQ(a.object["spec"]["volumes"].size(), 1u);
    }
  }
}

TEST(PlanJob, KeySecretRefCreatesNoSecret) {
  json job = QuickstartObject();
  job["spec"]["communication"]["keySecretRef"] = {{"name", "team-key"}};
  Plan p = PlanJob(job, {}, nullptr, {}, kNow, {});
  EXPECT_TRUE(Names(p, ApiActionKind::kCreateKeySecret).empty());
  EXPECT_EQ(Names(p, ApiActionKind::kCreatePod).size(), 3u);
}

TEST(PlanJob, NetworkPolicyOptionCreatesOneBeforeThePods) {
  BuildOptions opts;
  opts.network_policy = true;
  Plan p = PlanJob(QuickstartObject(), {}, nullptr, {}, kNow, opts);
  EXPECT_EQ(Names(p, ApiActionKind::kCreateNetworkPolicy), std::vector<std::string>{"quickstart-ringmaster"});
  EXPECT_LT(IndexOf(p, ApiActionKind::kCreateNetworkPolicy), IndexOf(p, ApiActionKind::kCreatePod));
  EXPECT_EQ(p.actions[IndexOf(p, ApiActionKind::kCreateNetworkPolicy)].object["kind"], "NetworkPolicy");
}

TEST(PlanJob, NoPodToCreateNoSecretOrPolicy) {
  json job = QuickstartObject();
  auto pods = AllPods(job, "Running");
  const json svc = json::object();
  BuildOptions opts;
  opts.network_policy = true;
  Plan p = PlanJob(job, pods, &svc, {}, kNow, opts);
  EXPECT_TRUE(p.actions.empty());
  // A pod gone (e.g. a restart's deletion) is created anew: the key Secret
  // and the policy are asked for again (the shell keeps the ones that exist).
  pods.pop_back();
  p = PlanJob(WithStatus(job, p), pods, &svc, {}, kNow + 1, opts);
  EXPECT_EQ(Names(p, ApiActionKind::kCreatePod), std::vector<std::string>{"quickstart-worker-1"});
  EXPECT_EQ(Names(p, ApiActionKind::kCreateKeySecret).size(), 1u);
  EXPECT_EQ(Names(p, ApiActionKind::kCreateNetworkPolicy).size(), 1u);
}

TEST(PlanJob, NothingToDoWhenEverythingExists) {
  json job = QuickstartObject();
  auto pods = AllPods(job, "Running");
  const json svc = json::object();
  Plan first = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_TRUE(first.actions.empty());
  EXPECT_EQ(first.state, "Running");
  ASSERT_TRUE(first.status.has_value());
  // Once written, the same observation writes nothing.
  Plan second = PlanJob(WithStatus(job, first), pods, &svc, {}, kNow + 5, {});
  EXPECT_TRUE(second.actions.empty());
  EXPECT_FALSE(second.status.has_value());
}

TEST(PlanJob, PendingCreationsAreNotCreatedAgain) {
  Pending pending;
  pending.creating = {"quickstart-chief-0", "quickstart-worker-0", "quickstart-worker-1"};
  Plan p = PlanJob(QuickstartObject(), {}, nullptr, pending, kNow, {});
  EXPECT_TRUE(Names(p, ApiActionKind::kCreatePod).empty());
  EXPECT_EQ(p.state, "Created");
}

TEST(PlanJob, ExitCodePolicyRestartsOnSignalsOnly) {
  json job = QuickstartObject();
  job["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode";
  job["spec"]["runPolicy"]["backoffLimit"] = 5;
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  Find(pods, "quickstart-worker-1") = PodWithPhase(Find(pods, "quickstart-worker-1"), "Failed", 137);
  Plan p = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_EQ(Names(p, ApiActionKind::kDeletePod), std::vector<std::string>{"quickstart-worker-1"});
  EXPECT_EQ(p.state, "Restarting");
  EXPECT_EQ((*p.status)["restartCount"], 1);

  // While the delete is pending the failed pod is not restarted again.
  Pending pending;
  pending.deleting = {"quickstart-worker-1"};
  Plan again = PlanJob(WithStatus(job, p), pods, &svc, pending, kNow + 1, {});
  EXPECT_TRUE(again.actions.empty());
  EXPECT_FALSE(again.status.has_value());

  // Once gone it is created anew.
  pods.erase(std::remove_if(pods.begin(), pods.end(),
                            [](const json& x) { return x["metadata"]["name"] == "quickstart-worker-1"; }),
             pods.end());
  Plan recreate = PlanJob(WithStatus(job, p), pods, &svc, {}, kNow + 2, {});
  EXPECT_EQ(Names(recreate, ApiActionKind::kCreatePod), std::vector<std::string>{"quickstart-worker-1"});

  // An exit code 1-127 fails the job.
  auto pods2 = AllPods(job, "Running");
  Find(pods2, "quickstart-worker-0") = PodWithPhase(Find(pods2, "quickstart-worker-0"), "Failed", 3);
  Plan failed = PlanJob(job, pods2, &svc, {}, kNow, {});
  EXPECT_EQ(failed.state, "Failed");
  bool has_failed_event = false;
  for (const auto& e : failed.events) has_failed_event |= e.warning && e.reason == "ReplicaFailed";
  EXPECT_TRUE(has_failed_event);
}

TEST(StatusBeforeActions, WhenThePlanDeletesAndOnlyThen) {
  json job = QuickstartObject();
  job["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode";
  job["spec"]["runPolicy"]["backoffLimit"] = 5;
  const json svc = json::object();
  // A new job: creations only, the status after them.
  Plan created = PlanJob(job, {}, nullptr, {}, kNow, {});
  ASSERT_FALSE(Names(created, ApiActionKind::kCreatePod).empty());
  ASSERT_TRUE(created.status.has_value());
  EXPECT_FALSE(StatusBeforeActions(created));
  // A restart: the count is written before the failed pod is deleted.
  auto pods = AllPods(job, "Running");
  Find(pods, "quickstart-worker-1") = PodWithPhase(Find(pods, "quickstart-worker-1"), "Failed", 137);
  Plan restart = PlanJob(job, pods, &svc, {}, kNow, {});
  ASSERT_EQ(Names(restart, ApiActionKind::kDeletePod), std::vector<std::string>{"quickstart-worker-1"});
  EXPECT_TRUE(StatusBeforeActions(restart));
  // The TTL: the finished job's status before the job is deleted.
  job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 30;
  auto done_pods = AllPods(job, "Running");
  Find(done_pods, "quickstart-chief-0") = PodWithPhase(Find(done_pods, "quickstart-chief-0"), "Succeeded", 0);
  Plan done = PlanJob(job, done_pods, &svc, {}, kNow, {});
  Plan ttl = PlanJob(WithStatus(job, done), {}, &svc, {}, kNow + 31, {});
  ASSERT_EQ(Names(ttl, ApiActionKind::kDeleteJob), std::vector<std::string>{"quickstart"});
  EXPECT_TRUE(StatusBeforeActions(ttl));
}

TEST(PlanJob, BackoffLimitFailsTheJob) {
  json job = QuickstartObject();
  job["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode";
  job["spec"]["runPolicy"]["backoffLimit"] = 1;
  job["status"] = StatusToJson(JobStatus{{}, {}, kNow - 10, std::nullopt, 1}, 1);
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  Find(pods, "quickstart-worker-0") = PodWithPhase(Find(pods, "quickstart-worker-0"), "Failed", 143);
  Plan p = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_EQ(p.state, "Failed");
  ASSERT_TRUE(p.status.has_value());
  bool reason = false;
  for (const auto& c : (*p.status)["conditions"])
    reason |= c["type"] == "Failed" && c["reason"] == "BackoffLimitExceeded";
  EXPECT_TRUE(reason);
  // cleanPodPolicy Running: the running pods are deleted.
  EXPECT_EQ(Names(p, ApiActionKind::kDeletePod).size(), 2u);
}

TEST(PlanJob, ChiefSuccessSucceedsAndCleansRunningPods) {
  json job = QuickstartObject();
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  Find(pods, "quickstart-chief-0") = PodWithPhase(Find(pods, "quickstart-chief-0"), "Succeeded", 0);
  Plan p = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_EQ(p.state, "Succeeded");
  EXPECT_EQ(Names(p, ApiActionKind::kDeletePod),
            (std::vector<std::string>{"quickstart-worker-0", "quickstart-worker-1"}));
  EXPECT_TRUE(p.status->contains("completionTime"));
  EXPECT_EQ((*p.status)["replicaStatuses"]["Chief"]["succeeded"], 1);
  EXPECT_EQ((*p.status)["replicaStatuses"]["Worker"]["active"], 2);
}

TEST(PlanJob, CleanPodPolicyNoneKeepsPods) {
  json job = QuickstartObject();
  job["spec"]["runPolicy"]["cleanPodPolicy"] = "None";
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  Find(pods, "quickstart-chief-0") = PodWithPhase(Find(pods, "quickstart-chief-0"), "Succeeded", 0);
  Plan p = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_EQ(p.state, "Succeeded");
  EXPECT_TRUE(p.actions.empty());
}

TEST(PlanJob, AllWorkersSuccessPolicy) {
  json job = QuickstartObject();
  job["spec"]["successPolicy"] = "AllWorkers";
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  Find(pods, "quickstart-chief-0") = PodWithPhase(Find(pods, "quickstart-chief-0"), "Succeeded", 0);
  Find(pods, "quickstart-worker-0") = PodWithPhase(Find(pods, "quickstart-worker-0"), "Succeeded", 0);
  EXPECT_NE(PlanJob(job, pods, &svc, {}, kNow, {}).state, "Succeeded");
  Find(pods, "quickstart-worker-1") = PodWithPhase(Find(pods, "quickstart-worker-1"), "Succeeded", 0);
  EXPECT_EQ(PlanJob(job, pods, &svc, {}, kNow, {}).state, "Succeeded");
}

TEST(PlanJob, ActiveDeadlineFailsWithDeadlineExceeded) {
  json job = QuickstartObject();
  job["spec"]["runPolicy"]["activeDeadlineSeconds"] = 60;
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  Plan first = PlanJob(job, pods, &svc, {}, kNow, {});
  ASSERT_TRUE(first.requeue_after_seconds.has_value());
  EXPECT_EQ(*first.requeue_after_seconds, 60);
  Plan late = PlanJob(WithStatus(job, first), pods, &svc, {}, kNow + 61, {});
  EXPECT_EQ(late.state, "Failed");
  bool reason = false;
  for (const auto& c : (*late.status)["conditions"]) reason |= c["reason"] == "DeadlineExceeded";
  EXPECT_TRUE(reason);
}

TEST(PlanJob, SuspendDeletesPodsAndResumeRecreates) {
  json job = QuickstartObject();
  auto pods = AllPods(job, "Running");
  job["spec"]["runPolicy"]["suspend"] = true;
  const json svc = json::object();
  Plan s = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_EQ(s.state, "Suspended");
  EXPECT_EQ(Names(s, ApiActionKind::kDeletePod).size(), 3u);
  EXPECT_TRUE(Names(s, ApiActionKind::kCreatePod).empty());
  json resumed = WithStatus(job, s);
  resumed["spec"]["runPolicy"]["suspend"] = false;
  resumed["metadata"]["generation"] = 2;
  Plan r = PlanJob(resumed, {}, &svc, {}, kNow + 10, {});
  EXPECT_EQ(Names(r, ApiActionKind::kCreatePod).size(), 3u);
  EXPECT_EQ(r.state, "Created");
  EXPECT_EQ((*r.status)["observedGeneration"], 2);
}

TEST(PlanJob, TtlDeletesTheFinishedJob) {
  json job = QuickstartObject();
  job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 30;
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  Find(pods, "quickstart-chief-0") = PodWithPhase(Find(pods, "quickstart-chief-0"), "Succeeded", 0);
  Plan done = PlanJob(job, pods, &svc, {}, kNow, {});
  ASSERT_EQ(done.state, "Succeeded");
  EXPECT_EQ(done.requeue_after_seconds.value_or(-1), 30);
  Plan later = PlanJob(WithStatus(job, done), {}, &svc, {}, kNow + 31, {});
  EXPECT_EQ(Names(later, ApiActionKind::kDeleteJob), std::vector<std::string>{"quickstart"});
}

TEST(PlanJob, PodsOfAnotherOwnerAreIgnored) {
  json job = QuickstartObject();
  auto pods = AllPods(job, "Running");
  for (auto& p : pods) p["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  const json svc = json::object();
  Plan p = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_EQ(Names(p, ApiActionKind::kCreatePod).size(), 3u);
}

TEST(PlanJob, InvalidSpecFailsOnceWithAWarning) {
  json job = QuickstartObject();
  job["spec"]["replicaSpecs"]["Worker"]["replicas"] = -1;
  Plan p = PlanJob(job, {}, nullptr, {}, kNow, {});
  EXPECT_TRUE(p.actions.empty());
  EXPECT_EQ(p.state, "Failed");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "InvalidSpec");
  Plan again = PlanJob(WithStatus(job, p), {}, nullptr, {}, kNow, {});
  EXPECT_FALSE(again.status.has_value());
  EXPECT_TRUE(again.events.empty());
}

// A pod whose container ended with `code`, `message` and finishedAt `at`.
json Terminated(const json& pod, int code, const std::string& message, const std::string& at,
                bool last_state = false) {
  json p = PodWithPhase(pod, last_state ? "Running" : "Failed");
  json term = {{"exitCode", code}, {"reason", "Error"}, {"finishedAt", at}};
  if (!message.empty()) term["message"] = message;
  json cs = {{"name", "trainer"}, {"restartCount", last_state ? 1 : 0}};
  if (last_state) {
    cs["state"] = {{"running", {{"startedAt", at}}}};
    cs["lastState"] = {{"terminated", term}};
  } else {
    cs["state"] = {{"terminated", term}};
  }
  p["status"]["containerStatuses"] = json::array({cs});
  return p;
}

std::string ConditionMessage(const Plan& p, const std::string& type) {
  for (const auto& c : (*p.status)["conditions"]) {
    if (c["type"] == type) return c["message"];
  }
  return "<absent>";
}

std::vector<std::string> EventMessages(const Plan& p, const std::string& reason) {
  std::vector<std::string> out;
  for (const auto& e : p.events) {
    if (e.reason == reason) out.push_back(e.message);
  }
  return out;
}

TEST(PlanJob, FailedConditionAndEventCarryTheEarliestTerminationMessage) {
  json job = QuickstartObject();
  job["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "Never";
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  const std::string verdict =
      "DeadlineExceeded: all-reduce collective #3 (pack 0 of 1) timed out after 5 s: /job:worker/task:1 "
      "never "
      "entered it";
  Find(pods, "quickstart-worker-0") =
      Terminated(Find(pods, "quickstart-worker-0"), 1, verdict + "\n", "2027-01-15T08:00:02Z");
  Find(pods, "quickstart-worker-1") = Terminated(Find(pods, "quickstart-worker-1"), 137, "",
                                                 "2027-01-15T08:00:00Z");  // no word from the culprit
  Plan p = PlanJob(job, pods, &svc, {}, kNow, {});
  ASSERT_EQ(p.state, "Failed");
  const std::string want = "worker-0 failed (exit code 1): " + verdict;
  EXPECT_EQ(ConditionMessage(p, "Failed"), "Worker 0 exited with code 1 (restartPolicy Never); " + want);
  EXPECT_EQ(EventMessages(p, "TerminationMessage"), std::vector<std::string>{want});

  // A later reconcile of the failed job says nothing again.
  Plan again = PlanJob(WithStatus(job, p), pods, &svc, {}, kNow + 1, {});
  EXPECT_TRUE(EventMessages(again, "TerminationMessage").empty());

  // The earliest of several messages.
  Find(pods, "quickstart-worker-1") =
      Terminated(Find(pods, "quickstart-worker-1"), 2, "worker 1's own words", "2027-01-15T08:00:01Z");
  Plan earliest = PlanJob(job, pods, &svc, {}, kNow, {});
  EXPECT_EQ(EventMessages(earliest, "TerminationMessage"),
            std::vector<std::string>{"worker-1 failed (exit code 2): worker 1's own words"});
}

TEST(PlanJob, RestartingConditionCarriesTheRestartedReplicasMessage) {
  json job = QuickstartObject();
  job["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode";
  job["spec"]["runPolicy"]["backoffLimit"] = 5;
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  // The chief restarted in place long ago (OnFailure): not the reason for this restart.
  Find(pods, "quickstart-chief-0") =
      Terminated(Find(pods, "quickstart-chief-0"), 1, "old news", "2027-01-15T07:00:00Z", true);
  Find(pods, "quickstart-worker-1") = Terminated(Find(pods, "quickstart-worker-1"), 137,
                                                 "Aborted: the leader went away", "2027-01-15T08:00:00Z");
  Plan p = PlanJob(job, pods, &svc, {}, kNow, {});
  ASSERT_EQ(p.state, "Restarting");
  const std::string want = "worker-1 failed (exit code 137): Aborted: the leader went away";
  EXPECT_EQ(ConditionMessage(p, "Restarting"), "restarting Worker 1; " + want);
  EXPECT_EQ(EventMessages(p, "TerminationMessage"), std::vector<std::string>{want});
}

TEST(PlanJob, NoTerminationMessageNoVerdict) {
  json job = QuickstartObject();
  job["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "Never";
  const json svc = json::object();
  auto pods = AllPods(job, "Running");
  Find(pods, "quickstart-worker-1") = PodWithPhase(Find(pods, "quickstart-worker-1"), "Failed", 1);
  Plan p = PlanJob(job, pods, &svc, {}, kNow, {});
  ASSERT_EQ(p.state, "Failed");
  EXPECT_EQ(ConditionMessage(p, "Failed"), "Worker 1 exited with code 1 (restartPolicy Never)");
  EXPECT_TRUE(EventMessages(p, "TerminationMessage").empty());
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
