#include "ringmaster/verdict.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster {
namespace {

TEST(ChooseVerdict, EarliestFailedExitWithAMessage) {
  std::vector<ReplicaExit> exits = {
      {"chief-0", 0, "all done", 5},  // succeeded: never the verdict
      {"worker-0", 1, "waited for worker-1", 30},
      {"worker-1", 137, "", 10},  // killed without a word
      {"worker-2", 1, "DeadlineExceeded: worker-1 never entered", 20},
  };
  EXPECT_EQ(ChooseVerdict(exits), 3u);
  exits[1].finished = 20;  // a tie keeps the given (rank) order
  EXPECT_EQ(ChooseVerdict(exits), 1u);
  exits[1].finished = 0;  // unknown times come last
  EXPECT_EQ(ChooseVerdict(exits), 3u);
  exits[3].finished = 0;
  EXPECT_EQ(ChooseVerdict(exits), 1u);
}

TEST(ChooseVerdict, NoneWithoutAFailedExitWithAMessage) {
  EXPECT_EQ(ChooseVerdict({}), std::nullopt);
  EXPECT_EQ(ChooseVerdict({{"worker-0", 0, "fine", 1}, {"worker-1", 2, " \n", 2}}), std::nullopt);
}

TEST(OneLine, JoinsLinesTrimsAndBounds) {
  EXPECT_EQ(OneLine("  DeadlineExceeded: x\n", 100), "DeadlineExceeded: x");
  EXPECT_EQ(OneLine("a\r\n\n  b \nc", 100), "a; b; c");
  EXPECT_EQ(OneLine("abcdefghij", 8), "abcde...");
  EXPECT_EQ(OneLine("abcdefghij", 10), "abcdefghij");
  // Cut at a character boundary: "é" is two bytes.
  EXPECT_EQ(OneLine("abcd\xc3\xa9"
                    "fgh",
                    8),
            "abcd...");
  EXPECT_EQ(OneLine("abcdefghij", 2), "");
}

TEST(FormatVerdict, NamesReplicaAndExitCode) {
  EXPECT_EQ(FormatVerdict({"worker-1", 1, "DeadlineExceeded: all-reduce #3 timed out\n", 1}),
            "worker-1 failed (exit code 1): DeadlineExceeded: all-reduce #3 timed out");
  const std::string long_message(10000, 'x');
  const std::string v = FormatVerdict({"worker-1", 1, long_message, 1});
  EXPECT_EQ(v.size(), kMaxVerdictMessage);
  EXPECT_EQ(v.substr(v.size() - 3), "...");
}

}  // namespace
}  // namespace ringmaster
