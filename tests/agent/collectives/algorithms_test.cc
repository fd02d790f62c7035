// The algorithms over the in-process transport (collectives/algorithms.h):
// ring, recursive doubling and halving-doubling all-reduce for every group
// size 1-5 (and more) and awkward counts, in and out of place; broadcast from
// every root and all-gather.
#include "collectives/algorithms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "local_transport.h"

namespace ringmaster::internal {
namespace {

// Member r's element i: distinct small integers, so sums are exact.
double Value(int r, size_t i) {
  return static_cast<double>((i * 13 + static_cast<size_t>(r) * 7) % 11) - 5;
}

struct AlgoCase {
  int n;
  size_t count;
  Algorithm algo;
};

// Out of place (the op on a tensor TensorFlow holds elsewhere): the same
// bits as in place, the input untouched, and nothing read from the output
// beforehand (it starts as NaN, which would poison any sum or comparison).
// Called by the test above (one process per case is enough).
void ExpectOutOfPlaceGivesTheSameBitsAndLeavesTheInput(const AlgoCase& c) {
  for (bool through_pack : {false, true}) {
    if (!through_pack && c.algo != Algorithm::kRing) continue;
    std::vector<std::vector<double>> results(c.n);
    OnFabric(c.n, [&](Transport& t) {
      std::vector<double> in(c.count), out(c.count, std::nan(""));
      for (size_t i = 0; i < c.count; ++i) in[i] = Value(t.rank(), i);
      const std::vector<double> before = in;
      Status s;
      if (through_pack) {
        s = AllReducePack(t, c.algo, in.data(), out.data(), c.count, DataType::kFloat64, ReduceOp::kSum, 1);
      } else {
        RingTuning tuning;
        tuning.chunk_bytes = 64;
        tuning.staging_chunks = 3;
        s = RingAllReduce(t, in.data(), out.data(), c.count, DataType::kFloat64, ReduceOp::kSum, tuning);
      }
      EXPECT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(in, before) << "rank " << t.rank() << ": the input was written";
      results[t.rank()] = out;
    });
    for (size_t i = 0; i < c.count; ++i) {
      double want = 0;
      for (int r = 0; r < c.n; ++r) want += Value(r, i);
      for (int r = 0; r < c.n; ++r)
        ASSERT_EQ(results[r][i], want) << "rank " << r << " element " << i << (through_pack ? " (pack)" : "");
    }
  }
}

class AllReduceOverLocal : public ::testing::TestWithParam<AlgoCase> {};

TEST_P(AllReduceOverLocal, SumMinMaxAreExactInAndOutOfPlace) {
  const auto c = GetParam();
  ExpectOutOfPlaceGivesTheSameBitsAndLeavesTheInput(c);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
    std::vector<std::vector<double>> results(c.n);
    RingTuning tuning;
    tuning.chunk_bytes = 64;  // many chunks even for small counts: exercises the pipeline
    tuning.staging_chunks = 3;
    OnFabric(c.n, [&](Transport& t) {
      std::vector<double> v(c.count);
      for (size_t i = 0; i < c.count; ++i) v[i] = Value(t.rank(), i);
      Status s = AllReduce(t, c.algo, v.data(), c.count, DataType::kFloat64, op, tuning);
      EXPECT_TRUE(s.ok()) << s.ToString();
      results[t.rank()] = v;
    });
    for (size_t i = 0; i < c.count; ++i) {
      double want = Value(0, i);
      for (int r = 1; r < c.n; ++r) {
        double x = Value(r, i);
        want = op == ReduceOp::kSum ? want + x : op == ReduceOp::kMin ? std::min(want, x) : std::max(want, x);
      }
      for (int r = 0; r < c.n; ++r) ASSERT_EQ(results[r][i], want) << "rank " << r << " element " << i;
    }
  }
}

std::vector<AlgoCase> Cases() {
  std::vector<AlgoCase> out;
  for (int n = 1; n <= 5; ++n) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{1001}}) {
      out.push_back({n, count, Algorithm::kRing});
      out.push_back({n, count, Algorithm::kRecursiveDoubling});
      out.push_back({n, count, Algorithm::kHalvingDoubling});
    }
  }
  for (int n : {6, 7}) {  // folds of two and three pairs around four
    for (size_t count : {size_t{1}, size_t{7}, size_t{1001}})
      out.push_back({n, count, Algorithm::kHalvingDoubling});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(GroupsAndCounts, AllReduceOverLocal, ::testing::ValuesIn(Cases()),
                         [](const auto& info) {
                           return "n" + std::to_string(info.param.n) + "_count" +
                                  std::to_string(info.param.count) +
                                  (info.param.algo == Algorithm::kRing                ? "_ring"
                                   : info.param.algo == Algorithm::kRecursiveDoubling ? "_rd"
                                                                                      : "_hd");
                         });

TEST(Algorithms, BroadcastAndAllGatherOverLocal) {
  for (int n = 1; n <= 5; ++n) {
    for (int root = 0; root < n; ++root) {
      std::vector<std::vector<int32_t>> got(n);
      OnFabric(n, [&](Transport& t) {
        std::vector<int32_t> v(9, t.rank() == root ? 42 + root : -1);
        EXPECT_TRUE(BroadcastBytes(t, v.data(), v.size() * 4, root).ok());
        got[t.rank()] = v;
      });
      for (int r = 0; r < n; ++r) EXPECT_EQ(got[r], std::vector<int32_t>(9, 42 + root)) << n << "/" << root;
    }
    std::vector<std::vector<int64_t>> gathered(n);
    OnFabric(n, [&](Transport& t) {
      std::vector<int64_t> out(static_cast<size_t>(3 * n), -1);
      for (int k = 0; k < 3; ++k) out[static_cast<size_t>(t.rank() * 3 + k)] = t.rank() * 10 + k;
      EXPECT_TRUE(RingAllGatherBytes(t, out.data(), 3 * 8).ok());
      gathered[t.rank()] = out;
    });
    for (int r = 0; r < n; ++r) {
      for (int b = 0; b < n; ++b) {
        for (int k = 0; k < 3; ++k) EXPECT_EQ(gathered[r][static_cast<size_t>(b * 3 + k)], b * 10 + k);
      }
    }
  }
}

}  // namespace
}  // namespace ringmaster::internal
