#include "flight_recorder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::cli {
namespace {

// A dump as the agent writes it: entries "seq:outcome[:end]" (end = finished).
std::string Dump(int rank, const std::string& task, const std::vector<std::string>& entries,
                 const std::string& code = "DeadlineExceeded") {
  std::string e;
  for (const auto& spec : entries) {
    const auto colon = spec.find(':');
    const std::string seq = spec.substr(0, colon), outcome = spec.substr(colon + 1);
    const bool done = outcome != "running" && outcome != "queued";
    e += std::string(e.empty() ? "" : ",") + R"({"seq":)" + seq +
         R"(,"kind":"all-reduce","pack":0,"packs":1,"dtype":"float32","bytes":4096,"algorithm":"ring",)"
         R"("heard_from":[0,2],"start_unix_us":1700000000000000,"end_unix_us":)" +
         (done ? "1700000000001000" : "null") + R"(,"outcome":")" + outcome + R"("})";
  }
  return R"({"ringmaster_flight_recorder":1,"task":")" + task + R"(","rank":)" + std::to_string(rank) +
         R"(,"size":3,"pid":)" + std::to_string(1000 + rank) + R"(,"cause":{"code":")" + code +
         R"(","message":"all-reduce collective #3 timed out after 5 s"},"dumped_unix_us":1700000000000000,)"
         R"("entries":[)" +
         e + "]}\n";
}

FlightDump Parse(const std::string& text, const std::string& source = "d.json") {
  auto d = ParseFlightDump(text, source);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? *d : FlightDump{};
}

TEST(FlightRecorder, ParsesADump) {
  FlightDump d = Parse(Dump(1, "/job:worker/task:0", {"2:ok", "3:running"}));
  EXPECT_EQ(d.task, "/job:worker/task:0");
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.size, 3);
  EXPECT_EQ(d.pid, 1001);
  EXPECT_EQ(d.cause_code, "DeadlineExceeded");
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.entries[0].seq, 2);
  EXPECT_EQ(d.entries[0].kind, "all-reduce");
  EXPECT_EQ(d.entries[0].bytes, 4096);
  EXPECT_EQ(d.entries[0].heard_from, (std::vector<int>{0, 2}));
  EXPECT_EQ(d.entries[0].end_unix_us, 1700000000001000);
  EXPECT_EQ(d.entries[1].outcome, "running");
  EXPECT_FALSE(d.entries[1].end_unix_us);
}

TEST(FlightRecorder, BadFilesNameTheFileAndWhatIsWrong) {
  struct Case {
    std::string text, expect;
  };
  std::string good = Dump(0, "/job:chief/task:0", {"1:ok"});
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  for (const Case& c : std::vector<Case>{
           {"{", "bad.json: not JSON: "},
           {"[1]", "bad.json: not a flight-recorder dump"},
           {with("\"ringmaster_flight_recorder\":1", "\"ringmaster_flight_recorder\":2"),
            "bad.json: ringmaster_flight_recorder: format 2 is not known"},
           {with("\"rank\":0", "\"rank\":\"0\""), "bad.json: rank: must be an integer, got \"0\""},
           {with("\"rank\":0", "\"rank\":3"), "bad.json: rank: 3 is not a rank of a group of size 3"},
           {with("\"task\":\"/job:chief/task:0\",", ""), "bad.json: task: missing"},
           {with("\"seq\":1", "\"seq\":1.5"), "bad.json: entries[0].seq: must be an integer, got 1.5"},
           {with("\"end_unix_us\":1700000000001000", "\"end_unix_us\":\"x\""),
            "bad.json: entries[0].end_unix_us: must be an integer or null"},
           {with("\"code\":\"DeadlineExceeded\"", "\"code\":3"), "bad.json: cause.code: must be a string"},
           {good + good, "bad.json: not JSON: "},
       }) {
    auto d = ParseFlightDump(c.text, "bad.json");
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(d.status().message().rfind(c.expect, 0), 0u) << d.status().message();
  }
}

