// The variable-size collectives (collectives/collectives_v.cc) and the new
// dtypes at the Communicator: groups over TCP on 127.0.0.1 (one thread per
// member), the argument checks that name what is wrong, bool reductions
// refused, timeouts, and GPU memory refused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "group_util.h"

namespace ringmaster {
namespace {

using testing::FormGroup;
using testing::Group;
using testing::LocalSettings;
using testing::OnAll;

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

class VarGroupSizes : public ::testing::TestWithParam<int> {};

// Each collective once through the whole engine (executor, TCP), several in
// a row so their ordering across the streams is exercised too.
TEST_P(VarGroupSizes, AllGatherVAllToAllReduceScatterThroughTheEngine) {
  const int n = GetParam();
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<std::string> failures(n);
  OnAll(n, [&](int r) {
    auto fail = [&](const std::string& m) {
      if (failures[r].empty()) failures[r] = m;
    };
    // All-gather-v: member b gives 100001 * (b % 2) + b elements (some empty).
    std::vector<int64_t> counts(n);
    int64_t total = 0;
    for (int b = 0; b < n; ++b) total += counts[b] = 100001 * (b % 2) + b;
    std::vector<int16_t> in(static_cast<size_t>(counts[r])), out(static_cast<size_t>(total), -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int16_t>(i * 3 + r);
    Status s = g[r]->AllGatherV(Tensor{in.data(), counts[r], DataType::kInt16}, counts,
                                Tensor{out.data(), total, DataType::kInt16});
    if (!s.ok()) return fail(s.ToString());
    for (int b = 0, k = 0; b < n; ++b)
      for (int64_t i = 0; i < counts[b]; ++i, ++k)
        if (out[k] != static_cast<int16_t>(i * 3 + b))
          return fail("all-gather-v wrong at " + std::to_string(k));
    // All-to-all: r sends (r + d) % 3 * 1000 bytes to d.
    std::vector<int64_t> sc(n), rc(n);
    std::vector<uint8_t> ain, aout;
    for (int d = 0; d < n; ++d) {
      sc[d] = (r + d) % 3 * 1000;
      rc[d] = (d + r) % 3 * 1000;
      for (int64_t i = 0; i < sc[d]; ++i) ain.push_back(static_cast<uint8_t>(r * 16 + d + i));
    }
    aout.assign(static_cast<size_t>(Sum(rc)), 0);
    s = g[r]->AllToAll(Tensor{ain.data(), int64_t(ain.size()), DataType::kUInt8}, sc,
                       Tensor{aout.data(), int64_t(aout.size()), DataType::kUInt8}, rc);
    if (!s.ok()) return fail(s.ToString());
    for (int src = 0, k = 0; src < n; ++src)
      for (int64_t i = 0; i < rc[src]; ++i, ++k)
        if (aout[k] != static_cast<uint8_t>(src * 16 + r + i))
          return fail("all-to-all wrong at " + std::to_string(k));
    // Reduce-scatter, MEAN of float32: the mean of (r + 1) * i is i * (n + 1) / 2.
    std::vector<float> rin(static_cast<size_t>(total)), rout(static_cast<size_t>(counts[r]), -1);
    for (size_t i = 0; i < rin.size(); ++i) rin[i] = static_cast<float>((r + 1) * (i % 1000));
    s = g[r]->ReduceScatter(Tensor{rin.data(), total, DataType::kFloat32}, counts,
                            Tensor{rout.data(), counts[r], DataType::kFloat32}, ReduceOp::kMean);
    if (!s.ok()) return fail(s.ToString());
    const int64_t before = Sum(std::vector<int64_t>(counts.begin(), counts.begin() + r));
    for (int64_t i = 0; i < counts[r]; ++i) {
      const float sum = static_cast<float>(n * (n + 1) / 2 * ((before + i) % 1000));
      if (rout[i] != sum / static_cast<float>(n)) return fail("reduce-scatter wrong at " + std::to_string(i));
    }
    // Nothing to move anywhere: completes at once on every member.
    std::vector<int64_t> zeros(n, 0);
    s = g[r]->AllGatherV(Tensor{nullptr, 0, DataType::kBool}, zeros, Tensor{nullptr, 0, DataType::kBool});
    if (s.ok())
      s = g[r]->AllToAll(Tensor{nullptr, 0, DataType::kInt8}, zeros, Tensor{nullptr, 0, DataType::kInt8},
                         zeros);
    if (s.ok())
      s = g[r]->ReduceScatter(Tensor{nullptr, 0, DataType::kInt8}, zeros, Tensor{nullptr, 0, DataType::kInt8},
                              ReduceOp::kSum);
    if (!s.ok()) return fail("empty: " + s.ToString());
    // The group still works after them.
    int64_t one = 1;
    Tensor t{&one, 1, DataType::kInt64};
    s = g[r]->AllReduce({&t, 1}, ReduceOp::kSum);
    if (!s.ok() || one != n) return fail("all-reduce after: " + s.ToString());
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Engine, VarGroupSizes, ::testing::Values(1, 2, 3));

void ExpectInvalid(const Status& s, const std::string& part) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message() << "\n  wanted: " << part;
}

TEST(VarCollectives, ArgumentChecksNameTheArgument) {
  Group g = FormGroup(LocalSettings(1));
  ASSERT_TRUE(g[0]);
  Communicator& c = *g[0];
  int32_t a[8] = {}, b[8] = {};
  const Tensor in4{a, 4, DataType::kInt32}, out4{b, 4, DataType::kInt32};
  const int64_t five[1] = {5}, four[1] = {4}, minus[1] = {-1};
  ExpectInvalid(c.AllGatherV(in4, five, Tensor{b, 5, DataType::kInt32}),
                "input.count must be counts[rank] = 5, got 4");
  ExpectInvalid(c.AllGatherV(in4, minus, out4), "counts[0] must be >= 0");
  ExpectInvalid(c.AllGatherV(in4, std::vector<int64_t>{4, 4}, out4),
                "counts must have size() = 1 entries, got 2");
  ExpectInvalid(c.AllGatherV(in4, four, Tensor{b, 5, DataType::kInt32}),
                "output.count must be the sum of counts = 4, got 5");
  ExpectInvalid(c.AllGatherV(in4, four, Tensor{b, 4, DataType::kFloat32}),
                "output.dtype must equal input.dtype");
  ExpectInvalid(c.AllGatherV(Tensor{nullptr, 4, DataType::kInt32}, four, out4), "input.data is null");
  ExpectInvalid(c.AllToAll(in4, five, out4, four), "input.count must be the sum of send_counts = 5, got 4");
  ExpectInvalid(c.AllToAll(in4, four, out4, minus), "recv_counts[0] must be >= 0");
  ExpectInvalid(c.ReduceScatter(in4, four, Tensor{b, 3, DataType::kInt32}, ReduceOp::kSum),
                "output.count must be counts[rank] = 4, got 3");
  ExpectInvalid(c.ReduceScatter(in4, four, Tensor{a + 2, 4, DataType::kInt32}, ReduceOp::kSum),
                "output must not overlap input");
  ExpectInvalid(c.ReduceScatter(in4, four, out4, static_cast<ReduceOp>(9)), "op: not a valid reduce op: 9");
  Tensor dev = out4;
  dev.memory = MemoryKind::kDevice;
  ExpectInvalid(c.AllToAll(in4, four, dev, four), "all-to-all: host memory only");
  // bool moves, but is never reduced.
  bool x[4] = {true, false, true, true}, y[4] = {};
  const Tensor bin{x, 4, DataType::kBool}, bout{y, 4, DataType::kBool};
  ExpectInvalid(c.ReduceScatter(bin, four, bout, ReduceOp::kMax),
                "reduce-scatter: dtype bool cannot be reduced");
  ExpectInvalid(c.AllReduce({&bin, 1}, ReduceOp::kSum), "all-reduce: dtype bool cannot be reduced");
  const int64_t shape[1] = {4};
  ExpectInvalid(c.Reduce(ReduceOp::kSum, bin, shape, std::nullopt, bout),
                "reduce: dtype bool cannot be reduced");
  ASSERT_TRUE(c.AllGatherV(bin, four, bout).ok());
  EXPECT_EQ(std::memcmp(x, y, 4), 0);
  ASSERT_TRUE(c.Broadcast({&bin, 1}, 0).ok());
  // A group of one: reduce-scatter copies, MEAN divides by 1.
  for (int i = 0; i < 4; ++i) a[i] = 10 * i - 3;
  ASSERT_TRUE(c.ReduceScatter(in4, four, out4, ReduceOp::kMean).ok());
  EXPECT_EQ(std::memcmp(a, b, 16), 0);
}

TEST(VarCollectives, TimeoutWhenAMemberNeverCalls) {
  Group g = FormGroup(LocalSettings(2));
  ASSERT_TRUE(g[0] && g[1]);
  uint8_t in[3] = {1, 2, 3}, out[6] = {};
  const int64_t counts[2] = {3, 3};
  CommunicationOptions o;
  o.timeout_seconds = 0.5;
  Status s = g[0]->AllGatherV(Tensor{in, 3, DataType::kUInt8}, counts, Tensor{out, 6, DataType::kUInt8}, o);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
}

}  // namespace
}  // namespace ringmaster
