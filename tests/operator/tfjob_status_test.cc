// A TFJob's status read back (TfJobStatusFromJson): training-operator's
// reasons map to the state machine's, so a status it wrote (or we wrote)
// drives the same decisions; what is not ours is skipped.
#include "tfjob_status.h"

#include <gtest/gtest.h>

#include "time_util.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

TEST(TfJobStatus, ReadsTrainingOperatorsStatus) {
  // As training-operator v1.9 writes it for a running TFJob.
  const json in = json::parse(R"({
    "conditions": [
      {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "TFJob m is created.",
       "lastUpdateTime": "2026-01-02T03:04:05Z", "lastTransitionTime": "2026-01-02T03:04:05Z"},
      {"type": "Running", "status": "True", "reason": "TFJobRunning", "message": "TFJob ns/m is running.",
       "lastUpdateTime": "2026-01-02T03:04:09Z", "lastTransitionTime": "2026-01-02T03:04:09Z"},
      {"type": "Bogus", "status": "True"}, "not a condition"],
    "replicaStatuses": {"Worker": {"active": 2}},
    "startTime": "2026-01-02T03:04:05Z",
    "restartCount": 3,
    "replacements": {"worker-1": "2026-01-02T03:05:00Z", "nonsense": "x"}})");
  const JobStatus s = TfJobStatusFromJson(in);
  ASSERT_EQ(s.conditions.size(), 2u) << "unknown types and malformed entries are skipped";
  EXPECT_EQ(s.conditions[0].reason, "JobCreated");
  EXPECT_EQ(s.conditions[1].reason, "JobRunning") << "so the state machine does not set Running again";
  EXPECT_TRUE(s.Is(ConditionType::kRunning));
  EXPECT_EQ(s.start_time, ParseRfc3339("2026-01-02T03:04:05Z"));
  EXPECT_EQ(s.restart_count, 3);
  ASSERT_EQ(s.replacements.size(), 1u);
  EXPECT_EQ(s.replacements.begin()->first, (ReplicaKey{ReplicaType::kWorker, 1}));
  EXPECT_TRUE(TfJobStatusFromJson(json("text")).conditions.empty());
}

TEST(TfJobStatus, MapsReasonsBothWays) {
  EXPECT_EQ(TfJobReason(ConditionType::kRunning, "JobRunning"), "TFJobRunning");
  EXPECT_EQ(TfJobReason(ConditionType::kFailed, "BackoffLimitExceeded"), "TFJobFailed");
  EXPECT_EQ(TfJobReason(ConditionType::kFailed, "DeadlineExceeded"), "TFJobFailed");
  EXPECT_EQ(TfJobReason(ConditionType::kFailed, "InvalidSpec"), "TFJobFailedValidation");
  EXPECT_EQ(TfJobReason(ConditionType::kSuspended, "JobResumed"), "TFJobResumed");
  EXPECT_EQ(TfJobReason(ConditionType::kRunning, "RunningShrunk"), "RunningShrunk") << "ours, kept";
  EXPECT_EQ(TfJobReason(ConditionType::kFailed, "TFJobFailed"), "TFJobFailed") << "already Kubeflow's";
}

TEST(TfJobStatus, MetricsReadTheStateFromTheConditions) {
  const json running = {{"conditions", json::array({{{"type", "Created"}, {"status", "True"}},
                                                    {{"type", "Running"}, {"status", "True"}}})}};
  EXPECT_EQ(TfJobMetricsStatus(running), (json{{"state", "Running"}}));
  json done = running;
  done["conditions"][1]["status"] = "False";
  done["conditions"].push_back({{"type", "Succeeded"}, {"status", "True"}});
  EXPECT_EQ(TfJobMetricsStatus(done)["state"], "Succeeded");
  EXPECT_TRUE(TfJobMetricsStatus(json()).is_null()) << "no status yet";
}

TEST(TfJobStatus, ChangedIgnoresOnlyTheReconcileTime) {
  const json a = {{"startTime", "t"}, {"lastReconcileTime", "1"}};
  EXPECT_FALSE(TfJobStatusChanged(a, {{"startTime", "t"}, {"lastReconcileTime", "2"}}));
  EXPECT_TRUE(TfJobStatusChanged(a, {{"startTime", "u"}, {"lastReconcileTime", "1"}}));
  EXPECT_TRUE(TfJobStatusChanged(json(), a)) << "no status yet";
  EXPECT_FALSE(TfJobStatusChanged(a, {{"startTime", "t"}, {"restartCount", 2}}))
      << "a CRD that prunes restartCount must not make every look write the status";
}

TEST(TfJobStatus, TheStateAnnotationKeepsWhatAPrunedStatusLoses) {
  JobStatus s;
  EXPECT_EQ(TfJobStateAnnotation(s), "") << "nothing to keep";
  s.restart_count = 2;
  s.replacements[{ReplicaType::kWorker, 1}] = *ParseRfc3339("2026-01-02T03:04:05Z");
  const std::string kept = TfJobStateAnnotation(s);
  const json job = {{"metadata", {{"annotations", {{kTfJobStateAnnotation, kept}}}}}};
  JobStatus pruned;
  MergeTfJobStateAnnotation(job, pruned);
  EXPECT_EQ(pruned.restart_count, 2);
  EXPECT_EQ(pruned.replacements, s.replacements);
  JobStatus ahead;
  ahead.restart_count = 3;
  MergeTfJobStateAnnotation(job, ahead);
  EXPECT_EQ(ahead.restart_count, 3) << "a status ahead of the annotation (its patch failed) wins";
  JobStatus bad;
  MergeTfJobStateAnnotation({{"metadata", {{"annotations", {{kTfJobStateAnnotation, "{not json"}}}}}}, bad);
  EXPECT_EQ(bad.restart_count, 0);
}

}  // namespace
}  // namespace ringmaster::op
