#include "ringmaster/job_state.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ringmaster {
namespace {

constexpr int64_t kT0 = 1'700'000'000;

DistributedJob MakeJob(int chiefs, int workers, RestartPolicy policy = RestartPolicy::kNever) {
  DistributedJob job;
  job.name = "j";
  if (chiefs) job.replica_specs[ReplicaType::kChief] = {chiefs, policy, {}};
  if (workers) job.replica_specs[ReplicaType::kWorker] = {workers, policy, {}};
  return job;
}

ReplicaObservation Obs(ReplicaType t, int i, ReplicaPhase p, int exit_code = 0) {
  return {{t, i}, p, exit_code, 0, false};
}

std::vector<ReplicaObservation> AllRunning(const DistributedJob& job) {
  std::vector<ReplicaObservation> out;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i) out.push_back(Obs(type, i, ReplicaPhase::kRunning));
  }
  return out;
}

int Count(const Decision& d, ActionKind kind) {
  return static_cast<int>(
      std::count_if(d.actions.begin(), d.actions.end(), [&](const Action& a) { return a.kind == kind; }));
}

void Set(std::vector<ReplicaObservation>& obs, ReplicaType t, int i, ReplicaPhase p, int code = 0) {
  for (auto& o : obs) {
    if (o.key.type == t && o.key.index == i) {
      o.phase = p;
      o.exit_code = code;
    }
  }
}

TEST(Reconcile, FirstStepCreatesEveryReplica) {
  auto job = MakeJob(1, 2);
  Decision d = Reconcile(job, {}, {}, kT0);
  EXPECT_EQ(Count(d, ActionKind::kCreate), 3);
  EXPECT_TRUE(d.status.Is(ConditionType::kCreated));
  EXPECT_FALSE(d.status.Is(ConditionType::kRunning));
  EXPECT_EQ(d.status.start_time, kT0);
  EXPECT_EQ(d.actions[0], (Action{ActionKind::kCreate, {ReplicaType::kChief, 0}}));
}

TEST(Reconcile, RunningOnceAllRunAndStableAfter) {
  auto job = MakeJob(1, 2);
  JobStatus s = Reconcile(job, {}, {}, kT0).status;
  auto obs = AllRunning(job);
  obs[2].phase = ReplicaPhase::kPending;
  Decision d = Reconcile(job, s, obs, kT0 + 1);
  EXPECT_TRUE(d.actions.empty());
  EXPECT_FALSE(d.status.Is(ConditionType::kRunning));
  d = Reconcile(job, d.status, AllRunning(job), kT0 + 2);
  EXPECT_TRUE(d.status.Is(ConditionType::kRunning));
  EXPECT_EQ(d.status.Find(ConditionType::kRunning)->last_transition_time, kT0 + 2);
  EXPECT_EQ(d.status.replica_statuses.at(ReplicaType::kWorker), (ReplicaCounts{2, 0, 0}));
  // Level-triggered: the same observation again changes nothing.
  Decision again = Reconcile(job, d.status, AllRunning(job), kT0 + 10);
  EXPECT_EQ(again.status, d.status);
  EXPECT_TRUE(again.actions.empty());
}

TEST(Reconcile, ChiefSuccessEndsTheJobAndCleansRunningReplicas) {
  auto job = MakeJob(1, 2);
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kSucceeded);
  Decision d = Reconcile(job, {}, obs, kT0);
  EXPECT_FALSE(d.status.Finished()) << "a worker's success does not end a job with a chief";
  Set(obs, ReplicaType::kChief, 0, ReplicaPhase::kSucceeded);
  d = Reconcile(job, d.status, obs, kT0 + 5);
  EXPECT_TRUE(d.status.Is(ConditionType::kSucceeded));
  EXPECT_FALSE(d.status.Is(ConditionType::kRunning));
  EXPECT_EQ(d.status.completion_time, kT0 + 5);
  // cleanPodPolicy Running (the default): only worker 0 is still running.
  ASSERT_EQ(d.actions.size(), 1u);
  EXPECT_EQ(d.actions[0], (Action{ActionKind::kDelete, {ReplicaType::kWorker, 0}}));
}

TEST(Reconcile, CleanPodPolicies) {
  auto job = MakeJob(1, 2);
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kChief, 0, ReplicaPhase::kSucceeded);
  job.run_policy.clean_pod_policy = CleanPodPolicy::kAll;
  EXPECT_EQ(Count(Reconcile(job, {}, obs, kT0), ActionKind::kDelete), 3);
  job.run_policy.clean_pod_policy = CleanPodPolicy::kNone;
  EXPECT_EQ(Count(Reconcile(job, {}, obs, kT0), ActionKind::kDelete), 0);
}

