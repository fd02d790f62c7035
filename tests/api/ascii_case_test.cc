// ASCII case folding (ringmaster/ascii_case.h): A-Z fold, nothing else does.
#include "ringmaster/ascii_case.h"

#include <gtest/gtest.h>

namespace ringmaster {
namespace {

TEST(AsciiCase, LowersOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("OnFailure-2_X.Y"), "onfailure-2_x.y");
  EXPECT_EQ(AsciiLower(""), "");
  EXPECT_EQ(AsciiLower("\xC3\x89t\xC3\xA9"), "\xC3\x89t\xC3\xA9");  // UTF-8 bytes stay as they are
  EXPECT_EQ(AsciiLower('@'), '@');
  EXPECT_EQ(AsciiLower('['), '[');
}

TEST(AsciiCase, EqualFoldIgnoresTheCaseOfLettersOnly) {
  EXPECT_TRUE(EqualFold("Master", "mASTER"));
  EXPECT_TRUE(EqualFold("", ""));
  EXPECT_FALSE(EqualFold("Worker", "Workers"));
  EXPECT_FALSE(EqualFold("ps", "pt"));
  EXPECT_FALSE(EqualFold("@", "`"));  // 0x40 and 0x60 differ by the case bit but are no letters
  static_assert(EqualFold("NCCL", "nccl"));
}

}  // namespace
}  // namespace ringmaster
