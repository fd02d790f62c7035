// Communicators on GPU memory with the fake CUDA/NCCL (no GPU
// needed): AUTO/NCCL/RING dispatch, NCCL formation through the control plane
// (ranks = members x local GPUs), packing into the fusion buffer, out of
// place, host staging, refusals (overlaps, captures, streams of another GPU),
// the GPU-count check, timeouts and aborts that abort NCCL, failed calls that
// leave nothing queued on the callers' buffers, no context on an unused GPU,
// and a group that forms NCCL again after Reform().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <thread>

#include "collectives/kernels.h"
#include "fake_gpu.h"
#include "gpu/batched_copy_plan.h"
#include "gpu/nccl_plan.h"
#include "group_util.h"
#include "ringmaster/ringmaster.h"

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

// The fake's device memory is not host memory: values go up and come down.
void SetValues(const Tensor& t, const std::function<double(size_t)>& value) {
  std::vector<char> h(t.bytes());
  for (size_t i = 0; i < static_cast<size_t>(t.count); ++i)
    internal::StoreElement(t.dtype, h.data(), i, value(i));
  fake::Upload(t.data, h.data(), h.size());
}
std::vector<double> Values(const Tensor& t, const void* at = nullptr) {
  std::vector<char> h(t.bytes());
  fake::Download(h.data(), at ? at : t.data, h.size());
  std::vector<double> out(static_cast<size_t>(t.count));
  for (size_t i = 0; i < out.size(); ++i) out[i] = internal::LoadElement(t.dtype, h.data(), i);
  return out;
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
  void TearDown() override {
    // No queued work touched memory that was not live device memory.
    for (const auto& v : fake::Violations()) ADD_FAILURE() << v;
    fake::Uninstall();
  }
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
      SetValues(t, [](size_t i) { return Value(0, i); });
      CommunicationOptions o;
      o.implementation = Implementation::kNccl;
      Status s = (*comm)->AllReduce({&t, 1}, op, o);
      ASSERT_TRUE(s.ok()) << DataTypeName(dt) << " " << ReduceOpName(op) << ": " << s.ToString();
      auto got = Values(t);
      for (size_t i = 0; i < 37; ++i) ASSERT_EQ(got[i], Value(0, i));
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
    SetValues(t, [i](size_t j) { return Value(0, j + static_cast<size_t>(i)); });
    ts.push_back(t);
  }
  CommunicationOptions o;
  o.bytes_per_pack = 256;
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMax, o).ok());
  for (int i = 0; i < 300; ++i) {
    auto got = Values(ts[i]);
    for (size_t j = 0; j < got.size(); ++j)
      ASSERT_EQ(got[j], Value(0, j + static_cast<size_t>(i))) << "tensor " << i << " element " << j;
  }
  auto st = fake::GetStats();
  EXPECT_GT(st.allreduces, 6);  // several packs, one NCCL group each
  EXPECT_EQ(st.group_starts, st.allreduces);
  EXPECT_GT(st.kernel_launches, 0);  // packed and unpacked by the batched copy ...
  EXPECT_EQ(st.d2d_copies, 0);       // ... not one copy per tensor
  EXPECT_EQ(st.device_allocs, 1);    // the fusion buffer, nothing per pack
}

TEST_F(FakeGpu, RingHintStagesThroughPinnedHostBuffers) {
  auto settings = LocalSettings(1);
  auto comm = Communicator::Create(settings[0]);
  ASSERT_TRUE(comm.ok());
  // Three small tensors and one of kDirectHostCopyMinBytes (float32), in one pack.
  const int64_t big = static_cast<int64_t>(internal::kDirectHostCopyMinBytes / 4);
  Tensor ts[4] = {DeviceTensor(0, 100, DataType::kFloat32), DeviceTensor(0, big, DataType::kFloat32),
                  DeviceTensor(0, 5, DataType::kFloat32), DeviceTensor(0, 33, DataType::kFloat32)};
  for (auto& t : ts) SetValues(t, [](size_t j) { return Value(0, j); });
  CommunicationOptions o;
  o.implementation = Implementation::kRing;
  o.bytes_per_pack = 4 << 20;
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMean, o).ok());
  for (auto& t : ts) {
    auto got = Values(t);
    for (size_t j = 0; j < got.size(); ++j) ASSERT_EQ(got[j], Value(0, j));
  }
  auto st = fake::GetStats();
  EXPECT_EQ(st.allreduces, 0);
  EXPECT_EQ(st.comm_inits, 0);
  EXPECT_EQ(st.host_allocs, 1);
  // Each way, the small tensors in one kernel launch that reads or writes
  // the pinned area in place, the large one as its own DMA.
  EXPECT_EQ(st.kernel_launches, 2);
  EXPECT_EQ(st.d2h_copies, 1);
  EXPECT_EQ(st.h2d_copies, 1);
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMean, o).ok());
  EXPECT_EQ(fake::GetStats().host_allocs, 1);  // the staging buffers are kept
}

