// The narrow integer and bool dtypes in the kernels, and the variable-size
// collectives (all-gather-v, all-to-all, reduce-scatter) over the in-process
// transport: group sizes 1-5, uneven and empty blocks, every dtype, each
// result checked element by element against a locally computed one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/kernels.h"
#include "group/failure_messages.h"
#include "group/flight_recorder_ring.h"
#include "local_transport.h"

namespace ringmaster::internal {
namespace {

constexpr DataType kNarrow[] = {DataType::kUInt8, DataType::kInt8, DataType::kUInt16, DataType::kInt16};
constexpr DataType kEveryType[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                   DataType::kFloat64, DataType::kInt32,    DataType::kInt64,
                                   DataType::kUInt8,   DataType::kInt8,     DataType::kUInt16,
                                   DataType::kInt16,   DataType::kBool};
constexpr ReduceOp kEveryOp[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                                 ReduceOp::kProduct};

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

// ---- the algorithms over the in-process transport ----

template <typename F>
void OnFabric(int n, F fn) {
  LocalFabric fabric(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      LocalTransport t(&fabric, r);
      t.Begin(1, DeadlineAfter(60));
      fn(t);
    });
  }
  for (auto& th : threads) th.join();
}

bool Signed(DataType dt) {
  return dt != DataType::kUInt8 && dt != DataType::kUInt16 && dt != DataType::kBool;
}
bool Integer(DataType dt) {
  return dt == DataType::kInt32 || dt == DataType::kInt64 || dt == DataType::kUInt8 ||
         dt == DataType::kInt8 || dt == DataType::kUInt16 || dt == DataType::kInt16;
}
bool Narrow(DataType dt) {
  return Integer(dt) && DataTypeSize(dt) <= 2;
}

// Member r's element i: exact in every dtype, the full range for the narrow
// integers (so SUM wraps), small factors for PRODUCT.
int64_t Value(DataType dt, ReduceOp op, int r, int64_t i) {
  if (dt == DataType::kBool) return (i + r) % 2;
  const uint64_t h = static_cast<uint64_t>(i) * 7919u + static_cast<uint64_t>(r) * 104729u + 13u;
  if (op == ReduceOp::kProduct) {
    const int64_t f = static_cast<int64_t>(h % 3) + 1;
    return Signed(dt) && (h / 3) % 2 ? -f : f;
  }
  const int64_t range = Narrow(dt) ? int64_t{1} << (8 * DataTypeSize(dt)) : 41;
  const int64_t v = static_cast<int64_t>(h % static_cast<uint64_t>(range));
  return Signed(dt) ? v - range / 2 : v;
}

// The bytes of `count` elements of member r's values from element `first`.
std::vector<char> Fill(DataType dt, ReduceOp op, int r, int64_t first, int64_t count) {
  std::vector<char> out(static_cast<size_t>(count) * DataTypeSize(dt) + 1);
  for (int64_t i = 0; i < count; ++i)
    StoreElement(dt, out.data(), static_cast<size_t>(i), static_cast<double>(Value(dt, op, r, first + i)));
  out.resize(out.size() - 1);
  return out;
}

// The reduction of element i over n members, stored in dt (wrapped for integers).
void StoreExpected(DataType dt, ReduceOp op, int n, int64_t i, void* base, size_t at) {
  int64_t acc = Value(dt, op, 0, i);
  for (int r = 1; r < n; ++r) {
    const int64_t v = Value(dt, op, r, i);
    acc = op == ReduceOp::kMin       ? std::min(acc, v)
          : op == ReduceOp::kMax     ? std::max(acc, v)
          : op == ReduceOp::kProduct ? acc * v
                                     : acc + v;
  }
  StoreElement(dt, base, at, static_cast<double>(acc));  // wraps
  if (op != ReduceOp::kMean) return;
  if (Integer(dt)) {
    StoreElement(dt, base, at, std::trunc(LoadElement(dt, base, at) / n));
  } else if (dt == DataType::kFloat64) {
    StoreElement(dt, base, at, static_cast<double>(acc) / n);
  } else {
    StoreElement(dt, base, at, static_cast<double>(static_cast<float>(acc) / static_cast<float>(n)));
  }
}

