// Recovery in place over TCP: survivors re-form with a member's new
// incarnation and agree where to resume; a member that never comes back is
// named when the formation times out; an elastic group shrinks without a
// missing member and grows when it comes back, never leaving the leader out.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "group/resume.h"
#include "group_util.h"

namespace ringmaster {
namespace {

using testing::FormGroup;
using testing::LocalSettings;
using testing::OnAll;
using testing::Via;

// A member leaves; its new incarnation (a new Communicator at the same
// address) joins the survivors' re-formation and takes the state of the
// step they agree on from the lowest survivor.
TEST(Recovery, SurvivorsReformWithTheNewIncarnationAndAgree) {
  const int n = 3;
  auto settings = LocalSettings(n);
  auto g = FormGroup(settings, nullptr, Via::kGrpc);
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

// Elastic size: a member that does not come back within the rejoin bound is
// left out (the others renumbered, the group works at its new size); when
// it comes back it waits, every member learns so at the same call, and the
// group grows again, the newcomer taking the survivors' state.
TEST(Elastic, ShrinksWithoutTheMissingMemberAndGrowsWhenItComesBack) {
  const int n = 3;
  auto settings = LocalSettings(n);
  for (auto& s : settings) {
    s.min_size = 2;
    s.rejoin_timeout_seconds = 1;
  }
  auto g = FormGroup(settings, nullptr, Via::kGrpc);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  g[1].reset();  // worker 0 goes away: worker 1 becomes rank 1 of 2
  testing::Group two(2);
  std::vector<Status> st(n);
  OnAll(2, [&](int i) {
    const int r = i == 0 ? 0 : 2;
    st[r] = g[r]->Reform();
  });
  for (int r : {0, 2}) ASSERT_TRUE(st[r].ok()) << st[r].ToString();
  EXPECT_EQ(g[0]->size(), 2);
  EXPECT_EQ(g[2]->size(), 2);
  EXPECT_EQ(g[0]->rank(), 0);
  EXPECT_EQ(g[2]->rank(), 1);
  EXPECT_EQ(g[2]->TaskName(1), "/job:worker/task:1");
  two[0] = std::move(g[0]);
  two[1] = std::move(g[2]);
  testing::ExpectExactSum(two);
  g[0] = std::move(two[0]);
  g[2] = std::move(two[1]);

  // Worker 0 comes back; the others see it waiting at the same call, then
  // let it in; it takes their state of step 9.
  std::vector<int> joiners(n, -1);
  std::vector<StatusOr<ResumePoint>> agreed(n, ResumePoint{});
  std::vector<std::vector<int64_t>> state(n, std::vector<int64_t>(1000, -1));
  OnAll(n, [&](int r) {
    if (r == 1) {
      auto c = Communicator::Create(settings[1]);
      st[r] = c.status();
      if (!c.ok()) return;
      g[1] = std::move(*c);
    } else {
      for (int tries = 0; tries < 600 && joiners[r] <= 0; ++tries) {
        auto j = g[r]->AgreeOnJoiners();  // collective: both survivors loop alike
        st[r] = j.status();
        if (!j.ok()) return;
        joiners[r] = *j;
        if (*j == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      st[r] = g[r]->Reform();
      if (!st[r].ok()) return;
      for (size_t i = 0; i < state[r].size(); ++i) state[r][i] = int64_t(i) * 3;
    }
    agreed[r] = g[r]->AgreeOnResume(r == 1 ? -1 : 9);
    if (!agreed[r].ok()) return;
    Tensor t{state[r].data(), int64_t(state[r].size()), DataType::kInt64};
    st[r] = g[r]->Broadcast({&t, 1}, agreed[r]->root);
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(st[r].ok()) << r << ": " << st[r].ToString();
    ASSERT_TRUE(agreed[r].ok()) << agreed[r].status().ToString();
    EXPECT_EQ(g[r]->size(), 3);
    EXPECT_EQ(g[r]->rank(), r);
    EXPECT_EQ(agreed[r]->step, 9);
    for (size_t i = 0; i < state[r].size(); i += 37) ASSERT_EQ(state[r][i], int64_t(i) * 3) << r;
  }
  EXPECT_EQ(joiners[0], 1);
  EXPECT_EQ(joiners[2], 1);
  testing::ExpectExactSum(g);
}

// The leader (rank 0: its address is the one everyone knows) is never left
// out: without it the re-formation waits out the formation timeout, naming it.
TEST(Elastic, TheLeaderIsNeverLeftOut) {
  const int n = 3;
  auto settings = LocalSettings(n);
  for (auto& s : settings) {
    s.min_size = 2;
    s.rejoin_timeout_seconds = 0.5;
    s.formation_timeout_seconds = 5;
  }
  auto g = FormGroup(settings);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  g[0].reset();
  std::vector<Status> st(n);
  OnAll(2, [&](int i) { st[i + 1] = g[i + 1]->Reform(); });
  for (int r = 1; r < n; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kDeadlineExceeded) << st[r].ToString();
    EXPECT_NE(st[r].message().find("/job:chief/task:0"), std::string::npos) << st[r].ToString();
  }
}

}  // namespace
}  // namespace ringmaster