TEST_F(FakeGpu, WithoutTheBatchedCopyKernelStagingCopiesEachTensor) {
  fake::SetBatchedCopyKernel(false);
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  Tensor ts[3] = {DeviceTensor(0, 100, DataType::kFloat32), DeviceTensor(0, 5, DataType::kInt64),
                  DeviceTensor(0, 33, DataType::kFloat32)};
  for (auto& t : ts) SetValues(t, [](size_t j) { return Value(0, j); });
  CommunicationOptions o;
  o.implementation = Implementation::kRing;
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kSum, o).ok());
  for (auto& t : ts) {
    auto got = Values(t);
    for (size_t j = 0; j < got.size(); ++j) ASSERT_EQ(got[j], Value(0, j));
  }
  const auto st = fake::GetStats();
  EXPECT_EQ(st.kernel_launches, 0);
  EXPECT_EQ(st.d2h_copies, 3);
  EXPECT_EQ(st.h2d_copies, 3);
}

TEST_F(FakeGpu, StagingManyTensorsIsOneTableLaunchEachWayPerPack) {
  // Past RM_BATCHED_COPY_MAX_ITEMS tensors a staged pack goes through the
  // table form too, its kernel reading and writing pinned host memory.
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  std::vector<Tensor> ts;
  for (int i = 0; i < 500; ++i) {
    ts.push_back(DeviceTensor(0, 1 + i % 9, DataType::kFloat32));
    SetValues(ts.back(), [i](size_t j) { return Value(0, j + static_cast<size_t>(i)); });
  }
  CommunicationOptions o;
  o.implementation = Implementation::kRing;
  o.bytes_per_pack = 1 << 20;  // one pack
  for (int call = 0; call < 2; ++call) {
    const auto before = fake::GetStats();
    ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMax, o).ok());
    const auto after = fake::GetStats();
    for (int i = 0; i < 500; ++i) {
      auto got = Values(ts[i]);
      for (size_t j = 0; j < got.size(); ++j)
        ASSERT_EQ(got[j], Value(0, j + static_cast<size_t>(i))) << "call " << call << " tensor " << i;
    }
    EXPECT_EQ(after.table_launches - before.table_launches, 2);  // down and up
    EXPECT_EQ(after.d2h_copies - before.d2h_copies, 0);
    EXPECT_EQ(after.h2d_copies - before.h2d_copies, 2);  // the two tables
  }
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
        SetValues(t, [&](size_t j) { return Value(m * g + d, j); });
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
      auto got = Values(t);
      for (size_t j = 0; j < got.size(); ++j)
        ASSERT_EQ(got[j], Expected(op, dt, n * g, j)) << "member " << m << " element " << j;
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
  // The fake names a library that does not exist: the agent tries that one
  // alone (no libnccl.so.2 found elsewhere) and says who named it.
  EXPECT_FALSE(fake::Api().have_nccl);
  EXPECT_NE(fake::Api().nccl_unavailable.find(".no-nccl"), std::string::npos) << fake::Api().nccl_unavailable;
  EXPECT_NE(fake::Api().nccl_unavailable.find("named by RINGMASTER_NCCL_LIBRARY"), std::string::npos)
      << fake::Api().nccl_unavailable;
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
  for (int m = 0; m < 2; ++m) SetValues(ts[m], [m](size_t) { return m + 1; });
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce({&ts[m], 1}, ReduceOp::kSum, o); });
  for (int m = 0; m < 2; ++m) {
    ASSERT_TRUE(st[m].ok()) << st[m].ToString();
    EXPECT_EQ(Values(ts[m])[3], 3.0);
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

// ---------------------------------------------------------------- the device path's rules

// Forms the group and its NCCL communicator with one good call.
Group FormedOverNccl(int n) {
  Group group = FormGroup(LocalSettings(n));
  std::vector<Tensor> warm(n);
  for (int m = 0; m < n; ++m) warm[m] = DeviceTensor(0, 4, DataType::kFloat32);
  std::vector<Status> st(n);
  OnAll(n, [&](int m) { st[m] = group[m]->AllReduce({&warm[m], 1}, ReduceOp::kSum); });
  for (int m = 0; m < n; ++m) EXPECT_TRUE(st[m].ok()) << st[m].ToString();
  return group;
}

TEST_F(FakeGpu, AFailedCallLeavesNothingQueuedOnTheCallersBuffers) {
  Group group = FormedOverNccl(2);
  // Three tensors each, so they are packed: the copies back out are queued
  // behind the all-reduce, on the agent's stream.
  std::vector<std::vector<Tensor>> ts(2);
  std::vector<cudaStream_t> caller(2);
  for (int m = 0; m < 2; ++m) {
    caller[m] = fake::NewStream(0);
    for (int k = 0; k < 3; ++k) {
      ts[m].push_back(DeviceTensor(0, 16, DataType::kFloat32));
      ts[m].back().stream = caller[m];
    }
  }
  // NCCL rank 1 never takes part; rank 0's aborted kernel ends only when
  // the test says so (a kernel slow to see the abort).
  fake::SetHangingRank(1);
  fake::HoldAbortedKernels(true);
  CommunicationOptions o;
  o.timeout_seconds = 1;
  std::vector<Status> st(2);
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce(ts[m], ReduceOp::kSum, o); });
  ASSERT_EQ(st[0].code(), StatusCode::kDeadlineExceeded) << st[0].ToString();
  // The call has completed: the framework reuses the memory for its next
  // kernel, in its stream's order.
  for (const Tensor& t : ts[0]) fake::FillAsync(t.data, 0xAB, t.bytes(), caller[0]);
  (void)fake::WaitIdle(caller[0], 0.5);
  fake::HoldAbortedKernels(false);
  ASSERT_TRUE(fake::Synchronize());
  for (size_t k = 0; k < ts[0].size(); ++k) {
    std::vector<unsigned char> got(ts[0][k].bytes());
    fake::Download(got.data(), ts[0][k].data, got.size());
    for (size_t b = 0; b < got.size(); ++b)
      ASSERT_EQ(got[b], 0xAB) << "tensors[" << k << "] byte " << b << " was written after the call completed";
  }
  fake::SetHangingRank(-1);
}

