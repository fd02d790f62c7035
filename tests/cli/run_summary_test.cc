// The closing lines of `ringmaster run` (run_summary.h): the verdict, the
// replicas, the recoveries in place and the culprit.
#include "run_summary.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace ringmaster::cli {
namespace {

Condition Cond(ConditionType type, bool status, std::string reason, std::string message) {
  Condition c;
  c.type = type;
  c.status = status;
  c.reason = std::move(reason);
  c.message = std::move(message);
  return c;
}

std::string Write(const RunFacts& f) {
  std::ostringstream out;
  WriteRunSummary(f, out);
  return out.str();
}

TEST(WriteRunSummary, ASucceededRunNamesItsEndAndEveryReplica) {
  JobStatus status;
  status.restart_count = 1;
  status.conditions = {Cond(ConditionType::kSucceeded, true, "JobSucceeded", "DistributedJob d succeeded")};
  RunFacts f;
  f.job = "d";
  f.kind = "TFJob";
  f.status = &status;
  f.seconds = 3.04;
  f.replicas = {{"chief-0", 1, 0, false, "", 10}, {"worker-0", 2, 0, true, "", 12}};
  EXPECT_EQ(Write(f),
            "[ringmaster] job d: Succeeded (JobSucceeded: TFJob d succeeded) after 3.0s, 1 restarts\n"
            "[ringmaster]   chief-0: started 1x, last exit code 0\n"
            "[ringmaster]   worker-0: started 2x, last exit code 0 (stopped by ringmaster)\n");
}

TEST(WriteRunSummary, AFailedRunNamesTheReplicaThatSaidWhyFirst) {
  JobStatus status;
  status.conditions = {Cond(ConditionType::kFailed, true, "ReplicaFailed", "Worker 1 exited with code 1")};
  RunFacts f;
  f.job = "d";
  f.kind = "DistributedJob";
  f.status = &status;
  f.replicas = {{"chief-0", 1, 1, false, "aborted by worker-1:\n  timed out", 30},
                {"worker-1", 1, 1, false, "worker-1: collective 7 timed out", 20},
                {"worker-2", 1, 137, false, "", 10}};
  const std::string text = Write(f);
  EXPECT_NE(text.find("[ringmaster] job d: Failed (ReplicaFailed: Worker 1 exited with code 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[ringmaster] verdict: worker-1: worker-1: collective 7 timed out\n"),
            std::string::npos)
      << text;
  // Nobody said why: the job's own reason.
  for (auto& r : f.replicas) r.message.clear();
  EXPECT_NE(Write(f).find("[ringmaster] verdict: ReplicaFailed: Worker 1 exited with code 1\n"),
            std::string::npos);
}

TEST(WriteRunSummary, AnInterruptedRunSaysSo) {
  JobStatus status;
  RunFacts f;
  f.job = "d";
  f.status = &status;
  f.interrupted = true;
  EXPECT_EQ(Write(f).rfind("[ringmaster] job d: Interrupted after 0.0s, 0 restarts\n", 0), 0u) << Write(f);
}

TEST(RecoveryTally, CountsRecoveriesTheSmallestGroupAndWhoWasNotBack) {
  RecoveryTally t;
  LocalStep step;
  step.recoveries_begun = {{ReplicaType::kWorker, 1}};
  step.status.workers_active = 1;
  step.status.conditions = {Cond(ConditionType::kRunning, true, "RunningShrunk", "")};
  step.status.replacements = {{{ReplicaType::kWorker, 1}, 100}};
  t.Note(step);
  step = LocalStep();
  step.recoveries_ended = {{{ReplicaType::kWorker, 1}, 2}};
  step.status.workers_active = 2;
  t.Note(step);
  step = LocalStep();
  step.recoveries_begun = {{ReplicaType::kWorker, 0}};
  step.status.replacements = {{{ReplicaType::kWorker, 0}, 200}};
  t.Note(step);
  EXPECT_EQ(t.begun, 2);
  EXPECT_EQ(t.recovered, std::vector<std::string>{"worker-1 back after 2s"});
  EXPECT_EQ(t.fewest_workers, 1);
  EXPECT_EQ(t.not_back, std::vector<std::string>{"worker-0"});
  step.finished = true;
  step.status.replacements.clear();
  step.recoveries_begun.clear();
  t.Note(step);
  EXPECT_EQ(t.not_back, std::vector<std::string>{"worker-0"}) << "the last step before the end counts";

  JobStatus status;
  status.workers_wanted = 2;
  RunFacts f;
  f.job = "d";
  f.status = &status;
  f.recoveries = t;
  t.resumed_after = 41;
  f.recoveries = t;
  const std::string text = Write(f);
  EXPECT_NE(
      text.find(
          "[ringmaster]   recoveries in place: 2 (worker-1 back after 2s); the group last resumed after "
          "step 41\n[ringmaster]   ran shrunk: down to 1 of 2 workers\n[ringmaster]   not back when "
          "the run ended: worker-0\n"),
      std::string::npos)
      << text;
}

TEST(OfKind, ATFJobsRunNamesItsKind) {
  EXPECT_EQ(OfKind("DistributedJob d failed; DistributedJob d again", "d", "TFJob"),
            "TFJob d failed; TFJob d again");
  EXPECT_EQ(OfKind("DistributedJob d failed", "d", "DistributedJob"), "DistributedJob d failed");
}

}  // namespace
}  // namespace ringmaster::cli
