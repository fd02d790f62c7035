// Communicators on GPU memory with the fake CUDA/NCCL table (no GPU
// needed): AUTO/NCCL/RING dispatch, NCCL formation through the control plane
// (ranks = members x local GPUs), packing on the device, host staging,
// refusals, the GPU-count check, timeouts and aborts that abort NCCL, and a
// group that forms NCCL again after Reform().
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "collectives/kernels.h"
#include "fake_gpu.h"
#include "group_util.h"

namespace ringmaster {
namespace {

using testing::FormGroup;
using testing::Group;
using testing::LocalSettings;
using testing::OnAll;

constexpr DataType kAllTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                  DataType::kFloat64, DataType::kInt32,    DataType::kInt64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kProduct};

void Put(DataType dt, void* p, size_t i, double v) {
  internal::StoreElement(dt, p, i, v);
}
double Get(DataType dt, const void* p, size_t i) {
  return internal::LoadElement(dt, p, i);
}

bool IsInt(DataType dt) {
  return dt == DataType::kInt32 || dt == DataType::kInt64;
}

// Member m's (0-based, over all ranks) value of element i: small integers,
// exact in every type and under every op.
double Value(int m, size_t i) {
  return static_cast<double>((m + 1) * ((i % 3) + 1));
}

double Expected(ReduceOp op, DataType dt, int ranks, size_t i) {
  double acc = Value(0, i);
  for (int m = 1; m < ranks; ++m) {
    double v = Value(m, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        acc += v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      case ReduceOp::kProduct:
        acc *= v;
        break;
    }
  }
  if (op == ReduceOp::kMean) acc = IsInt(dt) ? std::trunc(acc / ranks) : acc / ranks;
  return acc;
}

class FakeGpu : public ::testing::Test {
 protected:
  void SetUp() override { fake::Install(2); }
  void TearDown() override { fake::Uninstall(); }
};

Tensor DeviceTensor(int device, int64_t count, DataType dt, MemoryKind kind = MemoryKind::kDevice) {
  return Tensor{fake::DeviceAlloc(device, static_cast<size_t>(count) * DataTypeSize(dt)), count, dt, kind};
}

TEST_F(FakeGpu, OneMemberEveryDtypeAndOpThroughNccl) {
  auto settings = LocalSettings(1);
  auto comm = Communicator::Create(settings[0]);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  for (DataType dt : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      Tensor t = DeviceTensor(0, 37, dt);
      for (size_t i = 0; i < 37; ++i) Put(dt, t.data, i, Value(0, i));
      CommunicationOptions o;
      o.implementation = Implementation::kNccl;
      Status s = (*comm)->AllReduce({&t, 1}, op, o);
      ASSERT_TRUE(s.ok()) << DataTypeName(dt) << " " << ReduceOpName(op) << ": " << s.ToString();
      for (size_t i = 0; i < 37; ++i) ASSERT_EQ(Get(dt, t.data, i), Value(0, i));
    }
  }
  auto st = fake::GetStats();
  EXPECT_EQ(st.comm_inits, 1);   // formed once, at the first GPU call
  EXPECT_EQ(st.allreduces, 30);  // one ncclAllReduce per call (one tensor: in place)
  EXPECT_EQ(st.d2d_copies, 0);
  EXPECT_EQ(st.host_allocs, 0);
}

TEST_F(FakeGpu, HostTensorsStayOnTheCpuEngine) {
  auto settings = LocalSettings(1);
  auto comm = Communicator::Create(settings[0]);
  ASSERT_TRUE(comm.ok());
  std::vector<float> v(10, 2.f);
  Tensor t{v.data(), 10, DataType::kFloat32};
  ASSERT_TRUE((*comm)->AllReduce({&t, 1}, ReduceOp::kSum).ok());
  EXPECT_EQ(fake::GetStats().allreduces, 0);
  EXPECT_EQ(fake::GetStats().comm_inits, 0);
}

