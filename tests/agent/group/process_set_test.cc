// Process sets (Communicator::AddProcessSet; group/process_set.h: whether the
// members agree): subgroups of a formed group over TCP on 127.0.0.1, one
// thread per member. Their collectives give the subgroup's results, renumber
// ranks, count their own sequence (members outside a set never see its
// collectives), interleave with the whole group's, and a disagreement or a
// bad rank fails on every member, naming who and what.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "group_util.h"
#include "local_transport.h"

namespace ringmaster {
namespace {

using testing::ExpectExactSum;
using testing::FormGroup;
using testing::Group;
using testing::LocalSettings;
using testing::OnAll;
using testing::Via;

using Sets = std::vector<std::unique_ptr<Communicator>>;

// Every member adds the same set; returns each member's result.
Sets AddOnAll(Group& g, int id, const std::vector<int>& ranks, std::vector<Status>* st) {
  const int n = static_cast<int>(g.size());
  Sets sets(n);
  st->assign(n, OkStatus());
  OnAll(n, [&](int r) {
    auto s = g[r]->AddProcessSet(id, ranks);
    if (s.ok())
      sets[r] = std::move(*s);
    else
      (*st)[r] = s.status();
  });
  return sets;
}

TEST(ProcessSet, SubgroupsReduceAmongTheirMembersInterleavedWithTheWholeGroup) {
  const int n = 4;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<Status> st;
  // Given in any order: sorted, so member 3 is the set's rank 1.
  Sets odd = AddOnAll(g, 1, {3, 1}, &st);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(st[r].ok()) << st[r].ToString();
  Sets low = AddOnAll(g, 2, {0, 1, 2}, &st);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(st[r].ok()) << st[r].ToString();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(odd[r] != nullptr, r % 2 == 1) << r;
    EXPECT_EQ(low[r] != nullptr, r < 3) << r;
  }
  EXPECT_EQ(odd[3]->rank(), 1);
  EXPECT_EQ(odd[3]->size(), 2);
  EXPECT_EQ(odd[3]->process_set_id(), 1);
  EXPECT_EQ(odd[3]->TaskName(0), g[1]->TaskName(1));
  EXPECT_EQ(g[0]->process_set_id(), 0);