TEST_F(FakeGpu, AnAbortIsBoundedWhenTheCallersStreamNeverProgresses) {
  Group group = FormedOverNccl(2);
  cudaStream_t stuck = fake::NewStream(0);
  fake::HoldStream(stuck);  // the caller's earlier work never finishes
  std::vector<Tensor> ts = {DeviceTensor(0, 8, DataType::kFloat32), DeviceTensor(0, 8, DataType::kFloat32)};
  ts[0].stream = stuck;
  // Member 0 times out first; member 1 (in NCCL, waiting for it) is then
  // stopped by the group's abort.
  CommunicationOptions o[2];
  o[0].timeout_seconds = 1;
  o[1].timeout_seconds = 20;
  std::vector<Status> st(2);
  auto done = std::async(std::launch::async, [&] {
    OnAll(2, [&](int m) { st[m] = group[m]->AllReduce({&ts[m], 1}, ReduceOp::kSum, o[m]); });
    group.clear();  // destroying the communicators must not hang either
  });
  const bool bounded = done.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  fake::ReleaseStream(stuck);  // so that a hung abort (the failure) can end
  done.wait();
  ASSERT_TRUE(bounded) << "the all-reduce or the communicators' end hung behind the caller's stream";
  EXPECT_EQ(st[0].code(), StatusCode::kDeadlineExceeded) << st[0].ToString();
  EXPECT_NE(st[0].message().find("callers' streams did not finish"), std::string::npos) << st[0].message();
  EXPECT_TRUE(st[1].code() == StatusCode::kDeadlineExceeded || st[1].code() == StatusCode::kAborted ||
              st[1].code() == StatusCode::kUnavailable)
      << st[1].ToString();
}