TEST_F(FakeGpu, RefusalsNameTheTensor) {
  auto settings = LocalSettings(1);
  auto comm = Communicator::Create(settings[0]);
  ASSERT_TRUE(comm.ok());
  std::vector<float> host(4, 1.f);
  Tensor mixed[2] = {DeviceTensor(0, 4, DataType::kFloat32), Tensor{host.data(), 4, DataType::kFloat32}};
  Status s = (*comm)->AllReduce(mixed, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("tensors[1] is host memory but tensors[0] is on GPU 0"), std::string::npos)
      << s.message();
  // A device pointer the caller marked host is recognised as device memory.
  Tensor unmarked = DeviceTensor(0, 4, DataType::kFloat32, MemoryKind::kHost);
  Tensor mixed2[2] = {unmarked, Tensor{host.data(), 4, DataType::kFloat32}};
  EXPECT_EQ((*comm)->AllReduce(mixed2, ReduceOp::kSum).code(), StatusCode::kInvalidArgument);
  // Host memory marked as device memory.
  Tensor lie{host.data(), 4, DataType::kFloat32, MemoryKind::kDevice};
  s = (*comm)->AllReduce({&lie, 1}, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("its pointer is host memory"), std::string::npos) << s.message();
  // Only AllReduce takes GPU memory so far.
  Tensor d = DeviceTensor(0, 4, DataType::kFloat32);
  s = (*comm)->Broadcast({&d, 1}, 0);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  // None of that broke the group.
  EXPECT_TRUE((*comm)->health().ok());
  EXPECT_TRUE((*comm)->AllReduce({&d, 1}, ReduceOp::kSum).ok());
}

TEST_F(FakeGpu, ManyTensorsInManyPacksAreGroupedAndUnpacked) {
  auto settings = LocalSettings(1);
  auto comm = Communicator::Create(settings[0]);
  ASSERT_TRUE(comm.ok());
  std::vector<Tensor> ts;
  for (int i = 0; i < 300; ++i) {
    DataType dt = kAllTypes[i % 6];
    Tensor t = DeviceTensor(0, 1 + (i * 7) % 50, dt);
    for (int64_t j = 0; j < t.count; ++j)
      Put(dt, t.data, static_cast<size_t>(j), Value(0, static_cast<size_t>(j + i)));
    ts.push_back(t);
  }
  CommunicationOptions o;
  o.bytes_per_pack = 256;
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMax, o).ok());
  for (int i = 0; i < 300; ++i) {
    for (int64_t j = 0; j < ts[i].count; ++j) {
      ASSERT_EQ(Get(ts[i].dtype, ts[i].data, static_cast<size_t>(j)), Value(0, static_cast<size_t>(j + i)))
          << "tensor " << i << " element " << j;
    }
  }
  auto st = fake::GetStats();
  EXPECT_GT(st.allreduces, 6);                            // several packs ...
  EXPECT_EQ(st.group_starts, 1);                          // ... in one NCCL group
  EXPECT_GE(st.d2d_copies, 2 * 300 - 2 * st.allreduces);  // packed and unpacked (lone tensors in place)
}

TEST_F(FakeGpu, RingHintStagesThroughPinnedHostBuffers) {
  auto settings = LocalSettings(1);
  auto comm = Communicator::Create(settings[0]);
  ASSERT_TRUE(comm.ok());
  Tensor ts[3] = {DeviceTensor(0, 100, DataType::kFloat32), DeviceTensor(0, 5, DataType::kInt64),
                  DeviceTensor(0, 33, DataType::kFloat32)};
  for (auto& t : ts)
    for (int64_t j = 0; j < t.count; ++j)
      Put(t.dtype, t.data, static_cast<size_t>(j), Value(0, static_cast<size_t>(j)));
  CommunicationOptions o;
  o.implementation = Implementation::kRing;
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMean, o).ok());
  for (auto& t : ts)
    for (int64_t j = 0; j < t.count; ++j)
      ASSERT_EQ(Get(t.dtype, t.data, static_cast<size_t>(j)), Value(0, static_cast<size_t>(j)));
  auto st = fake::GetStats();
  EXPECT_EQ(st.allreduces, 0);
  EXPECT_EQ(st.comm_inits, 0);
  EXPECT_EQ(st.host_allocs, 1);
  EXPECT_EQ(st.d2h_copies, 3);
  EXPECT_EQ(st.h2d_copies, 3);
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMean, o).ok());
  EXPECT_EQ(fake::GetStats().host_allocs, 1);  // the staging buffers are kept
}