// Block sizes with zeros and uneven ones; `shape` picks among several.
std::vector<int64_t> Counts(int n, int shape) {
  std::vector<int64_t> c(n);
  for (int r = 0; r < n; ++r) {
    c[r] = shape == 0 ? 0 : shape == 1 ? (r * 3 + n) % 4 : shape == 2 ? (r == n - 1 ? 1000 : r % 2) : 5 + r;
  }
  return c;
}

int64_t Sum(const std::vector<int64_t>& v, size_t upto) {
  int64_t s = 0;
  for (size_t i = 0; i < upto && i < v.size(); ++i) s += v[i];
  return s;
}

TEST(AllGatherV, EveryGroupSizeDtypeAndBlockShape) {
  for (int n = 1; n <= 5; ++n) {
    for (int shape = 0; shape < 4; ++shape) {
      for (DataType dt : kEveryType) {
        const auto counts = Counts(n, shape);
        const size_t es = DataTypeSize(dt);
        const int64_t total = Sum(counts, n);
        std::vector<std::vector<char>> out(n, std::vector<char>(static_cast<size_t>(total) * es, 0x5a));
        std::vector<Status> st(n);
        OnFabric(n, [&](Transport& t) {
          const int r = t.rank();
          auto mine = Fill(dt, ReduceOp::kSum, r, 0, counts[r]);
          if (!mine.empty()) std::memcpy(out[r].data() + Sum(counts, r) * es, mine.data(), mine.size());
          st[r] = RingAllGatherV(t, out[r].data(), counts, dt);
        });
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(st[r].ok()) << st[r].ToString();
          for (int b = 0; b < n; ++b) {
            auto want = Fill(dt, ReduceOp::kSum, b, 0, counts[b]);
            for (int64_t i = 0; i < counts[b]; ++i) {
              ASSERT_EQ(std::memcmp(out[r].data() + (Sum(counts, b) + i) * es, want.data() + i * es, es), 0)
                  << DataTypeName(dt) << " n " << n << " shape " << shape << " on " << r << " block " << b
                  << " element " << i;
            }
          }
        }
      }
    }
  }
}

// send_counts[dst] on src: uneven, some empty, and not symmetric.
int64_t PairCount(int src, int dst, int shape) {
  return shape == 0 ? 0 : shape == 1 ? (src * 2 + dst) % 3 : (src == dst ? 7 : (src + 3 * dst) % 5);
}

TEST(AllToAll, EveryGroupSizeDtypeAndBlockShape) {
  for (int n = 1; n <= 5; ++n) {
    for (int shape = 0; shape < 3; ++shape) {
      for (DataType dt : kEveryType) {
        const size_t es = DataTypeSize(dt);
        std::vector<std::vector<char>> out(n);
        std::vector<std::vector<int64_t>> recv(n, std::vector<int64_t>(n));
        std::vector<Status> st(n);
        for (int r = 0; r < n; ++r) {
          for (int s = 0; s < n; ++s) recv[r][s] = PairCount(s, r, shape);
          out[r].assign(static_cast<size_t>(Sum(recv[r], n)) * es, 0x5a);
        }
        OnFabric(n, [&](Transport& t) {
          const int r = t.rank();
          std::vector<int64_t> send(n);
          std::vector<char> in;
          // Block for dst: values of "member" r * n + dst, so each pair's data differs.
          for (int d = 0; d < n; ++d) {
            send[d] = PairCount(r, d, shape);
            auto b = Fill(dt, ReduceOp::kSum, r * n + d, 0, send[d]);
            in.insert(in.end(), b.begin(), b.end());
          }
          st[r] = PairwiseAllToAll(t, in.data(), send, out[r].data(), recv[r], dt);
        });
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(st[r].ok()) << st[r].ToString();
          for (int s = 0; s < n; ++s) {
            auto want = Fill(dt, ReduceOp::kSum, s * n + r, 0, recv[r][s]);
            for (int64_t i = 0; i < recv[r][s]; ++i) {
              ASSERT_EQ(std::memcmp(out[r].data() + (Sum(recv[r], s) + i) * es, want.data() + i * es, es), 0)
                  << DataTypeName(dt) << " n " << n << " shape " << shape << " on " << r << " from " << s
                  << " element " << i;
            }
          }
        }
      }
    }
  }
}

