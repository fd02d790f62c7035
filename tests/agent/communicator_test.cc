// The Communicator (communicator.cc) over TCP on 127.0.0.1 (one thread per
// member, so the sanitizers see every thread): every dtype and op, awkward
// sizes, packing, the async form and handles, broadcast/all-gather/barrier/
// reduce, out of place, and option validation and merging at the API.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>

#include "collectives/kernels.h"
#include "group_util.h"

namespace ringmaster {
namespace {

using testing::FormGroup;
using testing::Group;
using testing::LocalSettings;
using testing::OnAll;

// A typed buffer filled with small integers.
struct Buf {
  DataType dt;
  std::vector<char> bytes;
  Buf(DataType d, int64_t count) : dt(d), bytes(static_cast<size_t>(count) * DataTypeSize(d)) {}
  int64_t count() const { return static_cast<int64_t>(bytes.size() / DataTypeSize(dt)); }
  Tensor tensor() { return Tensor{bytes.data(), count(), dt}; }
  // Integers wrap (a negative value in an unsigned type), halves round.
  void Set(int64_t i, double v) { internal::StoreElement(dt, bytes.data(), static_cast<size_t>(i), v); }
  double Get(int64_t i) const { return internal::LoadElement(dt, bytes.data(), static_cast<size_t>(i)); }
};

// Contribution is periodic in the element's index, with period kPeriod (9
// for the sums, 6 for the products), and so is the expected result.
constexpr int64_t kPeriod = 18;
int64_t Contribution(ReduceOp op, int rank, int64_t i, int salt) {
  if (op == ReduceOp::kProduct) return (i + rank + salt) % 3 == 0 ? 2 : ((i + rank) % 2 ? -1 : 1);
  return ((i * 5 + rank * 3 + salt) % 9) - 4;
}

double Expected(DataType dt, ReduceOp op, int n, int64_t i, int salt) {
  const bool integer = dt != DataType::kFloat16 && dt != DataType::kBFloat16 && dt != DataType::kFloat32 &&
                       dt != DataType::kFloat64;
  // Integers wrap around in the dtype (a negative contribution to uint8 is
  // large, which MIN and MAX see).
  auto in_dtype = [&](int64_t v) {
    if (!integer) return v;
    Buf w(dt, 1);
    w.Set(0, double(v));
    return int64_t(w.Get(0));
  };
  int64_t acc = in_dtype(Contribution(op, 0, i, salt));
  for (int r = 1; r < n; ++r) {
    int64_t c = in_dtype(Contribution(op, r, i, salt));
    if (op == ReduceOp::kSum || op == ReduceOp::kMean)
      acc += c;
    else if (op == ReduceOp::kProduct)
      acc = in_dtype(acc * c);  // wrapped at every step: 65535^5 would overflow int64
    else if (op == ReduceOp::kMin)
      acc = std::min(acc, c);
    else
      acc = std::max(acc, c);
  }
  if (integer) {
    const double v = double(in_dtype(acc));
    return op == ReduceOp::kMean ? std::trunc(v / n) : v;  // MEAN truncates
  }
  if (op != ReduceOp::kMean) return double(acc);
  if (dt == DataType::kFloat64) return double(acc) / n;
  float m = float(acc) / float(n);
  Buf b(dt, 1);
  b.Set(0, m);  // halves round the float quotient
  return b.Get(0);
}

// Every dtype that reduces (bool moves only: see collectives/collectives_v_test.cc).
const DataType kAllTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                              DataType::kInt32,   DataType::kInt64,    DataType::kUInt8,   DataType::kInt8,
                              DataType::kUInt16,  DataType::kInt16};
const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kProduct};

class GroupSizes : public ::testing::TestWithParam<int> {};