// n members x g GPUs each, all through one implementation; every rank's
// replica gets the reduction over all n * g ranks.
void RunGroup(int n, int g, Implementation impl, ReduceOp op, DataType dt, int tensors = 3) {
  auto settings = LocalSettings(n);
  Group group = FormGroup(settings);
  for (auto& c : group) ASSERT_TRUE(c);
  std::vector<std::vector<Tensor>> ts(n);
  for (int m = 0; m < n; ++m) {
    for (int k = 0; k < tensors; ++k) {
      for (int d = 0; d < g; ++d) {
        Tensor t = DeviceTensor(d, 11 + 5 * k, dt);
        for (int64_t j = 0; j < t.count; ++j)
          Put(dt, t.data, static_cast<size_t>(j), Value(m * g + d, static_cast<size_t>(j)));
        ts[m].push_back(t);
      }
    }
  }
  std::vector<Status> st(n);
  CommunicationOptions o;
  o.implementation = impl;
  o.bytes_per_pack = 64;
  OnAll(n, [&](int m) { st[m] = group[m]->AllReduce(ts[m], op, o); });
  for (int m = 0; m < n; ++m) {
    ASSERT_TRUE(st[m].ok()) << "member " << m << ": " << st[m].ToString();
    for (const Tensor& t : ts[m]) {
      for (int64_t j = 0; j < t.count; ++j) {
        ASSERT_EQ(Get(dt, t.data, static_cast<size_t>(j)), Expected(op, dt, n * g, static_cast<size_t>(j)))
            << "member " << m << " element " << j;
      }
    }
  }
}

TEST_F(FakeGpu, ThreeMembersThroughNcclWithTheIdFromRankZero) {
  RunGroup(3, 1, Implementation::kAuto, ReduceOp::kMean, DataType::kFloat32);
  auto st = fake::GetStats();
  EXPECT_EQ(st.unique_ids, 1);  // rank 0 made it; the others received it
  EXPECT_EQ(st.comm_inits, 3);
}

TEST_F(FakeGpu, TwoMembersTimesTwoGpusAreFourRanks) {
  RunGroup(2, 2, Implementation::kNccl, ReduceOp::kMean, DataType::kInt64);
  EXPECT_EQ(fake::GetStats().comm_inits, 4);
}

TEST_F(FakeGpu, TwoMembersTimesTwoGpusStagedThroughTheHost) {
  RunGroup(2, 2, Implementation::kRing, ReduceOp::kMean, DataType::kFloat64);
  RunGroup(3, 2, Implementation::kRing, ReduceOp::kProduct, DataType::kInt32, 7);
  EXPECT_EQ(fake::GetStats().comm_inits, 0);
}

TEST(FakeGpuNoNccl, AutoAndNcclStageWhenNcclIsMissing) {
  fake::Install(1, /*with_nccl=*/false);
  RunGroup(2, 1, Implementation::kAuto, ReduceOp::kSum, DataType::kBFloat16);
  RunGroup(2, 1, Implementation::kNccl, ReduceOp::kMin, DataType::kFloat16);
  EXPECT_EQ(fake::GetStats().allreduces, 0);
  EXPECT_GE(fake::GetStats().host_allocs, 2);
  fake::Uninstall();
}

TEST_F(FakeGpu, DifferentGpuCountsAreRefusedAtFormation) {
  auto settings = LocalSettings(2);
  Group group = FormGroup(settings);
  for (auto& c : group) ASSERT_TRUE(c);
  std::vector<std::vector<Tensor>> ts(2);
  ts[0] = {DeviceTensor(0, 4, DataType::kFloat32), DeviceTensor(1, 4, DataType::kFloat32)};
  ts[1] = {DeviceTensor(0, 4, DataType::kFloat32)};
  std::vector<Status> st(2);
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce(ts[m], ReduceOp::kSum); });
  for (int m = 0; m < 2; ++m) {
    EXPECT_EQ(st[m].code(), StatusCode::kFailedPrecondition) << st[m].ToString();
    EXPECT_NE(st[m].message().find("/job:chief/task:0 has 2, /job:worker/task:0 has 1"), std::string::npos)
        << st[m].message();
  }
}