TEST(Reconcile, WithoutChiefWorkerZeroDecides) {
  auto job = MakeJob(0, 2);
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kSucceeded);
  EXPECT_FALSE(Reconcile(job, {}, obs, kT0).status.Finished());
  Set(obs, ReplicaType::kWorker, 0, ReplicaPhase::kSucceeded);
  EXPECT_TRUE(Reconcile(job, {}, obs, kT0).status.Is(ConditionType::kSucceeded));
}

TEST(Reconcile, AllWorkersSuccessPolicy) {
  auto job = MakeJob(1, 2);
  job.success_policy = SuccessPolicy::kAllWorkers;
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kChief, 0, ReplicaPhase::kSucceeded);
  Set(obs, ReplicaType::kWorker, 0, ReplicaPhase::kSucceeded);
  EXPECT_FALSE(Reconcile(job, {}, obs, kT0).status.Finished());
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kSucceeded);
  Decision d = Reconcile(job, {}, obs, kT0);
  EXPECT_TRUE(d.status.Is(ConditionType::kSucceeded));
  EXPECT_NE(d.status.Find(ConditionType::kSucceeded)->message.find("all 2 workers"), std::string::npos);
}

TEST(Reconcile, NeverFailsTheJobOnAnyReplicaFailure) {
  auto job = MakeJob(1, 2, RestartPolicy::kNever);
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kFailed, 1);
  Decision d = Reconcile(job, {}, obs, kT0);
  ASSERT_TRUE(d.status.Is(ConditionType::kFailed));
  const Condition* f = d.status.Find(ConditionType::kFailed);
  EXPECT_EQ(f->reason, "ReplicaFailed");
  EXPECT_EQ(f->message, "Worker 1 exited with code 1 (restartPolicy Never)");
  EXPECT_EQ(Count(d, ActionKind::kRestart), 0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 2);  // the chief and worker 0 are still running
  ASSERT_FALSE(d.events.empty());
  EXPECT_TRUE(d.events.back().warning);
}

TEST(Reconcile, OnFailureRestartsUpToBackoffLimit) {
  auto job = MakeJob(0, 2, RestartPolicy::kOnFailure);
  job.run_policy.backoff_limit = 2;
  JobStatus s;
  for (int restart = 1; restart <= 2; ++restart) {
    auto obs = AllRunning(job);
    Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kFailed, 1);
    Decision d = Reconcile(job, s, obs, kT0 + restart);
    ASSERT_FALSE(d.status.Finished()) << "restart " << restart;
    ASSERT_EQ(d.actions, (std::vector<Action>{{ActionKind::kRestart, {ReplicaType::kWorker, 1}}}));
    EXPECT_EQ(d.status.restart_count, restart);
    EXPECT_TRUE(d.status.Is(ConditionType::kRestarting));
    // The restarted replica runs again: back to Running.
    d = Reconcile(job, d.status, AllRunning(job), kT0 + restart);
    EXPECT_TRUE(d.status.Is(ConditionType::kRunning));
    EXPECT_FALSE(d.status.Is(ConditionType::kRestarting));
    s = d.status;
  }
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kFailed, 1);
  Decision d = Reconcile(job, s, obs, kT0 + 9);
  ASSERT_TRUE(d.status.Is(ConditionType::kFailed));
  EXPECT_EQ(d.status.Find(ConditionType::kFailed)->reason, "BackoffLimitExceeded");
  EXPECT_EQ(d.status.restart_count, 2);
  EXPECT_EQ(Count(d, ActionKind::kRestart), 0);
}

TEST(Reconcile, OnFailureDoesNotRestartSuccess) {
  auto job = MakeJob(1, 2, RestartPolicy::kOnFailure);
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kSucceeded);
  EXPECT_TRUE(Reconcile(job, {}, obs, kT0).actions.empty());
}

TEST(Reconcile, InPlaceRestartsCountAgainstBackoff) {
  auto job = MakeJob(0, 2, RestartPolicy::kOnFailure);
  job.run_policy.backoff_limit = 2;
  auto obs = AllRunning(job);
  obs[0].restarts = 2;
  EXPECT_FALSE(Reconcile(job, {}, obs, kT0).status.Finished());
  obs[1].restarts = 1;
  Decision d = Reconcile(job, {}, obs, kT0);
  ASSERT_TRUE(d.status.Is(ConditionType::kFailed));
  EXPECT_EQ(d.status.Find(ConditionType::kFailed)->reason, "BackoffLimitExceeded");
}

TEST(Reconcile, ExitCodePolicyRetriesOnlySignals) {
  auto job = MakeJob(0, 2, RestartPolicy::kExitCode);
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kFailed, 137);  // SIGKILL, e.g. OOM
  Decision d = Reconcile(job, {}, obs, kT0);
  EXPECT_EQ(d.actions, (std::vector<Action>{{ActionKind::kRestart, {ReplicaType::kWorker, 1}}}));
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kFailed, 3);  // the program's own verdict
  d = Reconcile(job, {}, obs, kT0);
  ASSERT_TRUE(d.status.Is(ConditionType::kFailed));
  EXPECT_NE(d.status.Find(ConditionType::kFailed)->message.find("code 3 (restartPolicy ExitCode)"),
            std::string::npos);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kFailed, 127);
  EXPECT_TRUE(Reconcile(job, {}, obs, kT0).status.Is(ConditionType::kFailed));
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kFailed, 128);
  EXPECT_FALSE(Reconcile(job, {}, obs, kT0).status.Finished());
}

