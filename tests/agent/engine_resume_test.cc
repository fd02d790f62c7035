// Recovery in place: where a re-formed group resumes (DecideResume, pure),
// and the engine's half over TCP: survivors re-form with a member's new
// incarnation and agree; a member that never comes back is named when the
// formation times out.
#include <gtest/gtest.h>

#include <chrono>

#include "group/resume.h"
#include "group_util.h"

namespace ringmaster {
namespace {

using internal::DecideResume;
using internal::DescribeResume;
using testing::FormGroup;
using testing::LocalSettings;
using testing::OnAll;

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

// A member leaves; its new incarnation (a new Communicator at the same
// address) joins the survivors' re-formation and takes the state of the
// step they agree on from the lowest survivor.
TEST(Recovery, SurvivorsReformWithTheNewIncarnationAndAgree) {
  const int n = 3;
  auto settings = LocalSettings(n);
  auto g = FormGroup(settings);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  g[1].reset();  // worker 0 goes away
  std::vector<StatusOr<ResumePoint>> agreed(n, ResumePoint{});
  std::vector<Status> st(n);
  std::vector<std::vector<int64_t>> state(n, std::vector<int64_t>(1000, -1));
  OnAll(n, [&](int r) {
    if (r == 1) {
      auto c = Communicator::Create(settings[1]);
      st[r] = c.status();
      if (!c.ok()) return;
      g[1] = std::move(*c);
    } else {
      st[r] = g[r]->Reform();
      if (!st[r].ok()) return;
      for (size_t i = 0; i < state[r].size(); ++i) state[r][i] = int64_t(i) * 3;  // the survivors' step 9
    }
    agreed[r] = g[r]->AgreeOnResume(r == 1 ? -1 : 9);
    if (!agreed[r].ok()) return;
    Tensor t{state[r].data(), int64_t(state[r].size()), DataType::kInt64};
    st[r] = g[r]->Broadcast({&t, 1}, agreed[r]->root);
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(st[r].ok()) << r << ": " << st[r].ToString();
    ASSERT_TRUE(agreed[r].ok()) << agreed[r].status().ToString();
    EXPECT_EQ(agreed[r]->step, 9);
    EXPECT_EQ(agreed[r]->root, 0);
    for (size_t i = 0; i < state[r].size(); i += 37) ASSERT_EQ(state[r][i], int64_t(i) * 3) << r;
  }
  testing::ExpectExactSum(g);
}

// The member does not come back: the survivors' re-formation ends at the
// formation timeout, naming it, not before and not never.
TEST(Recovery, AMemberThatDoesNotComeBackIsNamedAtTheFormationTimeout) {
  const int n = 3;
  auto settings = LocalSettings(n);
  // The first formation must fit in it too, under sanitizers on a busy machine.
  for (auto& s : settings) s.formation_timeout_seconds = 5;
  auto g = FormGroup(settings);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  g[2].reset();
  std::vector<Status> st(n);
  const auto start = std::chrono::steady_clock::now();
  OnAll(2, [&](int r) { st[r] = g[r]->Reform(); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kDeadlineExceeded) << st[r].ToString();
    EXPECT_NE(st[r].message().find("/job:worker/task:1"), std::string::npos) << st[r].ToString();
    EXPECT_EQ(st[r].message().find("/job:worker/task:0,"), std::string::npos) << st[r].ToString();
  }
  EXPECT_GE(took, 4.0);         // it waited for the member...
  EXPECT_LT(took, 5.0 + 10.0);  // ...as long as the formation timeout (sanitizer builds are slow)
}

}  // namespace
}  // namespace ringmaster
