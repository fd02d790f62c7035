// `ringmaster run`'s pure parts beside the state machine (whose transcripts
// are in tests/api): one step of a local run, and what the runner reads of
// its members' output.
#include "local_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::cli {
namespace {

// The chaos drill's job: a chief and two workers recovering in place.
DistributedJob DrillJob(const std::string& restart_policy, const std::string& recovery) {
  const std::string replica = "      restartPolicy: " + restart_policy +
                              "\n      template: {spec: {containers: [{name: c, command: [w]}]}}\n";
  auto job = LoadSingleJob(
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata: {name: d}\n"
      "spec:\n  runPolicy: {backoffLimit: 10, recovery: " +
          recovery + "}\n  replicaSpecs:\n    Chief:\n      replicas: 1\n" + replica +
          "    Worker:\n      replicas: 2\n" + replica,
      "drill.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : DistributedJob{};
}

ReplicaObservation Seen(ReplicaType type, int index, ReplicaPhase phase, int exit_code = 0) {
  ReplicaObservation o;
  o.key = {type, index};
  o.phase = phase;
  o.exit_code = exit_code;
  return o;
}

// The chief SIGKILLed after its steps were verified, the workers already
// exited 0: the operator replaces no member into a group whose peers are
// done (it could not form again), and neither does the runner: the run ends
// Failed, naming the chief, instead of restarting the chief alone to wait
// for the workers until the job's deadline.
TEST(PlanLocalStep, AMemberFailingAfterItsPeersSucceededIsNotRestartedAlone) {
  const DistributedJob job = DrillJob("OnFailure", "InPlace");
  JobStatus status;
  const int64_t t0 = 1'800'000'000;
  const std::vector<ReplicaObservation> running = {Seen(ReplicaType::kChief, 0, ReplicaPhase::kRunning),
                                                   Seen(ReplicaType::kWorker, 0, ReplicaPhase::kRunning),
                                                   Seen(ReplicaType::kWorker, 1, ReplicaPhase::kRunning)};
  status = PlanLocalStep(job, status, running, t0).status;
  const std::vector<ReplicaObservation> done = {Seen(ReplicaType::kChief, 0, ReplicaPhase::kFailed, 137),
                                                Seen(ReplicaType::kWorker, 0, ReplicaPhase::kSucceeded),
                                                Seen(ReplicaType::kWorker, 1, ReplicaPhase::kSucceeded)};
  const LocalStep step = PlanLocalStep(job, status, done, t0 + 30);
  EXPECT_TRUE(step.commands.empty()) << "restarted " << step.commands.size() << " replica(s)";
  EXPECT_TRUE(step.finished);
  ASSERT_TRUE(step.status.Is(ConditionType::kFailed));
  const Condition* failed = step.status.Find(ConditionType::kFailed);
  EXPECT_EQ(failed->reason, "ReplicaFailed");
  EXPECT_EQ(failed->message,
            "Chief 0 exited with code 137 after every other member succeeded: restarted alone it could not "
            "form its group again (restartPolicy OnFailure)");
  EXPECT_EQ(step.status.restart_count, 0);

  // A peer still running: the chief is replaced, the group forms around it.
  const std::vector<ReplicaObservation> one_left = {Seen(ReplicaType::kChief, 0, ReplicaPhase::kFailed, 137),
                                                    Seen(ReplicaType::kWorker, 0, ReplicaPhase::kSucceeded),
                                                    Seen(ReplicaType::kWorker, 1, ReplicaPhase::kRunning)};
  const LocalStep again = PlanLocalStep(job, status, one_left, t0 + 30);
  EXPECT_EQ(again.commands,
            (std::vector<LocalCommand>{{LocalCommandKind::kRestart, {ReplicaType::kChief, 0}}}));
  EXPECT_FALSE(again.finished);
}

TEST(ResumeStepOf, ReadsTheAgentsAndTheWorkersLines) {
  // The agent's line (every member, whatever the program).
  EXPECT_EQ(ResumeStepOf("ringmaster: /job:chief/task:0: resuming after step 41 from /job:worker/task:0; "
                         "/job:worker/task:1 takes its state"),
            41);
  // ringmaster-worker's own.
  EXPECT_EQ(
      ResumeStepOf("ringmaster-worker /job:worker/task:1: joined a running group: resuming after step 2 "
                   "from rank 0 (35.0 ms, at unix ms 1800000000000)"),
      2);
  EXPECT_EQ(
      ResumeStepOf("ringmaster: /job:chief/task:0: no member holds state: starting from /job:chief/task:0's"),
      std::nullopt);
  EXPECT_EQ(ResumeStepOf("resuming after step x"), std::nullopt);
  EXPECT_EQ(ResumeStepOf("epoch 3 done"), std::nullopt);
}

}  // namespace
}  // namespace ringmaster::cli
