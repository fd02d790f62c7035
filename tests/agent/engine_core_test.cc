// The functional core without sockets: kernels, packing, and the algorithms
// over the in-process transport, for every group size 1-5 and awkward counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "c_api_internal.h"
#include "collectives/algorithms.h"
#include "collectives/collectives.h"
#include "collectives/kernels.h"
#include "collectives/link_model.h"
#include "collectives/packing.h"
#include "local_transport.h"
#include "ringmaster/enum_names.h"
#include "ringmaster/ringmaster.h"

namespace ringmaster::internal {
namespace {

TEST(Kernels, HalfConversionsRoundTripSmallIntegersAndRoundToEven) {
  for (int i = -2048; i <= 2048; ++i) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(static_cast<float>(i))), static_cast<float>(i)) << i;
  }
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);                   // overflow to +inf
  EXPECT_EQ(FloatToHalf(2049.0f), FloatToHalf(2048.0f));  // tie rounds to even
  EXPECT_EQ(FloatToHalf(2051.0f), FloatToHalf(2052.0f));
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  for (int i = -256; i <= 256; ++i) {
    EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(static_cast<float>(i))), static_cast<float>(i)) << i;
  }
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(257.0f)), 256.0f);  // tie to even
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(259.0f)), 260.0f);
}

template <typename T>
std::vector<T> Apply(DataType dt, ReduceOp op, std::vector<T> a, const std::vector<T>& b) {
  ReduceInto(dt, op, a.data(), b.data(), a.size());
  return a;
}

TEST(Kernels, EveryOpOnEveryWideType) {
  std::vector<float> a{1, -2, 3, 4}, b{5, 6, -7, 8};
  EXPECT_EQ(Apply(DataType::kFloat32, ReduceOp::kSum, a, b), (std::vector<float>{6, 4, -4, 12}));
  EXPECT_EQ(Apply(DataType::kFloat32, ReduceOp::kMean, a, b), (std::vector<float>{6, 4, -4, 12}));
  EXPECT_EQ(Apply(DataType::kFloat32, ReduceOp::kProduct, a, b), (std::vector<float>{5, -12, -21, 32}));
  EXPECT_EQ(Apply(DataType::kFloat32, ReduceOp::kMin, a, b), (std::vector<float>{1, -2, -7, 4}));
  EXPECT_EQ(Apply(DataType::kFloat32, ReduceOp::kMax, a, b), (std::vector<float>{5, 6, 3, 8}));
  std::vector<double> da{1.5, 2}, db{0.25, -4};
  EXPECT_EQ(Apply(DataType::kFloat64, ReduceOp::kSum, da, db), (std::vector<double>{1.75, -2}));
  std::vector<int32_t> ia{7, -3}, ib{-8, 2};
  EXPECT_EQ(Apply(DataType::kInt32, ReduceOp::kMax, ia, ib), (std::vector<int32_t>{7, 2}));
  EXPECT_EQ(Apply(DataType::kInt32, ReduceOp::kProduct, ia, ib), (std::vector<int32_t>{-56, -6}));
  std::vector<int64_t> la{int64_t{1} << 40, 3}, lb{1, -5};
  EXPECT_EQ(Apply(DataType::kInt64, ReduceOp::kSum, la, lb),
            (std::vector<int64_t>{(int64_t{1} << 40) + 1, -2}));
  EXPECT_EQ(Apply(DataType::kInt64, ReduceOp::kMin, la, lb), (std::vector<int64_t>{1, -5}));
}

TEST(Kernels, HalfTypesReduceThroughFloat) {
  std::vector<uint16_t> a{FloatToHalf(1.5f), FloatToHalf(-3)}, b{FloatToHalf(2.25f), FloatToHalf(1)};
  auto s = Apply(DataType::kFloat16, ReduceOp::kSum, a, b);
  EXPECT_EQ(HalfToFloat(s[0]), 3.75f);
  EXPECT_EQ(HalfToFloat(s[1]), -2.0f);
  auto m = Apply(DataType::kFloat16, ReduceOp::kMin, a, b);
  EXPECT_EQ(HalfToFloat(m[0]), 1.5f);
  EXPECT_EQ(HalfToFloat(m[1]), -3.0f);
  std::vector<uint16_t> c{FloatToBFloat16(3), FloatToBFloat16(-2)}, d{FloatToBFloat16(4), FloatToBFloat16(8)};
  auto p = Apply(DataType::kBFloat16, ReduceOp::kProduct, c, d);
  EXPECT_EQ(BFloat16ToFloat(p[0]), 12.0f);
  EXPECT_EQ(BFloat16ToFloat(p[1]), -16.0f);
}