TEST_F(FakeGpu, NoContextOnAGpuTheProcessDoesNotUse) {
  // The framework's thread works on GPU 1 (it made a context there).
  ASSERT_EQ(fake::Api().cuda.SetDevice(1), cudaSuccess);
  {
    auto comm = Communicator::Create(LocalSettings(1)[0]);
    ASSERT_TRUE(comm.ok()) << comm.status().ToString();
    Tensor t = DeviceTensor(1, 64, DataType::kFloat32);
    Tensor packed[2] = {DeviceTensor(1, 8, DataType::kFloat32), DeviceTensor(1, 8, DataType::kFloat32)};
    for (Implementation impl : {Implementation::kNccl, Implementation::kRing}) {
      CommunicationOptions o;
      o.implementation = impl;
      EXPECT_TRUE((*comm)->AllReduce({&t, 1}, ReduceOp::kSum, o).ok());
      // Async: run by the executor's own thread.
      EXPECT_TRUE((*comm)->AllReduceAsync(packed, ReduceOp::kSum, o).Wait().ok());
    }
  }
  EXPECT_FALSE(fake::HasContext(0)) << "a context was made on GPU 0, which the process does not use";
  int device = -1;
  ASSERT_EQ(fake::Api().cuda.GetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 1) << "the caller's current device was not restored";
}

TEST_F(FakeGpu, ACallOnACapturingStreamIsRefused) {
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  cudaStream_t s = fake::NewStream(0);
  Tensor ts[2] = {DeviceTensor(0, 8, DataType::kFloat32), DeviceTensor(0, 8, DataType::kFloat32)};
  ts[1].stream = s;
  fake::BeginCapture(s);
  Status st = (*comm)->AllReduce(ts, ReduceOp::kSum);
  fake::EndCapture(s);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("tensors[1]: its stream is capturing a CUDA graph"), std::string::npos)
      << st.message();
  // The group is fine, and the same call outside the capture runs.
  SetValues(ts[1], [](size_t) { return 3; });
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kSum).ok());
  EXPECT_EQ(Values(ts[1])[7], 3);
}

TEST_F(FakeGpu, AStreamOfAnotherGpuIsRefusedNamingTheTensor) {
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  // One replica per GPU, but both with a stream of GPU 0 (the C API's one
  // stream for a call).
  cudaStream_t s0 = fake::NewStream(0);
  Tensor ts[2] = {DeviceTensor(0, 8, DataType::kFloat32), DeviceTensor(1, 8, DataType::kFloat32)};
  ts[0].stream = ts[1].stream = s0;
  Status st = (*comm)->AllReduce(ts, ReduceOp::kSum);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("tensors[1] is on GPU 1 but its stream is not a stream of that GPU"),
            std::string::npos)
      << st.message();
  // One call per GPU (TensorFlow's per-replica kernels) is refused saying so.
  ASSERT_TRUE((*comm)->AllReduce({&ts[0], 1}, ReduceOp::kSum).ok());
  st = (*comm)->AllReduce({&ts[1], 1}, ReduceOp::kSum);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("run one worker per GPU"), std::string::npos) << st.message();
}

TEST_F(FakeGpu, OverlappingTensorsAreRefusedNamingBoth) {
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  char* buf = static_cast<char*>(fake::DeviceAlloc(0, 256));
  Tensor a{buf, 16, DataType::kFloat32, MemoryKind::kDevice};
  Tensor b{buf + 32, 16, DataType::kFloat32, MemoryKind::kDevice};
  Tensor both[2] = {a, b};
  Status st = (*comm)->AllReduce(both, ReduceOp::kSum);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("tensors[1] overlaps tensors[0]"), std::string::npos) << st.message();
  // An output where another tensor's input is.
  Tensor c{buf + 128, 16, DataType::kFloat32, MemoryKind::kDevice};
  c.source = buf;
  Tensor d{buf + 8, 4, DataType::kFloat32, MemoryKind::kDevice};
  Tensor cd[2] = {c, d};
  st = (*comm)->AllReduce(cd, ReduceOp::kSum);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("tensors[1] overlaps tensors[0].source"), std::string::npos) << st.message();
  EXPECT_TRUE((*comm)->health().ok());
}

