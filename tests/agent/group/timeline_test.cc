// The timeline (Communicator::StartTimeline): a Chrome trace of every
// collective a member runs, its process sets' on a row of their own; the
// file is one valid JSON array once stopped, and a bad path names itself.
#include "group/timeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "group_util.h"

namespace ringmaster {
namespace {

using testing::FormGroup;
using testing::Group;
using testing::LocalSettings;
using testing::OnAll;

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());  // throws (fails the test) unless it is one JSON document
}

TEST(Timeline, EveryCollectiveWhileOnIsOneTraceEventPerPack) {
  const int n = 2;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  const std::string dir = ::testing::TempDir();
  std::vector<std::string> paths(n);
  std::vector<std::string> failures(n);
  std::vector<std::unique_ptr<Communicator>> sets(n);
  OnAll(n, [&](int r) {
    auto set = g[r]->AddProcessSet(1, std::vector<int>{0, 1});
    if (!set.ok()) return void(failures[r] = set.status().ToString());
    sets[r] = std::move(*set);
    // Not recorded: before the start.
    float before = 1;
    Tensor tb{&before, 1, DataType::kFloat32};
    (void)g[r]->AllReduce({&tb, 1}, ReduceOp::kSum);
    paths[r] = dir + "/timeline-" + std::to_string(::getpid()) + "-" + std::to_string(r) + ".json";
    if (Status s = g[r]->StartTimeline(paths[r]); !s.ok()) return void(failures[r] = s.ToString());
    // Two packs (bytes_per_pack), a broadcast, and a process set's all-reduce.
    std::vector<float> a(1000, 1.f), b(1000, 2.f);
    Tensor ts[2] = {{a.data(), 1000, DataType::kFloat32}, {b.data(), 1000, DataType::kFloat32}};
    CommunicationOptions o;
    o.bytes_per_pack = 1;  // a pack per tensor
    if (Status s = g[r]->AllReduce(ts, ReduceOp::kSum, o); !s.ok()) return void(failures[r] = s.ToString());
    int64_t x = r;
    Tensor tx{&x, 1, DataType::kInt64};
    if (Status s = g[r]->Broadcast({&tx, 1}, 1); !s.ok()) return void(failures[r] = s.ToString());
    double d = 1;
    Tensor td{&d, 1, DataType::kFloat64};
    if (Status s = sets[r]->AllReduce({&td, 1}, ReduceOp::kSum); !s.ok())
      return void(failures[r] = s.ToString());
    if (Status s = sets[r]->StopTimeline(); !s.ok()) return void(failures[r] = s.ToString());  // the group's
    // Not recorded: after the stop.
    (void)g[r]->AllReduce({&tb, 1}, ReduceOp::kSum);
  });
  for (int r = 0; r < n; ++r) ASSERT_EQ(failures[r], "") << r;
  for (int r = 0; r < n; ++r) {
    nlohmann::json j = ReadJson(paths[r]);
    ASSERT_TRUE(j.is_array());
    std::vector<std::string> names;
    std::vector<int> rows;
    for (const auto& e : j) {
      if (e["ph"] == "M") {
        if (e["name"] == "process_name") {
          EXPECT_EQ(e["args"]["name"], g[r]->TaskName(r));
        }
        continue;
      }
      EXPECT_EQ(e["ph"], "X");
      EXPECT_EQ(e["pid"], r);
      EXPECT_GT(e["ts"].get<int64_t>(), 0);
      EXPECT_GE(e["dur"].get<int64_t>(), 0);
      EXPECT_EQ(e["args"]["outcome"], "ok");
      names.push_back(e["name"]);
      rows.push_back(e["tid"]);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"all-reduce", "all-reduce", "broadcast", "all-reduce"}))
        << j.dump();
    EXPECT_EQ(rows, (std::vector<int>{0, 0, 0, 1}));
    ::unlink(paths[r].c_str());
  }
}

TEST(Timeline, ABadPathIsInvalidArgumentNamingIt) {
  auto t = internal::Timeline::Open("/nonexistent-dir/t.json", 0, "/job:chief/task:0");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("/nonexistent-dir/t.json"), std::string::npos) << t.status().ToString();
}

TEST(Timeline, EventCarriesWhatTheRecorderKnows) {
  internal::FlightEntry e;
  e.seq = 7;
  e.info.kind = internal::OpKind::kAllReduce;
  e.info.pack = 1;
  e.info.packs = 3;
  e.info.dtype = DataType::kBFloat16;
  e.info.bytes = 4096;
  e.info.algorithm = "ring";
  e.progress = internal::Progress::kFailed;
  e.outcome = StatusCode::kDeadlineExceeded;
  e.start_unix_us = 1000;
  e.end_unix_us = 1750;
  auto j = nlohmann::json::parse(internal::TimelineEventJson(e, 2, 1));
  EXPECT_EQ(j["name"], "all-reduce");
  EXPECT_EQ(j["ts"], 1000);
  EXPECT_EQ(j["dur"], 750);
  EXPECT_EQ(j["pid"], 2);
  EXPECT_EQ(j["tid"], 1);
  EXPECT_EQ(j["args"]["dtype"], "bfloat16");
  EXPECT_EQ(j["args"]["outcome"], std::string(StatusCodeName(StatusCode::kDeadlineExceeded)));
  EXPECT_EQ(j["args"]["pack"], 1);
}

}  // namespace
}  // namespace ringmaster