// Bits that are NaN in `dtype` (payloads may differ between the builds).
bool IsNan(DataType dtype, const unsigned char* p) {
  switch (dtype) {
    case DataType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    }
    case DataType::kBFloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
    }
    case DataType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return std::isnan(f);
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return std::isnan(d);
    }
    default:
      return false;
  }
}

TEST(Kernels, TheAvx2BuildGivesTheBaselinesBits) {
  if (!KernelIsaSupported(KernelIsa::kAvx2)) GTEST_SKIP() << "this CPU has no AVX2 + F16C";
  EXPECT_EQ(ActiveKernelIsa(), KernelIsa::kAvx2);
  // Random bits: every class of value turns up (subnormals, infinities,
  // NaNs, signed zeros, values that overflow or round on the way back).
  uint64_t state = 0x9e3779b97f4a7c15u;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<unsigned char>(state);
  };
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                      DataType::kInt32, DataType::kInt64}) {
    const size_t es = DataTypeSize(dt);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{1001}, size_t{4096}}) {
        std::vector<unsigned char> a(count * es), b(count * es);
        for (auto& x : a) x = next();
        for (auto& x : b) x = next();
        // Some equal pairs and signed zeros, where min/max must agree too.
        for (size_t i = 0; i + 3 < count; i += 5) std::memcpy(&b[i * es], &a[i * es], es);
        auto base = a, avx = a;
        ReduceIntoWith(KernelIsa::kBaseline, dt, op, base.data(), b.data(), count);
        ReduceIntoWith(KernelIsa::kAvx2, dt, op, avx.data(), b.data(), count);
        for (size_t i = 0; i < count; ++i) {
          const unsigned char* x = &base[i * es];
          const unsigned char* y = &avx[i * es];
          if (IsNan(dt, x) && IsNan(dt, y)) continue;
          ASSERT_EQ(std::memcmp(x, y, es), 0)
              << DataTypeName(dt) << " " << ReduceOpName(op) << " count " << count << " element " << i;
        }
      }
    }
  }
}

TEST(Kernels, DivideAndIdentity) {
  std::vector<float> f{3, 1};
  DivideBy(DataType::kFloat32, f.data(), 2, 3);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 1.0f / 3.0f);
  std::vector<int32_t> i{7, -7};
  DivideBy(DataType::kInt32, i.data(), 2, 2);
  EXPECT_EQ(i, (std::vector<int32_t>{3, -3}));  // truncates like TF
  std::vector<int64_t> id(2);
  FillIdentity(DataType::kInt64, ReduceOp::kMin, id.data(), 2);
  EXPECT_EQ(id[0], INT64_MAX);
  FillIdentity(DataType::kInt64, ReduceOp::kProduct, id.data(), 2);
  EXPECT_EQ(id[1], 1);
  std::vector<uint16_t> h(1);
  FillIdentity(DataType::kFloat16, ReduceOp::kMax, h.data(), 1);
  EXPECT_TRUE(std::isinf(HalfToFloat(h[0])) && HalfToFloat(h[0]) < 0);
}

Tensor T(int64_t count, DataType dt = DataType::kFloat32) {
  static char dummy[8];
  return Tensor{dummy, count, dt};
}

TEST(Packing, FollowsTfGroupBySize) {
  // TF: a new pack starts once the current one is *larger* than bytes_per_pack.
  std::vector<Tensor> ts{T(10), T(10), T(10), T(1), T(30)};  // 40, 40, 40, 4, 120 bytes
  auto packs = PlanPacks(ts, 80);
  ASSERT_EQ(packs.size(), 2u);
  EXPECT_EQ(packs[0].tensors, (std::vector<size_t>{0, 1, 2}));  // 80 is not > 80, so the third joins
  EXPECT_EQ(packs[0].bytes, 120u);
  EXPECT_EQ(packs[1].tensors, (std::vector<size_t>{3, 4}));
  auto one_each = PlanPacks(ts, 1);
  EXPECT_EQ(one_each.size(), 5u);
  auto huge = PlanPacks(ts, int64_t{1} << 40);
  ASSERT_EQ(huge.size(), 1u);
  EXPECT_EQ(huge[0].count, 61u);
}

