// The GPU backend's pure parts, with no GPU: NCCL type and op mapping, the
// device pack layout, the per-device split of a call, the GPU-count check,
// and the wait/abort state machine against the fake CUDA/NCCL.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fake_gpu.h"
#include "gpu/batched_copy.h"
#include "gpu/nccl_plan.h"
#include "gpu/pointer_places.h"

namespace ringmaster::internal {
namespace {

constexpr DataType kAllTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                  DataType::kFloat64, DataType::kInt32,    DataType::kInt64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kProduct};

TEST(PointerPlaces, AnAllocationSeenOncePlacesEveryPointerInsideIt) {
  internal::gpu::PointerPlaces places;
  EXPECT_FALSE(places.Find(reinterpret_cast<void*>(0x1000)).has_value());
  places.Add(0x1000, 0x100, 1);
  places.Add(0x4000, 0x100, 0);
  places.Add(0x9000, 0, 3);  // empty: nothing
  EXPECT_EQ(places.size(), 2u);
  EXPECT_EQ(places.Find(reinterpret_cast<void*>(0x1000)), 1);
  EXPECT_EQ(places.Find(reinterpret_cast<void*>(0x10ff)), 1);
  EXPECT_FALSE(places.Find(reinterpret_cast<void*>(0x1100)).has_value());  // one past the end
  EXPECT_EQ(places.Find(reinterpret_cast<void*>(0x4080)), 0);
  EXPECT_EQ(places.Find(reinterpret_cast<void*>(0x1010)), 1);  // back to the first after the second
  EXPECT_FALSE(places.Find(reinterpret_cast<void*>(0x9000)).has_value());
  // Bounded: past kMaxRanges nothing more is remembered.
  for (size_t i = 0; i < 2 * internal::gpu::PointerPlaces::kMaxRanges; ++i)
    places.Add(0x100000 + i * 0x100, 0x10, 0);
  EXPECT_EQ(places.size(), internal::gpu::PointerPlaces::kMaxRanges);
  // A range that wraps around the address space is refused.
  internal::gpu::PointerPlaces wrap;
  wrap.Add(UINTPTR_MAX - 4, 16, 0);
  EXPECT_EQ(wrap.size(), 0u);
}

TEST(NcclMapping, EveryDtypeAndOpOfTheEngine) {
  const ncclDataType_t want_t[] = {ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64, ncclInt32, ncclInt64};
  for (size_t i = 0; i < 6; ++i) {
    auto t = NcclDataType(kAllTypes[i], 22703);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(*t, want_t[i]) << DataTypeName(kAllTypes[i]);
  }
  const ncclRedOp_t want_o[] = {ncclSum, ncclAvg, ncclMin, ncclMax, ncclProd};
  for (size_t i = 0; i < 5; ++i) {
    auto o = NcclRedOp(kAllOps[i], 22703);
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_EQ(*o, want_o[i]) << ReduceOpName(kAllOps[i]);
  }
}

TEST(NcclMapping, NarrowIntegersMapAndTypesWithoutNcclAreRefusedByName) {
  auto u8 = NcclDataType(DataType::kUInt8, 22703);
  ASSERT_TRUE(u8.ok()) << u8.status().ToString();
  EXPECT_EQ(*u8, ncclUint8);
  auto i8 = NcclDataType(DataType::kInt8, 22703);
  ASSERT_TRUE(i8.ok()) << i8.status().ToString();
  EXPECT_EQ(*i8, ncclInt8);
  for (DataType dt : {DataType::kUInt16, DataType::kInt16, DataType::kBool}) {
    auto t = NcclDataType(dt, 22703);
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << DataTypeName(dt);
    EXPECT_NE(t.status().message().find("dtype " + std::string(DataTypeName(dt))), std::string::npos)
        << t.status().message();
  }
}

TEST(NcclMapping, RefusesWhatAnOldNcclLacks) {
  auto bf = NcclDataType(DataType::kBFloat16, 20805);
  EXPECT_EQ(bf.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(bf.status().message().find("NCCL 2.10"), std::string::npos) << bf.status().message();
  EXPECT_NE(bf.status().message().find("2.8.5"), std::string::npos) << bf.status().message();
  auto avg = NcclRedOp(ReduceOp::kMean, 20805);
  EXPECT_EQ(avg.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(avg.status().message().find("ncclAvg"), std::string::npos);
  EXPECT_TRUE(NcclDataType(DataType::kFloat16, 20805).ok());
  EXPECT_TRUE(NcclRedOp(ReduceOp::kSum, 20805).ok());
}

TEST(NcclMapping, OutOfRangeValuesAreInvalidArguments) {
  EXPECT_EQ(NcclDataType(static_cast<DataType>(17), 22703).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NcclRedOp(static_cast<ReduceOp>(-1), 22703).status().code(), StatusCode::kInvalidArgument);
}

TEST(NcclMapping, VersionText) {
  EXPECT_EQ(NcclVersionText(22703), "2.27.3");
  EXPECT_EQ(NcclVersionText(2804), "2.8.4");
}

Tensor T(int64_t count, DataType dt = DataType::kFloat32) {
  static char dummy[8];
  return Tensor{dummy, count, dt, MemoryKind::kDevice};
}

TEST(DevicePacks, OffsetsAreAlignedAndCountCoversTheLastTensor) {
  std::vector<Tensor> ts = {T(3), T(5), T(1, DataType::kFloat16), T(7), T(0), T(2, DataType::kFloat16)};
  auto packs = PlanDevicePacks(ts, 1 << 20);
  ASSERT_EQ(packs.size(), 2u);  // float32 then float16; the empty tensor is left out
  const auto& f = packs[0];
  EXPECT_EQ(f.dtype, DataType::kFloat32);
  ASSERT_EQ(f.items.size(), 3u);
  EXPECT_EQ(f.items[0].offset, 0u);
  EXPECT_EQ(f.items[1].offset, 16u);  // 12 bytes rounded up
  EXPECT_EQ(f.items[2].offset, 48u);  // 16 + 20 = 36 -> 48
  EXPECT_EQ(f.items[2].tensor, 3u);
  EXPECT_EQ(f.bytes, 48u + 28u);
  EXPECT_EQ(f.count, f.bytes / 4);
  for (const auto& it : f.items) EXPECT_EQ(it.offset % kDevicePackAlign, 0u);
  const auto& h = packs[1];
  EXPECT_EQ(h.dtype, DataType::kFloat16);
  ASSERT_EQ(h.items.size(), 2u);
  EXPECT_EQ(h.items[1].offset, 16u);
  EXPECT_EQ(h.bytes, 20u);
  EXPECT_EQ(h.count, 10u);
  EXPECT_FALSE(h.lone());
}

TEST(DevicePacks, AReusedPlanIsTheFreshPlanOfEachCall) {
  // The backend plans into scratch kept call after call: nothing of an
  // earlier call's packs may show in the next one's.
  auto same = [](const std::vector<DevicePack>& a, const std::vector<DevicePack>& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k].dtype != b[k].dtype || a[k].count != b[k].count || a[k].bytes != b[k].bytes ||
          a[k].items.size() != b[k].items.size())
        return false;
      for (size_t i = 0; i < a[k].items.size(); ++i)
        if (a[k].items[i].tensor != b[k].items[i].tensor || a[k].items[i].offset != b[k].items[i].offset ||
            a[k].items[i].bytes != b[k].items[i].bytes)
          return false;
    }
    return true;
  };
  std::vector<Tensor> many, few = {T(9, DataType::kInt32), T(4)};
  for (int i = 0; i < 300; ++i) many.push_back(T(1 + i % 5, i % 3 ? DataType::kFloat32 : DataType::kFloat16));
  std::vector<DevicePack> scratch;
  for (const auto* call : {&many, &few, &many, &few}) {
    PlanDevicePacks(*call, 256, scratch);
    EXPECT_TRUE(same(scratch, PlanDevicePacks(*call, 256))) << call->size() << " tensors";
  }
}