TEST_F(FakeGpu, ATimeoutAbortsNcclOnEveryMemberAndReformWorks) {
  auto settings = LocalSettings(2);
  Group group = FormGroup(settings);
  for (auto& c : group) ASSERT_TRUE(c);
  std::vector<Tensor> ts = {DeviceTensor(0, 8, DataType::kFloat32), DeviceTensor(0, 8, DataType::kFloat32)};
  // First a good call, so NCCL is formed.
  std::vector<Status> st(2);
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce({&ts[m], 1}, ReduceOp::kSum); });
  ASSERT_TRUE(st[0].ok() && st[1].ok()) << st[0].ToString() << " / " << st[1].ToString();
  // NCCL rank 1 stops taking part: rank 0's all-reduce can never finish.
  fake::SetHangingRank(1);
  CommunicationOptions o;
  o.timeout_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce({&ts[m], 1}, ReduceOp::kSum, o); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 3.0);
  for (int m = 0; m < 2; ++m) {
    EXPECT_TRUE(st[m].code() == StatusCode::kDeadlineExceeded || st[m].code() == StatusCode::kAborted)
        << "member " << m << ": " << st[m].ToString();
  }
  EXPECT_EQ(st[0].code(), StatusCode::kDeadlineExceeded) << st[0].ToString();
  EXPECT_GE(fake::GetStats().comm_aborts, 2);  // every member aborted its communicator
  // Fail fast until Reform(), then a new NCCL communicator.
  EXPECT_EQ(group[0]->AllReduce({&ts[0], 1}, ReduceOp::kSum).code(), StatusCode::kAborted);
  fake::SetHangingRank(-1);
  OnAll(2, [&](int m) { st[m] = group[m]->Reform(); });
  ASSERT_TRUE(st[0].ok() && st[1].ok()) << st[0].ToString() << " / " << st[1].ToString();
  for (int m = 0; m < 2; ++m)
    for (int j = 0; j < 8; ++j) Put(DataType::kFloat32, ts[m].data, static_cast<size_t>(j), m + 1);
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce({&ts[m], 1}, ReduceOp::kSum, o); });
  for (int m = 0; m < 2; ++m) {
    ASSERT_TRUE(st[m].ok()) << st[m].ToString();
    EXPECT_EQ(Get(DataType::kFloat32, ts[m].data, 3), 3.0);
  }
  EXPECT_EQ(fake::GetStats().comm_inits, 4);  // formed twice
  EXPECT_EQ(fake::GetStats().unique_ids, 2);
}

TEST_F(FakeGpu, AMemberAbortingStopsNcclWithoutATimeout) {
  auto settings = LocalSettings(2);
  Group group = FormGroup(settings);
  for (auto& c : group) ASSERT_TRUE(c);
  Tensor t = DeviceTensor(0, 8, DataType::kFloat32);
  Tensor u = DeviceTensor(0, 8, DataType::kFloat32);
  std::vector<Status> st(2);
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce({m == 0 ? &t : &u, 1}, ReduceOp::kSum); });
  ASSERT_TRUE(st[0].ok() && st[1].ok());
  fake::SetHangingRank(1);
  // Member 1 enters its all-reduce and then gives up on the group (as the
  // monitor does when heartbeats stop): member 0 must not hang.
  const auto start = std::chrono::steady_clock::now();
  std::thread other([&] {
    auto h = group[1]->AllReduceAsync({&u, 1}, ReduceOp::kSum);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    group[1]->Abort("drill");
    st[1] = h.Wait();
  });
  st[0] = group[0]->AllReduce({&t, 1}, ReduceOp::kSum);
  other.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 5.0);
  EXPECT_EQ(st[0].code(), StatusCode::kAborted) << st[0].ToString();
  EXPECT_NE(st[0].message().find("drill"), std::string::npos) << st[0].message();
  EXPECT_EQ(st[1].code(), StatusCode::kAborted) << st[1].ToString();
  EXPECT_GE(fake::GetStats().comm_aborts, 2);
}

}  // namespace
}  // namespace ringmaster