TEST(Packing, DtypesNeverSharePackAndEmptyTensorsAreSkipped) {
  std::vector<Tensor> ts{T(4), T(2, DataType::kInt64), T(0),
                         T(4), T(3, DataType::kInt64), T(1, DataType::kFloat16)};
  auto packs = PlanPacks(ts, int64_t{1} << 30);
  ASSERT_EQ(packs.size(), 3u);
  EXPECT_EQ(packs[0].dtype, DataType::kFloat32);
  EXPECT_EQ(packs[0].tensors, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(packs[1].dtype, DataType::kInt64);
  EXPECT_EQ(packs[1].tensors, (std::vector<size_t>{1, 4}));
  EXPECT_EQ(packs[1].bytes, 40u);
  EXPECT_EQ(packs[2].dtype, DataType::kFloat16);
  EXPECT_TRUE(PlanPacks(std::vector<Tensor>{T(0)}, 100).empty());
}

TEST(Packing, TheAgentsOwnPackingNeverStagesALargeTensor) {
  // A Dense model's gradients: kernel, bias, kernel, bias... (bytes 400, 8, 1600, 8, 40, 4).
  std::vector<Tensor> ts{T(100), T(2), T(400), T(2), T(10), T(1)};
  auto packs = PlanPacks(ts, 1000, /*alone_from=*/100);
  ASSERT_EQ(packs.size(), 4u);
  EXPECT_EQ(packs[0].tensors, (std::vector<size_t>{0}));  // large: alone, reduced in place
  EXPECT_EQ(packs[1].tensors, (std::vector<size_t>{1}));  // the bias after it starts a new pack
  EXPECT_EQ(packs[2].tensors, (std::vector<size_t>{2}));
  EXPECT_EQ(packs[3].tensors, (std::vector<size_t>{3, 4, 5}));  // small ones still grouped
  EXPECT_EQ(packs[3].bytes, 52u);
  // Without alone_from (an explicit bytes_per_pack: TF's rule), the large ones share packs.
  auto tf_rule = PlanPacks(ts, 1000);
  ASSERT_EQ(tf_rule.size(), 2u);
  EXPECT_EQ(tf_rule[0].tensors, (std::vector<size_t>{0, 1, 2}));
}

TEST(Packing, AutoSizeIsBounded) {
  EXPECT_EQ(AutoBytesPerPack(100, 2), kMinAutoPack);
  EXPECT_EQ(AutoBytesPerPack(size_t{1} << 34, 2), kMaxAutoPack);
  EXPECT_EQ(AutoBytesPerPack(size_t{32} << 20, 2), int64_t{8} << 20);
}

TEST(Algorithms, FallbackThresholdsNeverFoldBeyondSmallSizes) {
  EXPECT_EQ(FallbackAlgorithm(1024, 4), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(FallbackAlgorithm(64 << 20, 4), Algorithm::kRing);
  EXPECT_EQ(FallbackAlgorithm(1 << 20, 4), Algorithm::kHalvingDoubling);
  EXPECT_EQ(FallbackAlgorithm(1 << 20, 2), Algorithm::kRing);
  EXPECT_EQ(FallbackAlgorithm(16 << 10, 2), Algorithm::kRecursiveDoubling);
  for (int n : {3, 5, 6, 7}) {
    EXPECT_EQ(FallbackAlgorithm(4 << 10, n), Algorithm::kRecursiveDoubling) << n;
    EXPECT_EQ(FallbackAlgorithm(16 << 10, n), Algorithm::kRing) << n;
    EXPECT_EQ(FallbackAlgorithm(1 << 20, n), Algorithm::kRing) << n;
  }
  EXPECT_EQ(ChooseByModel(LinkModel{}, 1 << 20, 3), Algorithm::kRing);  // no model: the fallback
}

// Figures of the same order as the probe measured (docs/benchmarks/network.md):
// 1 Gbit/s veths shaped by tbf, and 127.0.0.1 on a 2-vCPU machine.
LinkModel GigabitLink() {
  return {35e-6, 8.37e-9, 0.3e-9};
}
LinkModel Loopback() {
  return {14e-6, 0.8e-9, 0.3e-9};
}

TEST(Algorithms, OptionsForceBeforeTheHintBeforeTheModel) {
  CommunicationOptions o;
  EXPECT_EQ(ChooseAlgorithm(o, 1 << 20, 3, GigabitLink()), Algorithm::kRing);
  o.implementation = Implementation::kRing;
  EXPECT_EQ(ChooseAlgorithm(o, 8, 4, GigabitLink()), Algorithm::kRing);
  o.implementation = Implementation::kNccl;
  EXPECT_EQ(ChooseAlgorithm(o, 8, 4, Loopback()), Algorithm::kRing);
  o.algorithm = Algorithm::kHalvingDoubling;
  EXPECT_EQ(ChooseAlgorithm(o, 8, 4, Loopback()), Algorithm::kHalvingDoubling);
}

TEST(Algorithms, TheModelChargesAFoldForEveryGroupThatIsNotAPowerOfTwo) {
  const LinkModel m = GigabitLink();
  const size_t mib = 1 << 20;
  // The ring's wire time tends to 2 (n-1)/n of the bytes per link.
  const double ring4 = ModelSeconds(m, Algorithm::kRing, mib, 4);
  EXPECT_NEAR(ring4, 6 * m.alpha_s + 1.5 * mib * m.beta_s_per_byte + 0.75 * mib * m.gamma_s_per_byte, 1e-12);
  // Halving-doubling moves the ring's bytes at a power of two; at 3 and 6
  // the fold moves the whole vector twice more.
  const double hd4 = ModelSeconds(m, Algorithm::kHalvingDoubling, mib, 4);
  EXPECT_NEAR(hd4, 4 * m.alpha_s + 0.75 * mib * (2 * m.beta_s_per_byte + m.gamma_s_per_byte), 1e-12);
  for (int n : {3, 6}) {
    EXPECT_GT(ModelSeconds(m, Algorithm::kHalvingDoubling, mib, n),
              1.5 * ModelSeconds(m, Algorithm::kRing, mib, n))
        << n;
  }
  EXPECT_EQ(ModelSeconds(m, Algorithm::kRing, mib, 1), 0);
  EXPECT_EQ(ModelSeconds(m, Algorithm::kRing, 0, 4), 0);
}

TEST(Algorithms, AutoOnALinkFollowsTheBytesAndOnLoopbackTheLatency) {
  const size_t kib = 1024, mib = kib * kib;
  for (const LinkModel& m : {GigabitLink(), Loopback()}) {
    for (int n = 2; n <= 8; ++n) EXPECT_EQ(ChooseByModel(m, 4 * kib, n), Algorithm::kRecursiveDoubling) << n;
    for (int n : {3, 5, 6, 7}) {  // no fold at sizes where the bytes count
      EXPECT_EQ(ChooseByModel(m, 4 * mib, n), Algorithm::kRing) << n;
    }
    EXPECT_EQ(ChooseByModel(m, 64 * mib, 4), Algorithm::kRing);
  }
  // 1 Gbit/s: the bytes dominate from tens of KiB on.
  EXPECT_EQ(ChooseByModel(GigabitLink(), 1 * mib, 3), Algorithm::kRing);
  EXPECT_EQ(ChooseByModel(GigabitLink(), 64 * kib, 4), Algorithm::kHalvingDoubling);
  EXPECT_EQ(ChooseByModel(GigabitLink(), 64 * kib, 8), Algorithm::kHalvingDoubling);
  EXPECT_EQ(ChooseByModel(GigabitLink(), 4 * mib, 8), Algorithm::kRing);
  // Loopback: latency still counts at hundreds of KiB.
  EXPECT_EQ(ChooseByModel(Loopback(), 256 * kib, 4), Algorithm::kHalvingDoubling);
  EXPECT_EQ(ChooseByModel(Loopback(), 16 * kib, 4), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(ChooseByModel(Loopback(), 16 * kib, 2), Algorithm::kRecursiveDoubling);
}

// Runs `fn(transport)` on n threads over one fabric.
template <typename F>
void OnFabric(int n, F fn) {
  LocalFabric fabric(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      LocalTransport t(&fabric, r);
      fn(t);
    });
  }
  for (auto& th : threads) th.join();
}

TEST(LinkProbe, EveryMemberHoldsTheSameKnownModel) {
  for (int n = 1; n <= 5; ++n) {
    std::vector<LinkModel> models(n);
    OnFabric(n, [&](Transport& t) {
      Status s = ProbeLinks(t, DeadlineAfter(60), &models[t.rank()]);
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(models[r].known(), n > 1) << "n " << n << " rank " << r;
      EXPECT_EQ(models[r].alpha_s, models[0].alpha_s) << "n " << n << " rank " << r;
      EXPECT_EQ(models[r].beta_s_per_byte, models[0].beta_s_per_byte);
      EXPECT_EQ(models[r].gamma_s_per_byte, models[0].gamma_s_per_byte);
      if (n > 1) {
        EXPECT_GT(models[r].gamma_s_per_byte, 0);
        EXPECT_LT(models[r].alpha_s, 60);
      }
    }
  }
}

TEST(LinkProbe, AMemberThatNeverProbesFailsItWithinTheDeadline) {
  LocalFabric fabric(3);
  std::vector<Status> st(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {  // rank 2 never comes
    threads.emplace_back([&, r] {
      LocalTransport t(&fabric, r);
      LinkModel m;
      st[r] = ProbeLinks(t, DeadlineAfter(0.2), &m);
      EXPECT_FALSE(m.known());
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& s : st) EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
}

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

// The C API's enums, the C++ ones and the names all come from enums.h.
TEST(EnumTable, TheCApiReadsTheOneTable) {
  static_assert(static_cast<int>(RM_BOOL) == static_cast<int>(DataType::kBool));
  static_assert(static_cast<int>(RM_PRODUCT) == static_cast<int>(ReduceOp::kProduct));
  static_assert(static_cast<int>(RM_NCCL) == static_cast<int>(Implementation::kNccl));
  static_assert(static_cast<int>(RM_ALGORITHM_HALVING_DOUBLING) ==
                static_cast<int>(Algorithm::kHalvingDoubling));
  EXPECT_STREQ(rm_dtype_name(RM_BFLOAT16), "bfloat16");
  EXPECT_STREQ(rm_reduce_op_name(RM_MEAN), "mean");
  EXPECT_STREQ(rm_implementation_name(RM_RING), "RING");
  EXPECT_STREQ(rm_algorithm_name(RM_ALGORITHM_RECURSIVE_DOUBLING), "recursive_doubling");
  EXPECT_EQ(rm_dtype_name(11), nullptr);
  EXPECT_EQ(rm_algorithm_name(-1), nullptr);
  int v = -1;
  EXPECT_EQ(rm_parse_reduce_op("PROD", "op", &v), RM_OK);
  EXPECT_EQ(v, RM_PRODUCT);
  EXPECT_EQ(rm_parse_algorithm("hd", nullptr, &v), RM_OK);
  EXPECT_EQ(v, RM_ALGORITHM_HALVING_DOUBLING);
  EXPECT_EQ(rm_parse_dtype("int16", "x.dtype", &v), RM_OK);
  EXPECT_EQ(v, RM_INT16);
  EXPECT_EQ(rm_parse_implementation("tree", "options.implementation", &v), RM_INVALID_ARGUMENT);
  EXPECT_STREQ(
      rm_last_error(),
      "InvalidArgument: options.implementation: unknown implementation 'tree', expected one of AUTO, "
      "RING, NCCL");
  EXPECT_EQ(rm_parse_dtype(nullptr, "x", &v), RM_INVALID_ARGUMENT);
}

TEST(EnumTable, OptionsStartFromTheInitializer) {
  const rm_options init = RM_OPTIONS_INIT;
  const rm_options def = rm_default_options();
  EXPECT_EQ(init.magic, RM_OPTIONS_MAGIC);
  EXPECT_EQ(def.magic, RM_OPTIONS_MAGIC);
  EXPECT_EQ(init.size, sizeof(rm_options));
  EXPECT_EQ(def.size, sizeof(rm_options));
  EXPECT_EQ(def.bytes_per_pack, 0);
  EXPECT_EQ(def.timeout_seconds, RM_TIMEOUT_KEEP);
  EXPECT_EQ(def.implementation, RM_AUTO);
  EXPECT_EQ(def.algorithm, RM_ALGORITHM_AUTO);
}

// The layout before the magic (a size_t size first): an old caller's struct
// is refused, naming the field, instead of read with shifted fields.
TEST(EnumTable, OptionsOfAnotherLayoutAreRefused) {
  struct OldOptions {
    size_t size;
    int64_t bytes_per_pack;
    double timeout_seconds;
    int implementation, algorithm;
  } old{sizeof(OldOptions), 1 << 20, 5.0, RM_RING, RM_ALGORITHM_AUTO};
  static_assert(sizeof(OldOptions) == sizeof(rm_options));
  rm_options as_seen;
  std::memcpy(&as_seen, &old, sizeof old);
  auto o = ToOptions(&as_seen);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.status().message().find("options.magic: 0x00000020 is not RM_OPTIONS_MAGIC"), std::string::npos)
      << o.status().message();

  rm_options small = RM_OPTIONS_INIT;
  small.size = 8;  // magic and size only
  auto s = ToOptions(&small);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("options.size: 8 is too small"), std::string::npos)
      << s.status().message();

  rm_options good = RM_OPTIONS_INIT;
  good.bytes_per_pack = 4096;
  auto g = ToOptions(&good);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->bytes_per_pack, 4096);
}

}  // namespace
}  // namespace ringmaster::internal