TEST(DevicePacks, ATensorAloneIsReducedWhereItLiesWithItsExactCount) {
  std::vector<Tensor> ts = {T(1001, DataType::kFloat64)};
  auto packs = PlanDevicePacks(ts, 0);
  ASSERT_EQ(packs.size(), 1u);
  EXPECT_TRUE(packs[0].lone());
  EXPECT_EQ(packs[0].count, 1001u);
  EXPECT_EQ(packs[0].bytes, 8008u);
}

TEST(DevicePacks, FollowsTfGroupBySize) {
  // bytes_per_pack 100: a pack closes once it is larger than 100 bytes.
  std::vector<Tensor> ts = {T(10), T(10), T(10), T(30), T(1), T(1)};
  auto packs = PlanDevicePacks(ts, 100);
  ASSERT_EQ(packs.size(), 3u);
  EXPECT_EQ(packs[0].items.size(), 3u);  // 120 bytes > 100
  EXPECT_EQ(packs[1].items.size(), 1u);  // 120 bytes alone
  EXPECT_TRUE(packs[1].lone());
  EXPECT_EQ(packs[2].items.size(), 2u);
  // 0: the agent's device pack size, one pack for small calls.
  EXPECT_EQ(PlanDevicePacks(ts, 0).size(), 1u);
}

