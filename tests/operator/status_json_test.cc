#include "status_json.h"

#include <gtest/gtest.h>

#include "time_util.h"

namespace ringmaster::op {
namespace {

TEST(TimeUtil, RoundTripsRfc3339) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(ParseRfc3339("2026-11-22T05:19:37Z").value(), 1795324777);
  EXPECT_EQ(ParseRfc3339("2026-11-22T05:19:37.123456Z").value(), 1795324777);
  EXPECT_EQ(ParseRfc3339("2026-11-22T06:19:37+01:00").value(), 1795324777);
  EXPECT_FALSE(ParseRfc3339("yesterday").has_value());
  EXPECT_EQ(FormatRfc3339(*ParseRfc3339("2030-02-03T04:05:06Z")), "2030-02-03T04:05:06Z");
}

TEST(StatusJson, RoundTrips) {
  JobStatus s;
  s.conditions.push_back({ConditionType::kCreated, true, "JobCreated", "created", 1000});
  s.conditions.push_back({ConditionType::kRunning, false, "JobRestarting", "restarting worker 1", 2000});
  s.conditions.push_back({ConditionType::kRestarting, true, "JobRestarting", "restarting worker 1", 2000});
  s.replica_statuses[ReplicaType::kChief] = {1, 0, 0};
  s.replica_statuses[ReplicaType::kWorker] = {3, 1, 2};
  s.start_time = 999;
  s.restart_count = 4;
  s.workers_wanted = 3;
  s.workers_active = 2;
  s.replacements[{ReplicaType::kWorker, 1}] = 1500;
  nlohmann::json j = StatusToJson(s, 7);
  EXPECT_EQ(j["workers"], "2/3");
  EXPECT_EQ(j["replacements"]["worker-1"], FormatRfc3339(1500));
  EXPECT_EQ(j["observedGeneration"], 7);
  EXPECT_EQ(j["state"], "Restarting");
  EXPECT_EQ(j["conditions"][1]["status"], "False");
  EXPECT_EQ(j["replicaStatuses"]["Worker"]["failed"], 2);
  EXPECT_FALSE(j.contains("completionTime"));
  EXPECT_EQ(StatusFromJson(j), s);
}

TEST(StatusJson, ToleratesGarbage) {
  nlohmann::json j = {
      {"conditions", {{{"type", "Bogus"}}, 5, {{"type", "Failed"}, {"status", "True"}}}},
      {"replicaStatuses", {{"Nope", {{"active", 1}}}}},
      {"startTime", "not a time"},
      {"replacements",
       {{"worker-x", "2026-11-22T05:19:37Z"}, {"worker-1", "never"}, {"nope-1", "2026-11-22T05:19:37Z"}}}};
  JobStatus s = StatusFromJson(j);
  ASSERT_EQ(s.conditions.size(), 1u);
  EXPECT_TRUE(s.Is(ConditionType::kFailed));
  EXPECT_TRUE(s.replica_statuses.empty());
  EXPECT_FALSE(s.start_time.has_value());
  EXPECT_TRUE(s.replacements.empty());
  EXPECT_EQ(StateOf(s), "Failed");
}

}  // namespace
}  // namespace ringmaster::op