TEST(FlightRecorder, RendersMembersSideBySideAndNamesWhoNeverEntered) {
  std::vector<FlightDump> dumps = {
      Parse(Dump(2, "/job:worker/task:1", {"1:ok", "2:ok"}, "Aborted")),
      Parse(Dump(0, "/job:chief/task:0", {"1:ok", "2:ok", "3:DeadlineExceeded"})),
      Parse(Dump(1, "/job:worker/task:0", {"2:ok", "3:running"})),
  };
  auto out = RenderFlightDumps(dumps, 20);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(
      *out,
      "rank 0 /job:chief/task:0 (pid 1000): DeadlineExceeded: all-reduce collective #3 timed out after 5 s\n"
      "rank 1 /job:worker/task:0 (pid 1001): DeadlineExceeded: all-reduce collective #3 timed out after 5 s\n"
      "rank 2 /job:worker/task:1 (pid 1002): Aborted: all-reduce collective #3 timed out after 5 s\n"
      "seq  collective                      rank 0            rank 1   rank 2\n"
      " #1  all-reduce ring, 4 KiB float32  ok                ?        ok\n"
      " #2  all-reduce ring, 4 KiB float32  ok                ok       ok\n"
      " #3  all-reduce ring, 4 KiB float32  DeadlineExceeded  running  -\n"
      "#3 all-reduce: never entered by rank 2 /job:worker/task:1 (its last finished collective is #2)\n"
      "#3 in progress: rank 1 running, heard from 0, 2\n")
      << *out;

  // --last 1: only the newest; a missing member's dump is named.
  dumps.erase(dumps.begin());  // rank 2's
  out = RenderFlightDumps(dumps, 1);
  ASSERT_TRUE(out.ok());
  EXPECT_NE(out->find(" #3  all-reduce"), std::string::npos) << *out;
  EXPECT_EQ(out->find(" #2  "), std::string::npos) << *out;
  EXPECT_NE(out->find("#3 all-reduce: entered by every member with a dump; no dump from rank 2\n"),
            std::string::npos)
      << *out;
}

// Past the ranks a recorder keeps (an all-to-all at large N), the dump
// says how many more it heard from; a member that heard from no one says so.
TEST(FlightRecorder, InProgressMembersSayWhomTheyHeardFromAndHowManyMore) {
  std::string many = Dump(0, "/job:chief/task:0", {"3:running"});
  many.replace(many.find("\"heard_from\":[0,2]"), 18, "\"heard_from\":[1,2],\"heard_from_more\":4093");
  std::string none = Dump(1, "/job:worker/task:0", {"3:queued"});
  none.replace(none.find("\"heard_from\":[0,2]"), 18, "\"heard_from\":[]");
  FlightDump d = Parse(many);
  ASSERT_EQ(d.entries.size(), 1u);
  EXPECT_EQ(d.entries[0].heard_from_more, 4093);
  auto out = RenderFlightDumps({d, Parse(none)}, 5);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NE(
      out->find("#3 in progress: rank 0 running, heard from 1, 2 and 4093 more; rank 1 queued, heard from "
                "no one\n"),
      std::string::npos)
      << *out;
  std::string bad = many;
  bad.replace(bad.find("4093"), 4, "\"x\"");
  auto refused = ParseFlightDump(bad, "bad.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().rfind("bad.json: entries[0].heard_from_more: must be an integer", 0),
            0u)
      << refused.status().message();
}

TEST(FlightRecorder, RefusesDumpsOfDifferentGroups) {
  FlightDump a = Parse(Dump(0, "/job:chief/task:0", {"1:ok"}), "a.json");
  FlightDump b = Parse(Dump(0, "/job:chief/task:0", {"1:ok"}), "b.json");
  auto out = RenderFlightDumps({a, b}, 20);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "a.json and b.json are both rank 0");
  b.rank = 1;
  b.size = 4;
  out = RenderFlightDumps({a, b}, 20);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("not the same group"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::cli