  std::vector<std::string> failures(n);
  OnAll(n, [&](int r) {
    auto fail = [&](const std::string& m) {
      if (failures[r].empty()) failures[r] = m;
    };
    // Uneven counts of collectives per set: member 0 never sees the odd
    // set's, so a shared sequence number would break the next whole-group one.
    for (int round = 0; round < 3; ++round) {
      if (odd[r]) {
        for (int k = 0; k <= round; ++k) {
          std::vector<float> v(70001, float(r + 1));
          Tensor t{v.data(), int64_t(v.size()), DataType::kFloat32};
          Status s = odd[r]->AllReduce({&t, 1}, ReduceOp::kSum);
          if (!s.ok()) return fail(s.ToString());
          if (v[0] != 2 + 4 || v.back() != 6) return fail("odd set sum: " + std::to_string(v[0]));
        }
      }
      if (low[r]) {
        int64_t x = r + 10;
        Tensor t{&x, 1, DataType::kInt64};
        Status s = low[r]->AllReduce({&t, 1}, ReduceOp::kMax);
        if (!s.ok()) return fail(s.ToString());
        if (x != 12) return fail("low set max: " + std::to_string(x));
        // Broadcast from the set's rank 2 (member 2).
        std::vector<int32_t> b(1000, r == 2 ? 7 : 0);
        Tensor bt{b.data(), int64_t(b.size()), DataType::kInt32};
        if (Status s2 = low[r]->Broadcast({&bt, 1}, 2); !s2.ok()) return fail(s2.ToString());
        if (b[999] != 7) return fail("low set broadcast");
        // All-gather: the set's size, in set rank order.
        int32_t mine = r * 100, all[3] = {-1, -1, -1};
        Status s3 = low[r]->AllGather(Tensor{&mine, 1, DataType::kInt32}, Tensor{all, 3, DataType::kInt32});
        if (!s3.ok()) return fail(s3.ToString());
        if (all[0] != 0 || all[1] != 100 || all[2] != 200) return fail("low set all-gather");
      }
      std::vector<double> w(1000, 1.0);
      Tensor wt{w.data(), int64_t(w.size()), DataType::kFloat64};
      if (Status s = g[r]->AllReduce({&wt, 1}, ReduceOp::kMean); !s.ok()) return fail(s.ToString());
      if (w[0] != 1.0) return fail("whole group mean");
    }
    // MEAN divides by the set's size.
    if (odd[r]) {
      double m = r;
      Tensor t{&m, 1, DataType::kFloat64};
      if (Status s = odd[r]->AllReduce({&t, 1}, ReduceOp::kMean); !s.ok()) return fail(s.ToString());
      if (m != 2.0) return fail("odd set mean: " + std::to_string(m));
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "member " << r;
  ExpectExactSum(g);
  odd.clear();
  low.clear();
  ExpectExactSum(g);
}

// Horovod reuses the lowest free id: a new set under an old id, with other
// members, must not meet the old set's sequence numbers.
TEST(ProcessSet, AnIdReusedForOtherMembersStartsAFreshSequence) {
  const int n = 3;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<Status> st;
  std::vector<std::string> failures(n);
  auto sum_on = [&](Sets& sets, int expect) {
    OnAll(n, [&](int r) {
      if (!sets[r]) return;
      int64_t x = r;
      Tensor t{&x, 1, DataType::kInt64};
      Status s = sets[r]->AllReduce({&t, 1}, ReduceOp::kSum);
      if (!s.ok())
        failures[r] = s.ToString();
      else if (x != expect)
        failures[r] = "sum " + std::to_string(x);
    });
  };
  {
    Sets first = AddOnAll(g, 1, {0, 1}, &st);
    for (int k = 0; k < 3; ++k) sum_on(first, 1);
  }  // removed: destroyed on every member
  Sets second = AddOnAll(g, 1, {0, 2}, &st);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(st[r].ok()) << st[r].ToString();
  sum_on(second, 2);
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << r;
}

TEST(ProcessSet, MembersThatDisagreeFailOnEveryMemberNamingWho) {
  const int n = 3;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  Sets sets(n);
  std::vector<Status> st(n);
  OnAll(n, [&](int r) {
    std::vector<int> ranks = r == 2 ? std::vector<int>{0, 2} : std::vector<int>{0, 1};
    auto s = g[r]->AddProcessSet(1, ranks);
    st[r] = s.status();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition) << st[r].ToString();
    EXPECT_NE(st[r].message().find("disagree"), std::string::npos) << st[r].ToString();
  }
  // Member 0 and 1 name member 2 ("/job:worker/task:1").
  EXPECT_NE(st[0].message().find(g[2]->TaskName(2)), std::string::npos) << st[0].ToString();
  // The group is still usable.
  ExpectExactSum(g);
}

TEST(ProcessSet, ABadRankIsInvalidArgumentThereAndNamedEverywhereElse) {
  const int n = 3;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<Status> st(n);
  OnAll(n, [&](int r) {
    std::vector<int> ranks = r == 1 ? std::vector<int>{0, 5} : std::vector<int>{0, 1};
    st[r] = g[r]->AddProcessSet(1, ranks).status();
  });
  EXPECT_EQ(st[1].code(), StatusCode::kInvalidArgument) << st[1].ToString();
  EXPECT_NE(st[1].message().find("rank 5"), std::string::npos) << st[1].ToString();
  for (int r : {0, 2}) {
    EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition) << st[r].ToString();
    EXPECT_NE(st[r].message().find(g[1]->TaskName(1)), std::string::npos) << st[r].ToString();
  }
  // Duplicates and a bad id, alike on every member.
  OnAll(n, [&](int r) { st[r] = g[r]->AddProcessSet(1, std::vector<int>{1, 1}).status(); });
  for (int r = 0; r < n; ++r) EXPECT_NE(st[r].message().find("appears twice"), std::string::npos) << r;
  OnAll(n, [&](int r) { st[r] = g[r]->AddProcessSet(0, std::vector<int>{0}).status(); });
  for (int r = 0; r < n; ++r) EXPECT_EQ(st[r].code(), StatusCode::kInvalidArgument) << r;
  ExpectExactSum(g);
}

TEST(ProcessSet, ASetOfOneNeedsNobodyAndATimeoutNamesTheSet) {
  const int n = 2;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<Status> st;
  Sets solo = AddOnAll(g, 4, {1}, &st);
  Sets both = AddOnAll(g, 5, {0, 1}, &st);
  ASSERT_TRUE(solo[1] && both[0] && both[1]);
  float x = 3;
  Tensor t{&x, 1, DataType::kFloat32};
  ASSERT_TRUE(solo[1]->AllReduce({&t, 1}, ReduceOp::kSum).ok());
  EXPECT_EQ(x, 3);
  // Only member 1 calls the pair's all-reduce: a deadline, never a hang,
  // and the error says which process set.
  CommunicationOptions o;
  o.timeout_seconds = 0.5;
  Status s = both[1]->AllReduce({&t, 1}, ReduceOp::kSum, o);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.ToString().find("process set 5"), std::string::npos) << s.ToString();
}

// Recovery in place: a member dies and its new incarnation (a fresh process,
// which has added no set yet) joins the survivors' re-formation; every
// member then adds the sets again. The survivors had added two sets before,
// the newcomer none: the sets' wire keys must still agree, so their
// collectives give the sets' sums. A survivor's set of the last formation is
// refused, naming why, rather than run with that formation's ranks.
TEST(ProcessSet, AfterAReformSurvivorsAndANewIncarnationAddTheirSetsAlike) {
  const int n = 3;
  auto settings = LocalSettings(n);
  Group g = FormGroup(settings, nullptr, Via::kGrpc);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<Status> st;
  std::vector<std::string> failures(n);
  // A collective that cannot finish (keys that disagree) fails, never hangs.
  CommunicationOptions bounded;
  bounded.timeout_seconds = 20;
  auto sum_on = [&](Sets& sets, int expect) {
    OnAll(n, [&](int r) {
      if (!sets[r]) return;
      int64_t x = r;
      Tensor t{&x, 1, DataType::kInt64};
      Status s = sets[r]->AllReduce({&t, 1}, ReduceOp::kSum, bounded);
      if (!s.ok())
        failures[r] = s.ToString();
      else if (x != expect)
        failures[r] = "sum " + std::to_string(x) + ", want " + std::to_string(expect);
    });
  };
  Sets low = AddOnAll(g, 1, {0, 1}, &st);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(st[r].ok()) << st[r].ToString();
  Sets high = AddOnAll(g, 2, {1, 2}, &st);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(st[r].ok()) << st[r].ToString();
  sum_on(low, 1);
  sum_on(high, 3);
  for (int r = 0; r < n; ++r) ASSERT_EQ(failures[r], "") << r;

  // Worker 1 (rank 2) goes away, its sets with it (they must not outlive it).
  high[2].reset();
  g[2].reset();
  OnAll(n, [&](int r) {
    Status s;
    if (r == 2) {
      auto c = Communicator::Create(settings[2]);
      s = c.status();
      if (c.ok()) g[2] = std::move(*c);
    } else {
      s = g[r]->Reform();
    }
    if (!s.ok()) failures[r] = "forming: " + s.ToString();
  });
  for (int r = 0; r < n; ++r) ASSERT_EQ(failures[r], "") << r;

  // A set of the last formation, on a survivor: refused at once, naming it.
  int64_t x = 1;
  Tensor t{&x, 1, DataType::kInt64};
  Status stale = low[0]->AllReduce({&t, 1}, ReduceOp::kSum, bounded);
  EXPECT_EQ(stale.code(), StatusCode::kFailedPrecondition) << stale.ToString();
  EXPECT_NE(stale.message().find("process set 1: the group re-formed"), std::string::npos)
      << stale.ToString();
  low.clear();
  high.clear();

  Sets low2 = AddOnAll(g, 1, {0, 1}, &st);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(st[r].ok()) << st[r].ToString();
  Sets high2 = AddOnAll(g, 2, {1, 2}, &st);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(st[r].ok()) << st[r].ToString();
  sum_on(high2, 3);  // the newcomer's set: its key must be the survivor's
  sum_on(low2, 1);
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << r;
  ExpectExactSum(g);
}

}  // namespace
}  // namespace ringmaster