// Out of place: the inputs are read where they lie (TensorFlow's immutable
// tensors), lone and packed, through NCCL and staged.
TEST_F(FakeGpu, OutOfPlaceReadsTheSourceAndLeavesItUntouched) {
  const int n = 2;
  Group group = FormGroup(LocalSettings(n));
  for (Implementation impl : {Implementation::kNccl, Implementation::kRing}) {
    std::vector<std::vector<Tensor>> ts(n);
    for (int m = 0; m < n; ++m) {
      for (int64_t count : {int64_t{5}, int64_t{7}, (internal::kDeviceAloneBytes / 4) + 3}) {
        Tensor in = DeviceTensor(0, count, DataType::kFloat32);
        SetValues(in, [m](size_t j) { return Value(m, j); });
        Tensor out = DeviceTensor(0, count, DataType::kFloat32);
        out.source = in.data;
        ts[m].push_back(out);
      }
    }
    CommunicationOptions o;
    o.implementation = impl;
    std::vector<Status> st(n);
    OnAll(n, [&](int m) { st[m] = group[m]->AllReduce(ts[m], ReduceOp::kSum, o); });
    for (int m = 0; m < n; ++m) {
      ASSERT_TRUE(st[m].ok()) << ImplementationName(impl) << ": " << st[m].ToString();
      for (const Tensor& t : ts[m]) {
        auto got = Values(t);
        auto in = Values(t, t.source);
        for (size_t j = 0; j < got.size(); j += 97) {
          ASSERT_EQ(got[j], Expected(ReduceOp::kSum, DataType::kFloat32, n, j)) << ImplementationName(impl);
          ASSERT_EQ(in[j], Value(m, j)) << "the source was written";
        }
      }
    }
  }
  // A source on another GPU than its data is refused.
  auto one = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(one.ok());
  Tensor t = DeviceTensor(0, 4, DataType::kFloat32);
  t.source = fake::DeviceAlloc(1, 16);
  Status s = (*one)->AllReduce({&t, 1}, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("tensors[0].source is not memory of GPU 0"), std::string::npos) << s.message();
}

TEST_F(FakeGpu, TheFusionBufferIsTakenOnceAndBoundsTheDeviceMemory) {
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  // 30 tensors of 3 MiB (each under the alone threshold) with a pack size
  // of 1 GiB: TF's rule alone would pack all 90 MiB together.
  std::vector<Tensor> ts;
  for (int i = 0; i < 30; ++i) {
    ts.push_back(DeviceTensor(0, (3 << 20) / 4, DataType::kFloat32));
    SetValues(ts.back(), [i](size_t j) { return Value(i, j % 64); });
  }
  CommunicationOptions o;
  o.bytes_per_pack = int64_t{1} << 30;
  for (int call = 0; call < 3; ++call) ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMax, o).ok());
  for (int i = 0; i < 30; i += 7) {
    auto got = Values(ts[i]);
    for (size_t j = 0; j < got.size(); j += 4099) ASSERT_EQ(got[j], Value(i, j % 64)) << "tensor " << i;
  }
  auto st = fake::GetStats();
  EXPECT_EQ(st.device_allocs, 1);
  EXPECT_EQ(st.peak_agent_bytes, internal::kDeviceFusionBytes);
  EXPECT_GE(st.allreduces, 3 * 2);  // several packs per call
}

TEST_F(FakeGpu, AFusionBufferThatCannotBeHadIsResourceExhaustedOnEveryMember) {
  Group group = FormGroup(LocalSettings(2));
  fake::SetAgentMemoryLimit(0, 1 << 20);  // the framework took the rest
  std::vector<Tensor> ts = {DeviceTensor(0, 8, DataType::kFloat32), DeviceTensor(0, 8, DataType::kFloat32)};
  std::vector<Status> st(2);
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce({&ts[m], 1}, ReduceOp::kSum); });
  for (int m = 0; m < 2; ++m) {
    EXPECT_EQ(st[m].code(), StatusCode::kResourceExhausted) << "member " << m << ": " << st[m].ToString();
    EXPECT_NE(st[m].message().find("could not be allocated on /job:chief/task:0"), std::string::npos)
        << st[m].message();
    EXPECT_NE(st[m].message().find("set_memory_growth"), std::string::npos) << st[m].message();
    EXPECT_TRUE(group[m]->health().ok()) << "the group was aborted: " << group[m]->health().ToString();
  }
  // Once there is room, the next call forms again and runs.
  fake::SetAgentMemoryLimit(0, SIZE_MAX);
  for (int m = 0; m < 2; ++m) SetValues(ts[m], [m](size_t) { return m + 1; });
  OnAll(2, [&](int m) { st[m] = group[m]->AllReduce({&ts[m], 1}, ReduceOp::kSum); });
  for (int m = 0; m < 2; ++m) {
    ASSERT_TRUE(st[m].ok()) << st[m].ToString();
    EXPECT_EQ(Values(ts[m])[5], 3.0);
  }
}

