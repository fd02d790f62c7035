// The engine's decisions without sockets or wall clock: the wording of
// failures and the flight recorder. The group's state machine is tested by
// transcripts (group_state_transcript_test, testdata/group_state).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "clock.h"
#include "group/failure_messages.h"
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

TEST(FlightRecorder, RingKeepsTheLastKAndAnswersWhereAMemberStands) {
  FlightRecorder rec(4);
  OpInfo info;
  info.bytes = 8;
  for (uint64_t s = 1; s <= 6; ++s) {
    rec.Queued(s, info);
    rec.Started(s);
    if (s < 6) rec.Finished(s, StatusCode::kOk, 0b110);
  }
  auto snap = rec.Snapshot();
  ASSERT_EQ(snap.size(), 4u);
  EXPECT_EQ(snap.front().seq, 3u);
  EXPECT_EQ(snap.back().seq, 6u);
  EXPECT_EQ(snap.back().progress, Progress::kRunning);
  EXPECT_EQ(rec.Report(6).progress, Progress::kRunning);
  EXPECT_EQ(rec.Report(6).last_finished, 5u);
  EXPECT_EQ(rec.Report(7).progress, Progress::kNeverEntered);
  EXPECT_EQ(rec.Report(1).progress, Progress::kFinished) << "overwritten, so long finished";
  rec.Finished(6, StatusCode::kDeadlineExceeded, 0);
  EXPECT_EQ(rec.Report(6).progress, Progress::kFailed);
  EXPECT_EQ(rec.Report(6).last_finished, 5u);
  rec.Reset();
  EXPECT_TRUE(rec.Snapshot().empty());
  EXPECT_EQ(rec.Report(1).progress, Progress::kNeverEntered);
}

TEST(FlightRecorder, DumpIsOneJsonLineWithTheLastEntries) {
  FlightRecorder rec(8);
  OpInfo info;
  info.bytes = 4096;
  info.algorithm = "ring";
  for (uint64_t s = 1; s <= 5; ++s) {
    rec.Queued(s, info);
    rec.Started(s);
    rec.Finished(s, s == 5 ? StatusCode::kDeadlineExceeded : StatusCode::kOk, 0b101);
  }
  std::string line =
      FlightDumpJson("/job:worker/task:0", 1, 3, DeadlineExceededError("late"), rec.Snapshot(), 3);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["ringmaster_flight_recorder"], 1);
  EXPECT_EQ(j["task"], "/job:worker/task:0");
  EXPECT_EQ(j["cause"]["code"], "DeadlineExceeded");
  ASSERT_EQ(j["entries"].size(), 3u);
  EXPECT_EQ(j["entries"][0]["seq"], 3);
  EXPECT_EQ(j["entries"][2]["outcome"], "DeadlineExceeded");
  EXPECT_EQ(j["entries"][1]["outcome"], "ok");
  EXPECT_EQ(j["entries"][1]["heard_from"], nlohmann::json::array({0, 2}));
  EXPECT_EQ(j["entries"][1]["algorithm"], "ring");
  EXPECT_EQ(j["entries"][1]["bytes"], 4096);
}

// No 64-rank limit: any rank is kept up to kKept of them, then counted.
TEST(FlightRecorder, HeardFromKeepsRanksPast64AndCountsTheRest) {
  HeardRanks h;
  for (int r : {4095, 100, 3000, 7}) h.Add(r);
  EXPECT_EQ(h.count, 4u);
  EXPECT_TRUE(h.Holds(4095));
  EXPECT_TRUE(h.Holds(100));
  EXPECT_FALSE(h.Holds(64));
  FlightRecorder rec(2);
  rec.Queued(1, OpInfo{});
  rec.Started(1);
  rec.Finished(1, StatusCode::kOk, h);
  HeardRanks all;  // an all-to-all of 4,096: every peer but ourselves (rank 5)
  for (int r = 4095; r >= 0; --r)
    if (r != 5) all.Add(r);
  EXPECT_EQ(all.count, 4095u);
  EXPECT_EQ(all.kept(), HeardRanks::kKept);
  EXPECT_EQ(all.lowest[0], 0);
  EXPECT_EQ(all.lowest[5], 6);
  EXPECT_EQ(all.lowest[HeardRanks::kKept - 1], HeardRanks::kKept);
  rec.Queued(2, OpInfo{});
  rec.Started(2);
  rec.Finished(2, StatusCode::kOk, all);
  auto j =
      nlohmann::json::parse(FlightDumpJson("/job:worker/task:5", 5, 4096, OkStatus(), rec.Snapshot(), 2));
  EXPECT_EQ(j["entries"][0]["heard_from"], nlohmann::json::array({7, 100, 3000, 4095}));
  EXPECT_FALSE(j["entries"][0].contains("heard_from_more"));
  EXPECT_EQ(j["entries"][1]["heard_from"].size(), static_cast<size_t>(HeardRanks::kKept));
  EXPECT_EQ(j["entries"][1]["heard_from_more"], 4095 - HeardRanks::kKept);
  EXPECT_EQ(HeardRanks::FromMask(0b101).count, 2u);
  EXPECT_EQ(HeardRanks::FromMask(uint64_t{1} << 63).lowest[0], 63);
}

}  // namespace
}  // namespace ringmaster::internal