TEST(DevicePacks, LargeTensorsGoAloneAndTheSmallOnesAroundThemStillPack) {
  const int64_t big = kDeviceAloneBytes / 4;  // float32 elements of kDeviceAloneBytes
  std::vector<Tensor> ts = {T(3), T(big), T(5), T(7), T(big - 1)};
  auto packs = PlanDevicePacks(ts, 0);
  ASSERT_EQ(packs.size(), 3u);
  EXPECT_EQ(packs[0].items.size(), 1u);  // T(3), closed by the large one after it
  EXPECT_EQ(packs[1].items.size(), 1u);
  EXPECT_EQ(packs[1].items[0].tensor, 1u);
  EXPECT_TRUE(packs[1].lone());
  ASSERT_EQ(packs[2].items.size(), 3u);  // 5, 7 and one just under the threshold
  EXPECT_EQ(packs[2].items[2].tensor, 4u);
}

TEST(DevicePacks, NoPackOutgrowsTheFusionBufferWhateverBytesPerPackSays) {
  // 3 MiB tensors (under the alone threshold) with bytes_per_pack of 1 GiB:
  // TF's rule alone would make one 90 MiB pack.
  std::vector<Tensor> ts(30, T((3 << 20) / 4));
  auto packs = PlanDevicePacks(ts, int64_t{1} << 30);
  ASSERT_GT(packs.size(), 1u);
  size_t items = 0;
  for (const auto& p : packs) {
    EXPECT_LE(p.bytes, kDeviceFusionBytes);
    items += p.items.size();
  }
  EXPECT_EQ(items, 30u);
  EXPECT_EQ(packs[0].items.size(), kDeviceFusionBytes / (3 << 20));  // filled to the brim
  // Tiny tensors: the gaps count too (one element each, 16 bytes apiece).
  std::vector<Tensor> tiny(kDeviceFusionBytes / 16 + 10, T(1));
  for (const auto& p : PlanDevicePacks(tiny, int64_t{1} << 30)) EXPECT_LE(p.bytes, kDeviceFusionBytes);
}

Tensor At(char* base, size_t offset_floats, int64_t count, const char* source = nullptr) {
  Tensor t{base + offset_floats * 4, count, DataType::kFloat32, MemoryKind::kDevice};
  t.source = source;
  return t;
}

TEST(DeviceOverlaps, OutputsMustNotShareMemoryAndNamesBoth) {
  static char buf[1024];
  std::vector<Tensor> ok = {At(buf, 0, 16), At(buf, 16, 16), At(buf, 32, 0)};
  std::vector<size_t> all = {0, 1, 2};
  EXPECT_TRUE(CheckDeviceOverlaps(ok, all).ok());
  std::vector<Tensor> bad = {At(buf, 0, 16), At(buf, 64, 4), At(buf, 15, 2)};
  std::vector<size_t> three = {0, 1, 2};
  Status s = CheckDeviceOverlaps(bad, three);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensors[2] overlaps tensors[0]"), std::string::npos) << s.message();
  // Only the indices asked about (one GPU's tensors) are looked at.
  std::vector<size_t> two = {0, 1};
  EXPECT_TRUE(CheckDeviceOverlaps(bad, two).ok());
}

TEST(DeviceOverlaps, InputsMayOverlapEachOtherButNotAnOutput) {
  static char buf[1024];
  const char* in = buf + 512;
  // Two tensors read the same input: fine; in place (source == data): fine.
  std::vector<Tensor> ok = {At(buf, 0, 8, in), At(buf, 8, 8, in), At(buf, 16, 8, buf + 64)};
  std::vector<size_t> all = {0, 1, 2};
  EXPECT_TRUE(CheckDeviceOverlaps(ok, all).ok());
  // tensors[1] writes where tensors[0] reads.
  std::vector<Tensor> bad = {At(buf, 0, 8, buf + 256), At(buf, 66, 8)};
  std::vector<size_t> both = {0, 1};
  Status s = CheckDeviceOverlaps(bad, both);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensors[1] overlaps tensors[0].source"), std::string::npos) << s.message();
  // A tensor whose input and output partly overlap.
  std::vector<Tensor> self = {At(buf, 0, 8, buf + 8)};
  std::vector<size_t> one = {0};
  s = CheckDeviceOverlaps(self, one);
  EXPECT_NE(s.message().find("tensors[0].source overlaps tensors[0]"), std::string::npos) << s.message();
}

