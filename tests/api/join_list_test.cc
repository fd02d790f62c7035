// JoinList (ringmaster/join_list.h): the ", " list of a message.
#include "ringmaster/join_list.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ringmaster {
namespace {

TEST(JoinList, SeparatesItemsWithACommaAndASpace) {
  EXPECT_EQ(JoinList(std::vector<std::string>{"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(JoinList(std::vector<std::string_view>{"only"}), "only");
  EXPECT_EQ(JoinList(std::vector<std::string>{}), "");
  const char* words[] = {"x", "y"};
  EXPECT_EQ(JoinList(words), "x, y");
}

TEST(JoinList, WritesEachItemAsTheGivenFunctionDoes) {
  EXPECT_EQ(JoinList(std::vector<int>{3, 1, 2}, [](int i) { return std::to_string(i); }), "3, 1, 2");
  const std::map<std::string, int> m{{"worker-0", 1}, {"worker-1", 2}};
  EXPECT_EQ(JoinList(m, [](const auto& kv) { return kv.first; }), "worker-0, worker-1");
}

TEST(JoinList, AnEmptyItemStillHasItsSeparators) {
  EXPECT_EQ(JoinList(std::vector<std::string>{"", "b", ""}), ", b, ");
}

TEST(JoinListAnd, WritesTheListAsASentence) {
  EXPECT_EQ(JoinListAnd(std::vector<std::string>{}), "");
  EXPECT_EQ(JoinListAnd(std::vector<std::string>{"worker-1"}), "worker-1");
  EXPECT_EQ(JoinListAnd(std::vector<std::string>{"chief-0", "worker-1"}), "chief-0 and worker-1");
  EXPECT_EQ(JoinListAnd(std::vector<std::string>{"a", "b", "c"}), "a, b and c");
}

}  // namespace
}  // namespace ringmaster