TEST(Reconcile, AlwaysRestartsEvenASuccessThatDoesNotEndTheJob) {
  auto job = MakeJob(1, 2, RestartPolicy::kAlways);
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kSucceeded);
  EXPECT_EQ(Count(Reconcile(job, {}, obs, kT0), ActionKind::kRestart), 1);
  Set(obs, ReplicaType::kChief, 0, ReplicaPhase::kSucceeded);
  EXPECT_TRUE(Reconcile(job, {}, obs, kT0).status.Is(ConditionType::kSucceeded));
}

TEST(Reconcile, ActiveDeadline) {
  auto job = MakeJob(0, 1);
  job.run_policy.active_deadline_seconds = 60;
  Decision d = Reconcile(job, {}, {}, kT0);
  EXPECT_EQ(d.requeue_after_seconds, 60);
  d = Reconcile(job, d.status, AllRunning(job), kT0 + 59);
  EXPECT_FALSE(d.status.Finished());
  EXPECT_EQ(d.requeue_after_seconds, 1);
  d = Reconcile(job, d.status, AllRunning(job), kT0 + 60);
  ASSERT_TRUE(d.status.Is(ConditionType::kFailed));
  EXPECT_EQ(d.status.Find(ConditionType::kFailed)->reason, "DeadlineExceeded");
  EXPECT_EQ(Count(d, ActionKind::kDelete), 1);
}

TEST(Reconcile, TtlAfterFinished) {
  auto job = MakeJob(0, 1);
  job.run_policy.ttl_seconds_after_finished = 30;
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 0, ReplicaPhase::kSucceeded);
  Decision d = Reconcile(job, {}, obs, kT0);
  ASSERT_TRUE(d.status.Finished());
  EXPECT_EQ(d.requeue_after_seconds, 30);
  EXPECT_EQ(Count(d, ActionKind::kDeleteJob), 0);
  d = Reconcile(job, d.status, obs, kT0 + 30);
  EXPECT_EQ(Count(d, ActionKind::kDeleteJob), 1);
  // A finished job stays finished whatever is observed later.
  EXPECT_TRUE(Reconcile(job, d.status, {}, kT0 + 31).status.Is(ConditionType::kSucceeded));
  EXPECT_EQ(Count(Reconcile(job, d.status, {}, kT0 + 31), ActionKind::kCreate), 0);
}

TEST(Reconcile, SuspendAndResume) {
  auto job = MakeJob(1, 1);
  JobStatus s = Reconcile(job, {}, AllRunning(job), kT0).status;
  ASSERT_TRUE(s.Is(ConditionType::kRunning));
  job.run_policy.suspend = true;
  Decision d = Reconcile(job, s, AllRunning(job), kT0 + 10);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 2);
  EXPECT_TRUE(d.status.Is(ConditionType::kSuspended));
  EXPECT_FALSE(d.status.Is(ConditionType::kRunning));
  EXPECT_FALSE(d.status.start_time.has_value());
  d = Reconcile(job, d.status, {}, kT0 + 20);
  EXPECT_TRUE(d.actions.empty()) << "nothing is created while suspended";
  job.run_policy.suspend = false;
  d = Reconcile(job, d.status, {}, kT0 + 30);
  EXPECT_EQ(Count(d, ActionKind::kCreate), 2);
  EXPECT_FALSE(d.status.Is(ConditionType::kSuspended));
  EXPECT_EQ(d.status.start_time, kT0 + 30);
}

TEST(Reconcile, ScaledDownReplicasAreDeleted) {
  auto job = MakeJob(0, 3);
  auto obs = AllRunning(job);
  job.replica_specs[ReplicaType::kWorker].replicas = 2;
  Decision d = Reconcile(job, {}, obs, kT0);
  EXPECT_EQ(d.actions, (std::vector<Action>{{ActionKind::kDelete, {ReplicaType::kWorker, 2}}}));
}

TEST(Reconcile, DeletingReplicasAreLeftAlone) {
  auto job = MakeJob(0, 2, RestartPolicy::kOnFailure);
  auto obs = AllRunning(job);
  Set(obs, ReplicaType::kWorker, 1, ReplicaPhase::kFailed, 1);
  obs[1].deleting = true;
  Decision d = Reconcile(job, {}, obs, kT0);
  EXPECT_TRUE(d.actions.empty());
  EXPECT_EQ(d.status.restart_count, 0);
}

}  // namespace
}  // namespace ringmaster