StatusOr<DeviceSplit> SplitWith(const std::vector<Tensor>& ts, const std::vector<int>& where) {
  return SplitByDevice(ts, [&](size_t i) -> StatusOr<int> { return where[i]; });
}

TEST(DeviceSplit, HostCallsStayOnTheHost) {
  auto s = SplitWith({T(1), T(2)}, {-1, -1});
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->device);
}

TEST(DeviceSplit, MixingHostAndGpuTensorsIsRefused) {
  auto s = SplitWith({T(1), T(2), T(3)}, {-1, 0, -1});
  ASSERT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("tensors[0] is host memory but tensors[1] is on GPU 0"),
            std::string::npos)
      << s.status().message();
}

TEST(DeviceSplit, EmptyTensorsBelongNowhere) {
  auto s = SplitWith({T(0), T(2)}, {-1, 1});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->device);
  EXPECT_EQ(s->devices, std::vector<int>{1});
}

TEST(DeviceSplit, SeveralGpusEachHoldAReplica) {
  auto s = SplitWith({T(4), T(4), T(8), T(8)}, {1, 0, 1, 0});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(s->per_device[0], (std::vector<size_t>{1, 3}));
  EXPECT_EQ(s->per_device[1], (std::vector<size_t>{0, 2}));
  auto bad = SplitWith({T(4), T(4), T(8), T(9)}, {0, 1, 0, 1});
  ASSERT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("do not mirror"), std::string::npos) << bad.status().message();
  auto fewer = SplitWith({T(4), T(4), T(8)}, {0, 1, 0});
  EXPECT_EQ(fewer.status().code(), StatusCode::kInvalidArgument);
}

TEST(DeviceMembers, EveryWorkerMustDriveTheSameGpuCount) {
  std::vector<std::string> names = {"/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"};
  std::vector<DeviceMember> same = {{2, 1}, {2, 0}, {2, 1}};
  EXPECT_TRUE(CheckDeviceMembers(same, names).ok());
  std::vector<DeviceMember> differ = {{2, 1}, {2, 1}, {1, 1}};
  Status s = CheckDeviceMembers(differ, names);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("/job:chief/task:0 has 2, /job:worker/task:1 has 1"), std::string::npos)
      << s.message();
}

// ---------------------------------------------------------------- the fake's rules

// The fake must fail the way CUDA and NCCL do, or the backend's tests prove
// nothing: each rule the backend relies on, checked against the table.
TEST(FakeRules, DeviceMemoryIsQueuedWorkAndStreamsBelongToADevice) {
  fake::Install(2);
  const GpuApi& api = fake::Api();
  void* d = fake::DeviceAlloc(0, 64);
  const std::vector<char> ones(64, 1);
  fake::Upload(d, ones.data(), 64);
  // Queued is not done: a held stream runs nothing after the hold.
  cudaStream_t s = fake::NewStream(0);
  fake::HoldStream(s);
  fake::FillAsync(d, 7, 64, s);
  EXPECT_FALSE(fake::WaitIdle(s, 0.05));
  std::vector<char> got(64);
  fake::Download(got.data(), d, 64);
  EXPECT_EQ(got, ones);
  fake::ReleaseStream(s);
  ASSERT_TRUE(fake::WaitIdle(s, 5));
  fake::Download(got.data(), d, 64);
  EXPECT_EQ(got[63], 7);
  // An event of GPU 1 cannot be recorded on a stream of GPU 0.
  ASSERT_EQ(api.cuda.SetDevice(1), cudaSuccess);
  cudaEvent_t e1 = nullptr;
  ASSERT_EQ(api.cuda.EventCreateWithFlags(&e1, cudaEventDisableTiming), cudaSuccess);
  EXPECT_EQ(api.cuda.EventRecord(e1, s), cudaErrorInvalidResourceHandle);
  EXPECT_TRUE(fake::HasContext(1));
  EXPECT_FALSE(fake::HasContext(0));
  // A capture swallows work: nothing queued on a capturing stream runs.
  fake::BeginCapture(s);
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  ASSERT_EQ(api.cuda.StreamIsCapturing(s, &cs), cudaSuccess);
  EXPECT_EQ(cs, cudaStreamCaptureStatusActive);
  fake::FillAsync(d, 9, 64, s);
  fake::EndCapture(s);
  ASSERT_TRUE(fake::Synchronize(5));
  fake::Download(got.data(), d, 64);
  EXPECT_EQ(got[0], 7);
  // A copy from host memory marked device memory is refused.
  EXPECT_EQ(api.cuda.MemcpyAsync(d, ones.data(), 64, cudaMemcpyDeviceToDevice, s), cudaErrorInvalidValue);
  EXPECT_TRUE(fake::Violations().empty());
  fake::Uninstall();
}