TEST_F(FakeGpu, HostCollectivesDoNotQueueBehindAGpuCall) {
  const int n = 2;
  Group group = FormedOverNccl(n);
  // Member 0's GPU call waits for its caller's stream, which is held.
  cudaStream_t held = fake::NewStream(0);
  fake::HoldStream(held);
  std::vector<Tensor> dev = {DeviceTensor(0, 8, DataType::kFloat32), DeviceTensor(0, 8, DataType::kFloat32)};
  dev[0].stream = held;
  CommunicationOptions o;
  o.timeout_seconds = 10;
  std::atomic<bool> gpu_done{false};
  std::vector<Status> gpu(n);
  std::vector<CollectiveHandle> handles;
  for (int m = 0; m < n; ++m) handles.push_back(group[m]->AllReduceAsync({&dev[m], 1}, ReduceOp::kSum, o));
  std::thread waiter([&] {
    for (int m = 0; m < n; ++m) gpu[m] = handles[m].Wait();
    gpu_done = true;
  });
  // Host all-reduces on every data slot, while the GPU call is waiting.
  std::vector<std::vector<float>> host(n, std::vector<float>(64, 1.f));
  std::vector<Status> st(n);
  bool before = true;
  for (int k = 0; k < 4; ++k) {
    OnAll(n, [&](int m) {
      Tensor t{host[m].data(), 64, DataType::kFloat32};
      st[m] = group[m]->AllReduce({&t, 1}, ReduceOp::kSum);
    });
    for (int m = 0; m < n; ++m) ASSERT_TRUE(st[m].ok()) << st[m].ToString();
    before = before && !gpu_done;
  }
  fake::ReleaseStream(held);
  waiter.join();
  EXPECT_TRUE(before) << "a host collective waited for the GPU call to end";
  for (int m = 0; m < n; ++m) EXPECT_TRUE(gpu[m].ok()) << gpu[m].ToString();
  EXPECT_EQ(host[0][0], 16.f);  // four sums of two members
}

// The C API a framework's GPU kernel calls (TensorFlow's): out of place
// from its inputs, on its stream, and in place where the output is the input.
TEST_F(FakeGpu, TheCApiTakesSourcesOnTheCallersStream) {
  rm_communicator* c = testing::OneMemberCommunicator();
  ASSERT_NE(c, nullptr);
  cudaStream_t s = fake::NewStream(0);
  Tensor in = DeviceTensor(0, 64, DataType::kFloat32), out = DeviceTensor(0, 64, DataType::kFloat32);
  Tensor same = DeviceTensor(0, 8, DataType::kFloat32);
  SetValues(in, [](size_t j) { return double(j); });
  SetValues(same, [](size_t) { return 2; });
  rm_tensor ts[2] = {{out.data, 64, RM_FLOAT32}, {same.data, 8, RM_FLOAT32}};
  const void* sources[2] = {in.data, nullptr};
  rm_handle* h = nullptr;
  ASSERT_EQ(rm_allreduce_async_on_stream_from(c, sources, ts, 2, RM_SUM, nullptr, s, &h), RM_OK)
      << rm_last_error();
  ASSERT_EQ(rm_handle_wait(h), RM_OK) << rm_last_error();
  EXPECT_EQ(Values(out)[63], 63.0);
  EXPECT_EQ(Values(same)[7], 2.0);
  // The two packed: one batched copy in, one out; nothing of the caller's.
  EXPECT_EQ(fake::GetStats().kernel_launches, 2);
  EXPECT_EQ(fake::GetStats().d2d_copies, 0);
  rm_communicator_destroy(c);
}

TEST_F(FakeGpu, CallsReuseTheEventsOnTheCallersStreams) {
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  Tensor ts[2] = {DeviceTensor(0, 8, DataType::kFloat32), DeviceTensor(0, 8, DataType::kFloat32)};
  ts[1].stream = fake::NewStream(0);  // two distinct streams: two events a call
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kSum).ok());
  const int after_first = fake::GetStats().events_created;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kSum).ok());
  EXPECT_EQ(fake::GetStats().events_created, after_first) << "a call created events of its own";
}

