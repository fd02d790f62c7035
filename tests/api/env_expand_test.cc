#include "ringmaster/env_expand.h"

#include <gtest/gtest.h>

#include <map>

namespace ringmaster {
namespace {

std::string Expand(std::string_view in) {
  static const std::map<std::string, std::string, std::less<>> vars = {
      {"A", "alpha"}, {"EMPTY", ""}, {"TF_CONFIG", R"({"task":{}})"}, {"D", "$(A)"}};
  return ExpandKubeVars(in, [](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

TEST(EnvExpand, DefinedVariablesAreReplaced) {
  EXPECT_EQ(Expand("--x=$(A)"), "--x=alpha");
  EXPECT_EQ(Expand("$(A)$(A)"), "alphaalpha");
  EXPECT_EQ(Expand("[$(EMPTY)]"), "[]");
  EXPECT_EQ(Expand("$(TF_CONFIG)"), R"({"task":{}})");
}

TEST(EnvExpand, UndefinedVariablesStayAsWritten) {
  EXPECT_EQ(Expand("$(NOPE) and $(A)"), "$(NOPE) and alpha");
  EXPECT_EQ(Expand("$()"), "$()");
}

TEST(EnvExpand, EscapesAndStrayDollarsAreLiteral) {
  EXPECT_EQ(Expand("$$(A)"), "$(A)");
  EXPECT_EQ(Expand("$$$(A)"), "$alpha");
  EXPECT_EQ(Expand("cost: 5$"), "cost: 5$");
  EXPECT_EQ(Expand("$HOME $x"), "$HOME $x");
  EXPECT_EQ(Expand("$(A"), "$(A");
  EXPECT_EQ(Expand("$($(A))"), "$($(A))");  // the name is "$(A": undefined, kept
}

TEST(EnvExpand, ValuesAreNotExpandedTwice) {
  // A value that itself looks like a reference is inserted verbatim.
  EXPECT_EQ(Expand("$(D)"), "$(A)");
}

}  // namespace
}  // namespace ringmaster