TEST(FakeRules, AKernelReachesPinnedHostMemoryButNotPageableMemory) {
  // Host staging's batched copies read and write pinned memory in place
  // (unified addressing); pageable memory is an illegal address to a GPU.
  fake::Install(1);
  const GpuApi& api = fake::Api();
  ASSERT_EQ(api.cuda.SetDevice(0), cudaSuccess);
  if (!BatchedCopyKernel(api, 0).available) {
    fake::Uninstall();
    GTEST_SKIP() << "this build embeds no kernel image (no NVRTC)";
  }
  cudaStream_t s = fake::NewStream(0);
  char* d = static_cast<char*>(fake::DeviceAlloc(0, 64));
  std::vector<char> ones(64, 1);
  fake::Upload(d, ones.data(), 64);
  void* pinned = nullptr;
  ASSERT_EQ(api.cuda.HostAlloc(&pinned, 64, cudaHostAllocPortable), cudaSuccess);
  std::memset(pinned, 0, 64);
  const CopyItem down[] = {{pinned, d, 40}, {static_cast<char*>(pinned) + 48, d + 48, 16}};
  ASSERT_TRUE(BatchedCopy(api, down, s, 0, nullptr, CopyEnds::kDeviceToHost).ok());
  ASSERT_TRUE(fake::Synchronize(5));
  EXPECT_EQ(static_cast<char*>(pinned)[39], 1);
  EXPECT_EQ(static_cast<char*>(pinned)[40], 0);
  EXPECT_EQ(static_cast<char*>(pinned)[63], 1);
  EXPECT_GE(fake::GetStats().kernel_launches, 1);
  EXPECT_TRUE(fake::Violations().empty());
  std::vector<char> pageable(64, 0);
  const CopyItem bad[] = {{pageable.data(), d, 64}, {static_cast<char*>(pinned), d, 8}};
  ASSERT_TRUE(
      BatchedCopy(api, bad, s, 0, nullptr, CopyEnds::kDeviceToHost).ok());  // queued: fails when it runs
  ASSERT_TRUE(fake::Synchronize(5));
  EXPECT_EQ(pageable[0], 0);
  ASSERT_EQ(fake::Violations().size(), 1u);
  EXPECT_NE(fake::Violations()[0].find("not live device memory"), std::string::npos) << fake::Violations()[0];
  api.cuda.FreeHost(pinned);
  fake::Uninstall();
}

