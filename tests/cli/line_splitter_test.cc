// A replica's output cut into bounded lines (line_splitter.h).
#include "line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::cli {
namespace {

std::vector<std::string> Feed(LineSplitter& s, std::string_view bytes) {
  std::vector<std::string> lines;
  s.Feed(bytes, [&](std::string_view line) { lines.emplace_back(line); });
  return lines;
}

TEST(LineSplitter, LinesAcrossReadsAndTheRestAtTheEnd) {
  LineSplitter s;
  EXPECT_EQ(Feed(s, "step 1\nstep"), std::vector<std::string>{"step 1"});
  EXPECT_EQ(Feed(s, " 2\n\nstep 3"), (std::vector<std::string>{"step 2", ""}));
  EXPECT_EQ(s.TakeRest(), "step 3");
  EXPECT_EQ(s.TakeRest(), std::nullopt);
  EXPECT_TRUE(Feed(s, "").empty());
}

TEST(LineSplitter, ALineOverTheBoundGoesOutInPiecesAndMemoryStaysBounded) {
  LineSplitter s(8);
  EXPECT_TRUE(Feed(s, "12345678").empty()) << "at the bound it still waits for its newline";
  EXPECT_EQ(Feed(s, "9"), std::vector<std::string>{"123456789"});
  EXPECT_EQ(s.TakeRest(), std::nullopt);
  EXPECT_EQ(Feed(s, "ab\n0123456789xyz"), (std::vector<std::string>{"ab", "0123456789xyz"}));
  EXPECT_EQ(Feed(s, "tail\n"), std::vector<std::string>{"tail"});
}

}  // namespace
}  // namespace ringmaster::cli
