// The wording of a collective's failure (group/failure_messages.h):
// durations in plain units, the timeout and mismatch verdicts naming who.
#include "group/failure_messages.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "clock.h"
#include "group/flight_recorder_ring.h"

namespace ringmaster::internal {
namespace {

const std::vector<std::string> kNames = {"/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"};

TEST(Verdict, DurationsInPlainUnits) {
  EXPECT_EQ(FormatSeconds(15), "15 s");
  EXPECT_EQ(FormatSeconds(1.5), "1.5 s");
  EXPECT_EQ(FormatSeconds(0.2), "200 ms");
  EXPECT_EQ(FormatSeconds(300), "5 min");
  EXPECT_EQ(FormatSeconds(150), "2 min 30 s");
}

TEST(Verdict, TimeoutNamesWhoNeverEnteredAndWhoWaited) {
  OpInfo info;
  info.kind = OpKind::kAllReduce;
  info.pack = 0;
  info.packs = 1;
  info.timeout_s = 5;
  std::vector<ProgressReport> r(3);
  r[0].progress = Progress::kRunning;
  r[1].progress = Progress::kRunning;
  r[2].progress = Progress::kNeverEntered;
  r[2].last_finished = 2;
  EXPECT_EQ(DescribeTimeout(3, info, kNames, r),
            "all-reduce collective #3 (pack 0 of 1) timed out after 5 s: /job:worker/task:1 never entered it "
            "(its last finished collective is #2); /job:chief/task:0 and /job:worker/task:0 waited");
  r[2].progress = Progress::kUnknown;
  r[0].progress = Progress::kQueued;
  r[0].last_started = 2;
  r[0].last_finished = 1;
  EXPECT_EQ(
      DescribeTimeout(3, info, kNames, r),
      "all-reduce collective #3 (pack 0 of 1) timed out after 5 s: /job:chief/task:0 had it queued behind "
      "collective #2, still running; /job:worker/task:1 did not answer (stopped, hung, or its control "
      "connection is stuck); /job:worker/task:0 waited");
}

TEST(Verdict, MismatchNamesBothMembersAndBothShapes) {
  OpInfo mine;
  mine.bytes = 16;
  mine.dtype = DataType::kFloat32;
  std::vector<ProgressReport> r(3);
  r[1].progress = Progress::kRunning;
  r[1].info = mine;
  r[2].progress = Progress::kRunning;
  r[2].info = mine;
  EXPECT_TRUE(DescribeMismatch(4, 1, mine, kNames, r).ok()) << "everyone agrees";
  r[2].info.bytes = 32;
  r[2].info.dtype = DataType::kFloat64;
  Status s = DescribeMismatch(4, 1, mine, kNames, r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      s.message().find("collective #4 differs between members: /job:worker/task:0 has all-reduce pack 0 of "
                       "1, 16 bytes of float32; /job:worker/task:1 has all-reduce pack 0 of 1, 32 bytes of "
                       "float64"),
      std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace ringmaster::internal