TEST(FakeRules, NonBlockingNcclRefusesCallsUntilPolledAndAbortWaitsForTheStream) {
  fake::Install(1);
  const GpuApi& api = fake::Api();
  ncclUniqueId id;
  ASSERT_EQ(api.nccl.GetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t c = nullptr;
  ASSERT_EQ(api.nccl.CommInitRankConfig(&c, 2, id, 0, &config), ncclInProgress);
  void* d = fake::DeviceAlloc(0, 16);
  cudaStream_t s = fake::NewStream(0);
  EXPECT_EQ(api.nccl.AllReduce(d, d, 4, ncclFloat32, ncclSum, c, s), ncclInvalidUsage);  // not polled yet
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) ASSERT_EQ(api.nccl.CommGetAsyncError(c, &state), ncclSuccess);
  float host[4] = {};
  EXPECT_EQ(api.nccl.AllReduce(host, host, 4, ncclFloat32, ncclSum, c, s), ncclInvalidArgument);
  // Behind a held stream the collective never starts, and the abort waits.
  fake::HoldStream(s);
  EXPECT_EQ(api.nccl.AllReduce(d, d, 4, ncclFloat32, ncclSum, c, s), ncclInProgress);
  std::atomic<bool> aborted{false};
  std::thread t([&] {
    (void)api.nccl.CommAbort(c);
    aborted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(aborted);
  fake::ReleaseStream(s);
  t.join();
  EXPECT_TRUE(aborted);
  fake::Uninstall();
}

// ---------------------------------------------------------------- waiting

class Waiting : public ::testing::Test {
 protected:
  void SetUp() override {
    fake::Install(1);
    api_ = &fake::Api();
    ncclUniqueId id;
    ASSERT_EQ(api_->nccl.GetUniqueId(&id), ncclSuccess);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ASSERT_EQ(api_->nccl.CommInitRankConfig(&comm_[0], 2, id, 0, &config), ncclInProgress);
    ASSERT_EQ(api_->cuda.StreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(api_->cuda.EventCreateWithFlags(&event_[0], cudaEventDisableTiming), cudaSuccess);
  }
  void TearDown() override {
    api_->cuda.StreamDestroy(stream_);
    fake::Uninstall();
  }
  WaitSpec Spec(bool comms_only, double seconds) {
    WaitSpec s;
    s.comms = comm_;
    s.events = event_;
    s.comms_only = comms_only;
    s.deadline = DeadlineAfter(seconds);
    s.what = "test all-reduce";
    return s;
  }
  const GpuApi* api_ = nullptr;
  ncclComm_t comm_[1] = {nullptr};
  cudaEvent_t event_[1] = {nullptr};
  cudaStream_t stream_ = nullptr;
};

TEST_F(Waiting, FormingWaitsThroughInProgress) {
  EXPECT_TRUE(WaitOrAbort(*api_, Spec(true, 5)).ok());
  EXPECT_NE(comm_[0], nullptr);
  EXPECT_EQ(fake::GetStats().comm_aborts, 0);
}

TEST_F(Waiting, DeadlineAbortsTheCommunicatorOnce) {
  ASSERT_TRUE(WaitOrAbort(*api_, Spec(true, 5)).ok());
  // Rank 1 of this two-rank communicator never comes: the all-reduce blocks.
  void* x = fake::DeviceAlloc(0, 4);
  ASSERT_EQ(api_->nccl.AllReduce(x, x, 1, ncclFloat32, ncclSum, comm_[0], stream_), ncclInProgress);
  ASSERT_EQ(api_->cuda.EventRecord(event_[0], stream_), cudaSuccess);
  const auto start = std::chrono::steady_clock::now();
  Status s = WaitOrAbort(*api_, Spec(false, 0.3));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("NCCL was aborted"), std::string::npos);
  EXPECT_GE(took, 0.29);
  EXPECT_LT(took, 1.5);
  EXPECT_EQ(comm_[0], nullptr);
  EXPECT_EQ(fake::GetStats().comm_aborts, 1);
  // Nothing left to abort: a second wait is immediate and aborts nothing.
  EXPECT_TRUE(WaitOrAbort(*api_, Spec(false, 0.3)).ok());
  EXPECT_EQ(fake::GetStats().comm_aborts, 1);
}

TEST_F(Waiting, AGroupAbortStopsTheWaitWithItsCause) {
  ASSERT_TRUE(WaitOrAbort(*api_, Spec(true, 5)).ok());
  void* x = fake::DeviceAlloc(0, 4);
  ASSERT_EQ(api_->nccl.AllReduce(x, x, 1, ncclFloat32, ncclSum, comm_[0], stream_), ncclInProgress);
  ASSERT_EQ(api_->cuda.EventRecord(event_[0], stream_), cudaSuccess);
  std::atomic<bool> dead{false};
  std::thread monitor([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    dead = true;  // what heartbeats do: the group is aborted
  });
  WaitSpec spec = Spec(false, 30);
  spec.abort_status = [&]() -> Status {
    return dead ? UnavailableError("/job:worker/task:1 is unreachable: its connection closed") : OkStatus();
  };
  Status s = WaitOrAbort(*api_, spec);
  monitor.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(comm_[0], nullptr);
  EXPECT_EQ(fake::GetStats().comm_aborts, 1);
}

TEST_F(Waiting, AnAsyncErrorAbortsWithNcclsText) {
  fake::SetAsyncError(true);
  Status s = WaitOrAbort(*api_, Spec(true, 5));
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("unhandled system error"), std::string::npos) << s.message();
  EXPECT_EQ(fake::GetStats().comm_aborts, 1);
}

TEST(NcclStates, Names) {
  EXPECT_STREQ(NcclStateName(NcclState::kNone), "none");
  EXPECT_STREQ(NcclStateName(NcclState::kAborted), "aborted");
}

}  // namespace
}  // namespace ringmaster::internal
