// Where a re-formed group resumes (group/resume.h), pure: the highest step
// wins, held by its lowest rank; nobody holding state is a first start; a bad
// offer names the member.
#include "group/resume.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster {
namespace {

using internal::DecideResume;
using internal::DescribeResume;

const std::vector<std::string> kNames = {"/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"};

TEST(DecideResume, TheHighestStepWinsHeldByItsLowestRank) {
  std::vector<int64_t> committed = {-1, 7, 7};  // the leader is a new incarnation
  auto d = DecideResume(committed, kNames);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->point.step, 7);
  EXPECT_EQ(d->point.root, 1);
  EXPECT_EQ(d->behind, std::vector<int>({0}));
  EXPECT_EQ(DescribeResume(*d, kNames),
            "resuming after step 7 from /job:worker/task:0; /job:chief/task:0 takes its state");
  // A survivor that finished one more step than another: its state wins.
  committed = {6, 5, -1};
  d = DecideResume(committed, kNames);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->point.step, 6);
  EXPECT_EQ(d->point.root, 0);
  EXPECT_EQ(d->behind, std::vector<int>({1, 2}));
  EXPECT_EQ(DescribeResume(*d, kNames),
            "resuming after step 6 from /job:chief/task:0; /job:worker/task:0 and /job:worker/task:1 take "
            "its state");
}

TEST(DecideResume, NobodyHoldingStateIsAFirstStartFromRankZero) {
  std::vector<int64_t> committed = {-1, -1, -1};
  auto d = DecideResume(committed, kNames);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->point.step, -1);
  EXPECT_EQ(d->point.root, 0);
  EXPECT_TRUE(d->behind.empty());
}

TEST(DecideResume, AnOfferBelowMinusOneNamesTheMember) {
  std::vector<int64_t> committed = {3, -2, 3};
  auto d = DecideResume(committed, kNames);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("committed_step of /job:worker/task:0"), std::string::npos)
      << d.status().ToString();
}

}  // namespace
}  // namespace ringmaster
