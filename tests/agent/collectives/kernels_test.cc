// The reduction loops (collectives/kernels.h): every op and wide type,
// float16/bfloat16 conversions and rounding, the AVX2 build against the
// baseline, MEAN's divide and identities; the narrow integer types (every op
// in both builds, wrap-around, truncating MEAN) and bool left alone.
#include "collectives/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "collectives/every_type.h"
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

template <typename T>
std::vector<T> Apply(KernelIsa isa, DataType dt, ReduceOp op, std::vector<T> a, const std::vector<T>& b) {
  ReduceIntoWith(isa, dt, op, a.data(), b.data(), a.size());
  return a;
}

std::vector<KernelIsa> Isas() {
  std::vector<KernelIsa> out{KernelIsa::kBaseline};
  if (KernelIsaSupported(KernelIsa::kAvx2)) out.push_back(KernelIsa::kAvx2);
  return out;
}

// Each narrow type x each op, in both builds of the loops; SUM and PRODUCT
// wrap around (two's complement), as TensorFlow's integers do.
template <typename T>
void ExpectNarrowOps(DataType dt) {
  using L = std::numeric_limits<T>;
  const std::vector<T> a{L::max(), L::lowest(), T(3), T(7), T(L::max() / 2 + 1)};
  const std::vector<T> b{T(2), L::max(), T(5), T(1), T(2)};
  auto wrap = [](int64_t v) { return static_cast<T>(v); };  // modulo 2^bits (C++20)
  for (KernelIsa isa : Isas()) {
    std::vector<T> sum, prod, mn, mx;
    for (size_t i = 0; i < a.size(); ++i) {
      sum.push_back(wrap(int64_t(a[i]) + int64_t(b[i])));
      prod.push_back(wrap(int64_t(a[i]) * int64_t(b[i])));
      mn.push_back(std::min(a[i], b[i]));
      mx.push_back(std::max(a[i], b[i]));
    }
    EXPECT_EQ(Apply(isa, dt, ReduceOp::kSum, a, b), sum) << DataTypeName(dt);
    EXPECT_EQ(Apply(isa, dt, ReduceOp::kMean, a, b), sum) << DataTypeName(dt);  // MEAN reduces as SUM
    EXPECT_EQ(Apply(isa, dt, ReduceOp::kProduct, a, b), prod) << DataTypeName(dt);
    EXPECT_EQ(Apply(isa, dt, ReduceOp::kMin, a, b), mn) << DataTypeName(dt);
    EXPECT_EQ(Apply(isa, dt, ReduceOp::kMax, a, b), mx) << DataTypeName(dt);
  }
  EXPECT_EQ(
      Apply(KernelIsa::kBaseline, dt, ReduceOp::kSum, std::vector<T>{L::max()}, std::vector<T>{T(1)})[0],
      L::lowest())
      << DataTypeName(dt) << ": SUM wraps around";
  // MEAN's division truncates toward zero.
  std::vector<T> d{T(7), T(100), T(L::is_signed ? -7 : 8)};
  DivideBy(dt, d.data(), d.size(), 2);
  EXPECT_EQ(d, (std::vector<T>{T(3), T(50), T(L::is_signed ? -3 : 4)})) << DataTypeName(dt);
  // Identities: 0, 1, the largest (MIN), the smallest (MAX).
  std::vector<T> id(3);
  const std::pair<ReduceOp, T> ids[] = {{ReduceOp::kSum, T(0)},
                                        {ReduceOp::kMean, T(0)},
                                        {ReduceOp::kProduct, T(1)},
                                        {ReduceOp::kMin, L::max()},
                                        {ReduceOp::kMax, L::lowest()}};
  for (auto [op, want] : ids) {
    FillIdentity(dt, op, id.data(), id.size());
    EXPECT_EQ(id, std::vector<T>(3, want)) << DataTypeName(dt) << " " << ReduceOpName(op);
  }
  std::vector<T> e(2);
  StoreElement(dt, e.data(), 1, -1);  // wraps for unsigned types
  EXPECT_EQ(e[1], static_cast<T>(-1));
  EXPECT_EQ(LoadElement(dt, e.data(), 1), static_cast<double>(static_cast<T>(-1)));
}

TEST(Kernels, NarrowIntegersEveryOpWrapTruncateAndIdentity) {
  ExpectNarrowOps<uint8_t>(DataType::kUInt8);
  ExpectNarrowOps<int8_t>(DataType::kInt8);
  ExpectNarrowOps<uint16_t>(DataType::kUInt16);
  ExpectNarrowOps<int16_t>(DataType::kInt16);
}

TEST(Kernels, NamesSizesAndBoolIsBytes) {
  const char* names[] = {"uint8", "int8", "uint16", "int16"};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(DataTypeName(kNarrow[i]), names[i]);
  EXPECT_EQ(DataTypeName(DataType::kBool), "bool");
  EXPECT_EQ(DataTypeSize(DataType::kUInt8), 1u);
  EXPECT_EQ(DataTypeSize(DataType::kInt8), 1u);
  EXPECT_EQ(DataTypeSize(DataType::kUInt16), 2u);
  EXPECT_EQ(DataTypeSize(DataType::kInt16), 2u);
  EXPECT_EQ(DataTypeSize(DataType::kBool), 1u);
  uint8_t b[3] = {0, 0, 0};
  StoreElement(DataType::kBool, b, 1, 5);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(LoadElement(DataType::kBool, b, 1), 1.0);
  // Callers refuse bool reductions; the kernels leave it untouched (no UB).
  const uint8_t in[3] = {1, 1, 1};
  for (ReduceOp op : kEveryOp) ReduceInto(DataType::kBool, op, b, in, 3);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 1);
}

}  // namespace
}  // namespace ringmaster::internal