TEST_F(FakeGpu, TensorsCarvedFromOneBufferArePlacedByOneQueryEach) {
  // A framework's allocator carves tensors from a few large buffers: CUDA is
  // asked once per buffer, not once per tensor.
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  constexpr int kTensors = 500, kCount = 16;
  char* buffers[2] = {static_cast<char*>(fake::DeviceAlloc(0, kTensors / 2 * kCount * 4)),
                      static_cast<char*>(fake::DeviceAlloc(0, kTensors / 2 * kCount * 4))};
  std::vector<Tensor> ts;
  for (int i = 0; i < kTensors; ++i) {
    // Interleaved: consecutive tensors come from different buffers.
    ts.push_back(Tensor{buffers[i % 2] + static_cast<size_t>(i / 2) * kCount * 4, kCount, DataType::kFloat32,
                        MemoryKind::kDevice});
    SetValues(ts.back(), [i](size_t j) { return Value(0, j + static_cast<size_t>(i)); });
  }
  const auto before = fake::GetStats();
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kSum).ok());
  const auto after = fake::GetStats();
  for (int i = 0; i < kTensors; ++i) {
    auto got = Values(ts[i]);
    for (size_t j = 0; j < got.size(); ++j)
      ASSERT_EQ(got[j], Value(0, j + static_cast<size_t>(i))) << "tensor " << i << " element " << j;
  }
  // Two looks at the call (is it a GPU call; its plan), two buffers each.
  EXPECT_LE(after.pointer_queries - before.pointer_queries, 4);
  EXPECT_LE(after.range_queries - before.range_queries, 4);
}

TEST_F(FakeGpu, APackOfManyTensorsIsOneLaunchEachWay) {
  // Past RM_BATCHED_COPY_MAX_ITEMS tensors a pack goes through the table
  // form: its table uploaded on the agent's stream, read by the kernel when
  // it runs (the fake reads it then, as a GPU would).
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  std::vector<Tensor> ts;
  for (int i = 0; i < 1000; ++i) {
    ts.push_back(DeviceTensor(0, 1 + i % 7, DataType::kFloat32));
    SetValues(ts.back(), [i](size_t j) { return Value(0, j + static_cast<size_t>(i)); });
  }
  for (int call = 0; call < 3; ++call) {
    const auto before = fake::GetStats();
    ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kMax).ok());
    const auto after = fake::GetStats();
    for (int i = 0; i < 1000; ++i) {
      auto got = Values(ts[i]);
      for (size_t j = 0; j < got.size(); ++j)
        ASSERT_EQ(got[j], Value(0, j + static_cast<size_t>(i))) << "call " << call << " tensor " << i;
    }
    EXPECT_EQ(after.allreduces - before.allreduces, 1);          // one pack
    EXPECT_EQ(after.table_launches - before.table_launches, 2);  // in and out
    EXPECT_EQ(after.kernel_launches - before.kernel_launches, 2);
    EXPECT_EQ(after.h2d_copies - before.h2d_copies, 2);  // the two tables
    EXPECT_EQ(after.d2d_copies - before.d2d_copies, 0);
  }
  // The table's buffers were taken once, for the first call.
  EXPECT_EQ(fake::GetStats().host_allocs, 1);
}

TEST_F(FakeGpu, WithoutTheBatchedCopyKernelEveryTensorIsCopiedOnItsOwn) {
  fake::SetBatchedCopyKernel(false);
  auto comm = Communicator::Create(LocalSettings(1)[0]);
  ASSERT_TRUE(comm.ok());
  std::vector<Tensor> ts;
  for (int i = 0; i < 10; ++i) {
    ts.push_back(DeviceTensor(0, 3 + i, DataType::kFloat32));
    SetValues(ts.back(), [i](size_t j) { return Value(i, j); });
  }
  ASSERT_TRUE((*comm)->AllReduce(ts, ReduceOp::kSum).ok());
  for (int i = 0; i < 10; ++i) {
    auto got = Values(ts[i]);
    for (size_t j = 0; j < got.size(); ++j) ASSERT_EQ(got[j], Value(i, j));
  }
  EXPECT_EQ(fake::GetStats().kernel_launches, 0);
  EXPECT_EQ(fake::GetStats().d2d_copies, 2 * 10);  // one pack: each tensor in and out
}

}  // namespace
}  // namespace ringmaster
