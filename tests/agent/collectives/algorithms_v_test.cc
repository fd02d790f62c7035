// The variable-size algorithms (collectives/algorithms_v.cc: all-gather-v,
// all-to-all, reduce-scatter) over the in-process transport: group sizes
// 1-5, uneven and empty blocks, every dtype, each result checked element by
// element against a locally computed one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/every_type.h"
#include "collectives/kernels.h"
#include "local_transport.h"

namespace ringmaster::internal {
namespace {

// OnFabric with each member's transport begun for one collective of 60 s.
template <typename F>
void OnBegunFabric(int n, F fn) {
  OnFabric(n, [&](LocalTransport& t) {
    t.Begin(1, DeadlineAfter(60));
    fn(t);
  });
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
        OnBegunFabric(n, [&](Transport& t) {
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
        OnBegunFabric(n, [&](Transport& t) {
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
          OnBegunFabric(n, [&](Transport& t) {
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

}  // namespace
}  // namespace ringmaster::internal