TEST(ReduceScatter, EveryGroupSizeDtypeOpAndBlockShape) {
  for (int n = 1; n <= 5; ++n) {
    for (int shape = 0; shape < 4; ++shape) {
      for (DataType dt : kEveryType) {
        if (dt == DataType::kBool) continue;  // refused by the engine (below)
        for (ReduceOp op : kEveryOp) {
          const auto counts = Counts(n, shape);
          const size_t es = DataTypeSize(dt);
          const int64_t total = Sum(counts, n);
          std::vector<std::vector<char>> out(n);
          std::vector<Status> st(n);
          for (int r = 0; r < n; ++r) out[r].assign(static_cast<size_t>(counts[r]) * es, 0x5a);
          OnFabric(n, [&](Transport& t) {
            const int r = t.rank();
            const auto in = Fill(dt, op, r, 0, total);
            const auto copy = in;
            st[r] = RingReduceScatter(t, in.data(), counts, out[r].data(), dt, op);
            if (st[r].ok() && op == ReduceOp::kMean && n > 1)
              DivideBy(dt, out[r].data(), static_cast<size_t>(counts[r]), n);
            EXPECT_EQ(in, copy) << "the input is only read";
          });
          for (int r = 0; r < n; ++r) {
            ASSERT_TRUE(st[r].ok()) << st[r].ToString();
            std::vector<char> want(es + 8);
            for (int64_t i = 0; i < counts[r]; ++i) {
              StoreExpected(dt, op, n, Sum(counts, r) + i, want.data(), 0);
              ASSERT_EQ(std::memcmp(out[r].data() + i * es, want.data(), es), 0)
                  << DataTypeName(dt) << " " << ReduceOpName(op) << " n " << n << " shape " << shape << " on "
                  << r << " element " << i << ": got "
                  << LoadElement(dt, out[r].data(), static_cast<size_t>(i)) << ", want "
                  << LoadElement(dt, want.data(), 0);
            }
          }
        }
      }
    }
  }
}

TEST(FlightRecorder, NewKindsAreNamedAndAllToAllSizesMayDiffer) {
  EXPECT_STREQ(OpKindName(OpKind::kAllToAll), "all-to-all");
  EXPECT_STREQ(OpKindName(OpKind::kReduceScatter), "reduce-scatter");
  OpInfo mine;
  mine.kind = OpKind::kAllToAll;
  mine.dtype = DataType::kUInt8;
  mine.bytes = 10;
  std::vector<ProgressReport> reports(2);
  reports[1].progress = Progress::kRunning;
  reports[1].info = mine;
  reports[1].info.bytes = 99;  // each member sends what it has
  EXPECT_TRUE(DescribeMismatch(7, 0, mine, {"a", "b"}, reports).ok());
  reports[1].info.dtype = DataType::kInt16;
  Status s = DescribeMismatch(7, 0, mine, {"a", "b"}, reports);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("all-to-all, 10 bytes of uint8"), std::string::npos) << s.message();
  mine.kind = reports[1].info.kind = OpKind::kReduceScatter;
  reports[1].info.dtype = DataType::kUInt8;
  EXPECT_FALSE(DescribeMismatch(7, 0, mine, {"a", "b"}, reports).ok()) << "reduce-scatter sizes must agree";
}

}  // namespace
}  // namespace ringmaster::internal
