// The file descriptor budget (transport/fd_budget.h): a group that fits needs
// nothing, one that fits under the hard limit raises the soft one, one that
// cannot fit fails naming the limit, the need and what to do.
#include "transport/fd_budget.h"

#include <gtest/gtest.h>

#include <string>

namespace ringmaster {
namespace {

// The descriptors a member needs: for a full mesh one socket per peer and
// channel; for the sparse one its fingers' control connections and, on each
// data channel, a ring's and the link probe's (2 + ⌈log2 N⌉); the listening
// one, and a margin; the verdict against the process's limit.
TEST(FdBudget, AGroupThatFitsNeedsNothingOneThatFitsUnderTheHardLimitRaisesTheSoftOne) {
  using internal::FdBudget;
  using internal::JudgeFdBudget;
  using internal::kFdMargin;
  using internal::MeshDescriptors;
  EXPECT_EQ(MeshDescriptors(128, 4), 127 * 4 + 1 + kFdMargin);
  EXPECT_EQ(MeshDescriptors(1, 4), 1 + kFdMargin);
  // 128 members, 2 streams: 13 fingers, 2 + 7 on each of 3 data channels.
  EXPECT_EQ(MeshDescriptors(128, 4, 13, /*first_use=*/true), 13 + 3 * 9 + 1 + kFdMargin);
  // Small groups: never more than the other members.
  EXPECT_EQ(MeshDescriptors(3, 4, 2, /*first_use=*/true), 2 + 3 * 2 + 1 + kFdMargin);
  const int64_t need = MeshDescriptors(256, 4);  // 1085: more than a default `ulimit -n`
  auto fits = JudgeFdBudget(need, FdBudget{20, 4096, 4096}, 256, 4);
  EXPECT_TRUE(fits.error.ok());
  EXPECT_FALSE(fits.raise_to.has_value());
  auto raise = JudgeFdBudget(need, FdBudget{20, 1024, 524288}, 256, 4);
  EXPECT_TRUE(raise.error.ok());
  EXPECT_EQ(raise.raise_to, 20 + need);
  EXPECT_FALSE(JudgeFdBudget(need, FdBudget{20, -1, -1}, 256, 4).raise_to.has_value()) << "unlimited";
  EXPECT_EQ(JudgeFdBudget(need, FdBudget{20, 1024, -1}, 256, 4).raise_to, 20 + need);
}

TEST(FdBudget, AGroupThatCannotFitFailsNamingTheLimitTheNeedAndWhatToDo) {
  const int64_t need = internal::MeshDescriptors(256, 4);
  auto v = internal::JudgeFdBudget(need, internal::FdBudget{20, 1024, 1024}, 256, 4);
  EXPECT_EQ(v.error.code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(v.raise_to.has_value());
  const std::string m(v.error.message());
  for (const std::string& part :
       {std::string("256 members"), std::string("4 channels"), "needs about " + std::to_string(need),
        std::string("may open 1024"), std::string("RLIMIT_NOFILE"), std::string("hard limit is 1024"),
        "at least " + std::to_string(20 + need), std::string("ulimit -n")})
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
}

}  // namespace
}  // namespace ringmaster
