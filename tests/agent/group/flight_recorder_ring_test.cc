// The flight recorder (group/flight_recorder_ring.h) without sockets or wall
// clock: the ring keeps the last K and answers where a member stands, the
// JSON dump, ranks heard from past 64, the variable-size kinds named.
#include "group/flight_recorder_ring.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "group/failure_messages.h"
#include "local_transport.h"

namespace ringmaster::internal {
namespace {

TEST(FlightRecorder, NewKindsAreNamedAndAllToAllSizesMayDiffer) {
  EXPECT_STREQ(OpKindName(OpKind::kAllToAll), "all-to-all");
  EXPECT_STREQ(OpKindName(OpKind::kReduceScatter), "reduce-scatter");
  OpInfo mine;
  mine.kind = OpKind::kAllToAll;
  mine.dtype = DataType::kUInt8;
  mine.bytes = 10;
  std::vector<ProgressReport> reports(2);
  reports[1].progress = Progress::kRunning;
  reports[1].info = mine;
  reports[1].info.bytes = 99;  // each member sends what it has
  EXPECT_TRUE(DescribeMismatch(7, 0, mine, {"a", "b"}, reports).ok());
  reports[1].info.dtype = DataType::kInt16;
  Status s = DescribeMismatch(7, 0, mine, {"a", "b"}, reports);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("all-to-all, 10 bytes of uint8"), std::string::npos) << s.message();
  mine.kind = reports[1].info.kind = OpKind::kReduceScatter;
  reports[1].info.dtype = DataType::kUInt8;
  EXPECT_FALSE(DescribeMismatch(7, 0, mine, {"a", "b"}, reports).ok()) << "reduce-scatter sizes must agree";
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