TEST_P(GroupSizes, EveryDtypeAndOpWithAwkwardSizes) {
  const int n = GetParam();
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]) << "member " << r << " did not form";
  // Counts: empty, one element, not divisible by n, and big enough for the ring.
  const std::vector<int64_t> counts = {0, 1, n + 1, 2 * n - 1, 1000003 / 8};
  std::vector<std::string> failures(n);
  OnAll(n, [&](int r) {
    int salt = 0;
    for (DataType dt : kAllTypes) {
      for (ReduceOp op : kAllOps) {
        for (int64_t count : counts) {
          for (Implementation impl : {Implementation::kAuto, Implementation::kRing}) {
            ++salt;
            Buf b(dt, count);
            for (int64_t i = 0; i < count; ++i) b.Set(i, double(Contribution(op, r, i, salt)));
            Tensor t = b.tensor();
            CommunicationOptions o;
            o.implementation = impl;
            Status s = g[r]->AllReduce({&t, 1}, op, o);
            if (!s.ok()) {
              failures[r] = s.ToString();
              return;
            }
            double wants[kPeriod];
            for (int64_t k = 0; k < kPeriod; ++k) wants[k] = Expected(dt, op, n, k, salt);
            for (int64_t i = 0; i < count; ++i) {
              const double want = wants[i % kPeriod];
              if (b.Get(i) != want) {
                failures[r] = std::string(DataTypeName(dt)) + " " + std::string(ReduceOpName(op)) +
                              " count " + std::to_string(count) + " element " + std::to_string(i) + ": got " +
                              std::to_string(b.Get(i)) + " want " + std::to_string(want);
                return;
              }
            }
          }
        }
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

TEST_P(GroupSizes, ThousandsOfTinyTensorsAndMixedDtypesInOneCall) {
  const int n = GetParam();
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<std::string> failures(n);
  OnAll(n, [&](int r) {
    for (int64_t bytes_per_pack : {int64_t{0}, int64_t{1}, int64_t{4096}}) {
      std::vector<Buf> bufs;
      const DataType cycle[] = {DataType::kFloat32, DataType::kInt64, DataType::kFloat16, DataType::kFloat64};
      for (int k = 0; k < 3000; ++k) bufs.emplace_back(cycle[k % 4], k % 7);  // sizes 0..6
      std::vector<Tensor> ts;
      for (size_t k = 0; k < bufs.size(); ++k) {
        for (int64_t i = 0; i < bufs[k].count(); ++i)
          bufs[k].Set(i, double(Contribution(ReduceOp::kSum, r, i, int(k))));
        ts.push_back(bufs[k].tensor());
      }
      CommunicationOptions o;
      o.bytes_per_pack = bytes_per_pack;
      Status s = g[r]->AllReduce(ts, ReduceOp::kSum, o);
      if (!s.ok()) {
        failures[r] = s.ToString();
        return;
      }
      for (size_t k = 0; k < bufs.size(); ++k) {
        for (int64_t i = 0; i < bufs[k].count(); ++i) {
          if (bufs[k].Get(i) != Expected(bufs[k].dt, ReduceOp::kSum, n, i, int(k))) {
            failures[r] = "tensor " + std::to_string(k) + " element " + std::to_string(i) + " wrong (pack " +
                          std::to_string(bytes_per_pack) + ")";
            return;
          }
        }
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

TEST_P(GroupSizes, AsyncBroadcastAllGatherBarrier) {
  const int n = GetParam();
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  std::vector<std::string> failures(n);
  OnAll(n, [&](int r) {
    auto fail = [&](const std::string& m) {
      if (failures[r].empty()) failures[r] = m;
    };
    // Several async calls in flight at once, waited in reverse order.
    std::vector<std::vector<int32_t>> data(5, std::vector<int32_t>(300001));
    std::vector<CollectiveHandle> hs;
    for (int c = 0; c < 5; ++c) {
      for (size_t i = 0; i < data[c].size(); ++i) data[c][i] = int32_t(i % 100) + r + c;
      Tensor t{data[c].data(), int64_t(data[c].size()), DataType::kInt32};
      CommunicationOptions o;
      o.bytes_per_pack = 100000;
      hs.push_back(g[r]->AllReduceAsync({&t, 1}, ReduceOp::kSum, o));
    }
    for (int c = 4; c >= 0; --c) {
      Status s = hs[c].Wait();
      if (!s.ok()) return fail(s.ToString());
      EXPECT_TRUE(hs[c].Done());
      for (size_t i = 0; i < data[c].size(); ++i) {
        int32_t want = n * (int32_t(i % 100) + c) + n * (n - 1) / 2;
        if (data[c][i] != want)
          return fail("async call " + std::to_string(c) + " wrong at " + std::to_string(i));
      }
    }
    for (int root = 0; root < n; ++root) {
      std::vector<double> v(77777, r == root ? 0.5 + root : -1.0);
      Tensor t{v.data(), int64_t(v.size()), DataType::kFloat64};
      Status s = g[r]->Broadcast({&t, 1}, root);
      if (!s.ok()) return fail(s.ToString());
      for (double x : v) {
        if (x != 0.5 + root) return fail("broadcast from " + std::to_string(root) + " wrong");
      }
    }
    std::vector<int64_t> in(5), out(5 * n, -1);
    for (int k = 0; k < 5; ++k) in[k] = r * 100 + k;
    Status s =
        g[r]->AllGather(Tensor{in.data(), 5, DataType::kInt64}, Tensor{out.data(), 5 * n, DataType::kInt64});
    if (!s.ok()) return fail(s.ToString());
    for (int b = 0; b < n; ++b) {
      for (int k = 0; k < 5; ++k) {
        if (out[b * 5 + k] != b * 100 + k) return fail("all-gather wrong");
      }
    }
    for (int k = 0; k < 3; ++k) {
      s = g[r]->Barrier();
      if (!s.ok()) return fail(s.ToString());
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Engine, GroupSizes, ::testing::Values(1, 2, 3, 4, 5));

TEST(Reduce, MeanAlongBatchAxisWeighsShortBatches) {
  const int n = 3;
  Group g = FormGroup(LocalSettings(n));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(g[r]);
  // Member r holds a [batch_r, 2] value with batch sizes 4, 4 and a short 1.
  const int64_t batch[3] = {4, 4, 1};
  std::vector<std::vector<float>> out(n, std::vector<float>(2));
  std::vector<Status> st(n), st_sum(n), st_none(n);
  std::vector<std::vector<float>> sums(n, std::vector<float>(2)), whole(n);
  OnAll(n, [&](int r) {
    std::vector<float> v;
    for (int64_t b = 0; b < batch[r]; ++b) {
      v.push_back(float(r * 10 + b));
      v.push_back(1.0f);
    }
    int64_t shape[2] = {batch[r], 2};
    Tensor value{v.data(), int64_t(v.size()), DataType::kFloat32};
    st[r] = g[r]->Reduce(ReduceOp::kMean, value, shape, 0, Tensor{out[r].data(), 2, DataType::kFloat32});
    st_sum[r] = g[r]->Reduce(ReduceOp::kSum, value, shape, -2, Tensor{sums[r].data(), 2, DataType::kFloat32});
    whole[r] = std::vector<float>{float(r), 2.0f};
    int64_t shape1[1] = {2};
    Tensor w{whole[r].data(), 2, DataType::kFloat32};
    st_none[r] = g[r]->Reduce(ReduceOp::kMean, w, shape1, std::nullopt, w);
  });
  // Column 0: (0+1+2+3) + (10+11+12+13) + 20 = 72 over 9 rows; column 1: 9 / 9.
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(st[r].ok()) << st[r].ToString();
    EXPECT_EQ(out[r][0], 72.0f / 9.0f);
    EXPECT_EQ(out[r][1], 1.0f);
    ASSERT_TRUE(st_sum[r].ok()) << st_sum[r].ToString();
    EXPECT_EQ(sums[r][0], 72.0f);
    EXPECT_EQ(sums[r][1], 9.0f);
    ASSERT_TRUE(st_none[r].ok());
    EXPECT_EQ(whole[r][0], 1.0f);  // (0 + 1 + 2) / 3
    EXPECT_EQ(whole[r][1], 2.0f);
  }
  // A bad axis is rejected before any communication.
  std::vector<float> v(4);
  int64_t shape[2] = {2, 2};
  Status bad = g[0]->Reduce(ReduceOp::kMean, Tensor{v.data(), 4}, shape, 2, Tensor{v.data(), 2});
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("axis"), std::string::npos);
}

TEST(Options, ValidationNamesTheFieldAndMergeFollowsTf) {
  auto settings = LocalSettings(2);
  settings[0].defaults.bytes_per_pack = 1 << 20;
  settings[1].defaults.bytes_per_pack = 1 << 20;
  Group g = FormGroup(settings);
  ASSERT_TRUE(g[0] && g[1]);
  float x = 1;
  Tensor t{&x, 1, DataType::kFloat32};
  CommunicationOptions bad;
  bad.bytes_per_pack = -1;
  Status s = g[0]->AllReduce({&t, 1}, ReduceOp::kSum, bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bytes_per_pack"), std::string::npos) << s.message();
  bad = {};
  bad.timeout_seconds = -3;
  s = g[0]->AllReduce({&t, 1}, ReduceOp::kSum, bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("timeout_seconds"), std::string::npos) << s.message();
  s = g[0]->AllReduce({&t, 1}, static_cast<ReduceOp>(17));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // Host memory marked as GPU memory: Unimplemented without the GPU backend
  // (RINGMASTER_WITH_NCCL=OFF), Unavailable where the CUDA runtime cannot be
  // loaded, InvalidArgument where it can (the pointer is host memory). The
  // GPU backend's own tests are in tests/gpu.
  auto refused = [](const Status& st) {
    return st.code() == StatusCode::kUnimplemented || st.code() == StatusCode::kUnavailable ||
           st.code() == StatusCode::kInvalidArgument;
  };
  Tensor gpu{&x, 1, DataType::kFloat32, MemoryKind::kDevice};
  s = g[0]->AllReduce({&gpu, 1}, ReduceOp::kSum);
  EXPECT_TRUE(refused(s)) << s.ToString();
  CommunicationOptions nccl;
  nccl.implementation = Implementation::kNccl;
  s = g[0]->AllReduce({&gpu, 1}, ReduceOp::kSum, nccl);
  EXPECT_TRUE(refused(s)) << s.ToString();
  EXPECT_TRUE(g[0]->health().ok());
  // NCCL on host memory runs the ring (with one warning) and gives the right answer.
  std::vector<Status> st(2);
  std::vector<float> vals = {1, 2};
  OnAll(2, [&](int r) {
    Tensor tt{&vals[r], 1, DataType::kFloat32};
    st[r] = g[r]->AllReduce({&tt, 1}, ReduceOp::kSum, nccl);
  });
  EXPECT_TRUE(st[0].ok() && st[1].ok()) << st[0].ToString();
  EXPECT_EQ(vals[0], 3.0f);
  EXPECT_EQ(vals[1], 3.0f);
  // Broadcast from a rank that does not exist.
  s = g[0]->Broadcast({&t, 1}, 5);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("root"), std::string::npos);
  // Merge: per-call non-defaults win, defaults stay otherwise.
  CommunicationOptions job;
  job.bytes_per_pack = 100;
  job.timeout_seconds = 5;
  CommunicationOptions call;
  call.implementation = Implementation::kRing;
  auto m = job.Merge(call);
  EXPECT_EQ(m.bytes_per_pack, 100);
  EXPECT_EQ(m.timeout_seconds, 5);
  EXPECT_EQ(m.implementation, Implementation::kRing);
}

// CollectiveHandle::Then: an asynchronous framework kernel's completion, on
// the engine's thread, once, with the call's status.
TEST(Handles, ThenCallsBackOnceWithTheResult) {
  auto settings = LocalSettings(2);
  Group g = FormGroup(settings);
  ASSERT_TRUE(g[0] && g[1]);
  std::vector<std::vector<float>> data(2, std::vector<float>(100000));
  std::vector<std::promise<Status>> done(2);
  std::atomic<int> calls{0};
  OnAll(2, [&](int r) {
    for (size_t i = 0; i < data[r].size(); ++i) data[r][i] = float(r + 1) * float(i % 7);
    Tensor t{data[r].data(), int64_t(data[r].size()), DataType::kFloat32};
    CommunicationOptions o;
    o.bytes_per_pack = 64 * 1024;  // several packs: the callback comes after the last
    g[r]->AllReduceAsync({&t, 1}, ReduceOp::kSum, o).Then([&, r](const Status& s) {
      ++calls;
      done[r].set_value(s);
    });
  });
  for (int r = 0; r < 2; ++r) {
    auto f = done[r].get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    EXPECT_TRUE(f.get().ok());
    for (size_t i = 0; i < data[r].size(); i += 997) EXPECT_EQ(data[r][i], 3.0f * float(i % 7));
  }
  EXPECT_EQ(calls.load(), 2);
  // A handle that is already done calls back at once, on this thread.
  float x = 1;
  Tensor t{&x, 1, DataType::kFloat32};
  CollectiveHandle h;
  OnAll(2, [&](int r) {
    if (r == 0) {
      h = g[0]->AllReduceAsync({&t, 1}, ReduceOp::kSum);
      EXPECT_TRUE(h.Wait().ok());
    } else {
      float y = 2;
      Tensor u{&y, 1, DataType::kFloat32};
      EXPECT_TRUE(g[1]->AllReduce({&u, 1}, ReduceOp::kSum).ok());
    }
  });
  bool inline_call = false;
  h.Then([&](const Status& s) { inline_call = s.ok(); });
  EXPECT_TRUE(inline_call);
  EXPECT_EQ(x, 3.0f);
}

TEST(Handles, ThenReportsTheTimeout) {
  auto settings = LocalSettings(2);
  Group g = FormGroup(settings);
  ASSERT_TRUE(g[0] && g[1]);
  float x = 1;
  Tensor t{&x, 1, DataType::kFloat32};
  CommunicationOptions o;
  o.timeout_seconds = 0.5;
  std::promise<Status> done;
  g[0]->AllReduceAsync({&t, 1}, ReduceOp::kSum, o).Then([&](const Status& s) { done.set_value(s); });
  auto f = done.get_future();  // rank 1 never joins
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(f.get().code(), StatusCode::kDeadlineExceeded);
}

// Out of place: the input is read from `source`, which stays as it was; the
// result lands in `data`, whatever it held. One big tensor alone in its pack
// and small ones sharing a staged pack, both ways.
TEST(AllReduce, OutOfPlaceReadsSourceAndWritesData) {
  auto settings = LocalSettings(3);
  Group g = FormGroup(settings);
  ASSERT_TRUE(g[0] && g[1] && g[2]);
  const std::vector<int64_t> sizes = {300000, 7, 5, 1000};
  OnAll(3, [&](int r) {
    std::vector<std::vector<float>> in(sizes.size()), out(sizes.size());
    std::vector<Tensor> ts;
    for (size_t k = 0; k < sizes.size(); ++k) {
      in[k].resize(sizes[k]);
      for (int64_t i = 0; i < sizes[k]; ++i) in[k][i] = float((i + k) % 11) * float(r + 1);
      out[k].assign(sizes[k], -12345.0f);  // garbage the result must replace
      Tensor t{out[k].data(), sizes[k], DataType::kFloat32};
      t.source = in[k].data();
      ts.push_back(t);
    }
    CommunicationOptions o;
    o.bytes_per_pack = 64 * 1024;  // the big tensor alone, the small ones staged together
    ASSERT_TRUE(g[r]->AllReduce(ts, ReduceOp::kSum, o).ok());
    for (size_t k = 0; k < sizes.size(); ++k) {
      for (int64_t i = 0; i < sizes[k]; i += 97) {
        ASSERT_EQ(out[k][i], float((i + k) % 11) * 6.0f) << "tensor " << k << " element " << i;
        ASSERT_EQ(in[k][i], float((i + k) % 11) * float(r + 1)) << "the source must not change";
      }
    }
    // Only AllReduce takes a separate source.
    float x = 1, y = 2;
    Tensor b{&x, 1, DataType::kFloat32};
    b.source = &y;
    auto st = g[r]->Broadcast({&b, 1}, 0);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("tensors[0].source"), std::string::npos) << st.ToString();
  });
}

// The agent's own packing cuts a large lone tensor into slices, each its
// own pack reduced in place (collectives/packing.h): every element of every
// slice lands once, in place and out of place, with uneven slice sizes.
TEST(AllReduce, ALargeTensorCutIntoSlicesIsReducedWhole) {
  auto settings = LocalSettings(3);
  Group g = FormGroup(settings);
  ASSERT_TRUE(g[0] && g[1] && g[2]);
  const std::vector<int64_t> sizes = {(int64_t{1} << 20) + 3, 7, 5};  // 4 MiB + 12 B: 5 slices of ~1 MiB
  OnAll(3, [&](int r) {
    for (bool out_of_place : {false, true}) {
      std::vector<std::vector<float>> in(sizes.size()), out(sizes.size());
      std::vector<Tensor> ts;
      for (size_t k = 0; k < sizes.size(); ++k) {
        in[k].resize(sizes[k]);
        for (int64_t i = 0; i < sizes[k]; ++i) in[k][i] = float((i + 3 * k) % 13) * float(r + 1);
        out[k] = out_of_place ? std::vector<float>(sizes[k], -7.0f) : in[k];
        Tensor t{out[k].data(), sizes[k], DataType::kFloat32};
        if (out_of_place) t.source = in[k].data();
        ts.push_back(t);
      }
      ASSERT_TRUE(g[r]->AllReduce(ts, ReduceOp::kSum).ok());
      for (size_t k = 0; k < sizes.size(); ++k) {
        for (int64_t i = 0; i < sizes[k]; ++i)
          ASSERT_EQ(out[k][i], float((i + 3 * k) % 13) * 6.0f) << "tensor " << k << " element " << i;
      }
    }
  });
}

}  // namespace
}  // namespace ringmaster
