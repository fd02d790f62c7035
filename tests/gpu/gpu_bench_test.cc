// rm-bench-gpu without a GPU: its pure parts (bench/gpu/bench_check.h) and
// its three measurements (bench/gpu/gpu_cases.h) through the agent's public
// API on the fake CUDA/NCCL, with a BenchDevice over the same fake.
// The figures mean nothing here; what is checked is that every figure is
// made, checked byte for byte, and that a wrong byte or a missing bound
// fails its case by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "bench_check.h"
#include "fake_gpu.h"
#include "gpu_cases.h"

namespace rmgpubench {
namespace {

// ---------------------------------------------------------------- pure parts

TEST(BenchCheck, RandomValuesAreFreshPerSeedAndSumExactlyInAnyOrder) {
  const auto a = RandomValues(10000, 1), b = RandomValues(10000, 2);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, RandomValues(10000, 1));
  EXPECT_NE(std::count(a.begin(), a.end(), a[0]), 10000);
  std::vector<std::vector<float>> members;
  for (uint64_t s = 0; s < 16; ++s) members.push_back(RandomValues(10000, 100 + s));
  const auto want = ReferenceSum(members);
  for (size_t i = 0; i < 10000; ++i) {
    float fwd = 0, back = 0;
    for (size_t m = 0; m < 16; ++m) fwd += members[m][i];
    for (size_t m = 16; m-- > 0;) back += members[m][i];
    ASSERT_EQ(fwd, want[i]) << i;
    ASSERT_EQ(back, want[i]) << i;
  }
  // Fractions and both signs.
  EXPECT_TRUE(std::any_of(a.begin(), a.end(), [](float v) { return v < 0; }));
  EXPECT_TRUE(
      std::any_of(a.begin(), a.end(), [](float v) { return v != static_cast<float>(static_cast<int>(v)); }));
}

TEST(BenchCheck, ReferenceSumIsElementWise) {
  std::vector<std::vector<float>> m = {{1, 2, 3}, {10, 20, 30}, {-1, 0.5f, 0}};
  EXPECT_EQ(ReferenceSum(m), (std::vector<float>{10, 22.5f, 33}));
  EXPECT_EQ(ReferenceSum(std::span<const std::vector<float>>(m.data(), 1)), m[0]);
}

TEST(BenchCheck, CompareBytesNamesTheFirstWrongByteAndCountsThem) {
  std::vector<unsigned char> want(100, 7), got = want;
  EXPECT_EQ(CompareBytes(got, want), "");
  got[42] = 0xff;
  got[90] = 0;
  EXPECT_EQ(CompareBytes(got, want), "2 of 100 bytes differ; first: byte 42 is 0xff, want 0x07");
  EXPECT_EQ(CompareBytes(got, want, [](size_t o) { return NameTensorByte(o, 16, 32); }),
            "2 of 100 bytes differ; first: tensors[1] byte 10 is 0xff, want 0x07");
  got[42] = 7;
  EXPECT_EQ(CompareBytes(got, want, [](size_t o) { return NameTensorByte(o, 16, 32); }),
            "1 of 100 bytes differ; first: the gap after tensors[2] (its byte 10) is 0x00, want 0x07");
  got.pop_back();
  EXPECT_EQ(CompareBytes(got, want), "got 99 bytes, want 100");
}

TEST(BenchCheck, NameTensorByteTellsTensorsFromGaps) {
  EXPECT_EQ(NameTensorByte(0, 4096, 4352), "tensors[0] byte 0");
  EXPECT_EQ(NameTensorByte(4095, 4096, 4352), "tensors[0] byte 4095");
  EXPECT_EQ(NameTensorByte(4096, 4096, 4352), "the gap after tensors[0] (its byte 0)");
  EXPECT_EQ(NameTensorByte(3 * 4352 + 57, 4096, 4352), "tensors[3] byte 57");
  EXPECT_EQ(NameTensorByte(9, 0, 0), "byte 9");
}

TEST(BenchCheck, SpeedRatioIsRingmastersSpeedOverTheBounds) {
  EXPECT_DOUBLE_EQ(SpeedRatio(50, 100, kGBps), 0.5);     // half the throughput
  EXPECT_DOUBLE_EQ(SpeedRatio(200, 100, kMicros), 0.5);  // twice the time
  EXPECT_DOUBLE_EQ(SpeedRatio(90, 100, kGBps), 0.9);
  EXPECT_TRUE(std::isnan(SpeedRatio(0, 100, kGBps)));
  EXPECT_TRUE(std::isnan(SpeedRatio(1, std::nan(""), kMicros)));
}

TEST(BenchCheck, MedianOfTimings) {
  EXPECT_DOUBLE_EQ(MedianSeconds({3e-6, 1e-6, 2e-6}), 2e-6);
  EXPECT_TRUE(std::isnan(MedianSeconds({})));
}

TEST(BenchCheck, CsvHasThePlottedColumnsAndQuotes) {
  EXPECT_EQ(CsvHeader().rfind("kind,case,bytes,ringmaster,bound,unit,ratio,", 0), 0u);
  Row r;
  r.kind = "pack";
  r.name = "pack 16384 x 4 KiB (64 MiB)";
  r.bytes = 4096;
  r.tensors = 16384;
  r.ringmaster = 0.8;
  r.bound = 1522;
  r.unit = kGBps;
  r.ratio = SpeedRatio(r.ringmaster, r.bound, r.unit);
  r.bound_what = "one 64 MiB device-to-device copy";
  r.check = "ringmaster: 1 of 4 bytes differ; first: \"x\", y";
  EXPECT_EQ(
      CsvLine(r),
      "pack,pack 16384 x 4 KiB (64 MiB),4096,0.8,1522,GB/s,0.000525624,16384,1,one 64 MiB device-to-device "
      "copy,\"ringmaster: 1 of 4 bytes differ; first: \"\"x\"\", y\"");
  const std::string line = TableLine(r);
  EXPECT_EQ(line.rfind("pack 16384 x 4 KiB (64 MiB)", 0), 0u) << line;
  EXPECT_NE(line.find(" 0.8 "), std::string::npos) << line;
  EXPECT_NE(line.find(" 1522 "), std::string::npos) << line;
  EXPECT_NE(line.find(" 0.000526 "), std::string::npos) << line;
  r.ringmaster = std::nan("");
  EXPECT_NE(CsvLine(r).find("4096,,1522,"), std::string::npos) << "a missing figure is an empty cell";
  EXPECT_EQ(ExitCode({r}), 1);
  r.check = "ok";
  EXPECT_EQ(ExitCode({r, r}), 0);
  EXPECT_EQ(SizeText(4), "4 B");
  EXPECT_EQ(SizeText(64 << 10), "64 KiB");
  EXPECT_EQ(SizeText(size_t{16} << 20), "16 MiB");
}

// ------------------------------------------------------- the cases on the fake

// BenchDevice over the fake: "device memory" is the fake's, copies go
// through its streams. The all-reduce bound is a device copy (one rank's
// mean is its input). Drills: corrupt one download, or have no bound.
class FakeBenchDevice : public BenchDevice {
 public:
  explicit FakeBenchDevice(const ringmaster::internal::GpuApi& api) : api_(api) {}
  void* Alloc(size_t bytes) override { return ringmaster::fake::DeviceAlloc(0, bytes); }
  void Free(void* p) override { api_.cuda.FreeAsync(p, nullptr); }
  void* NewStream() override {
    cudaStream_t s;
    EXPECT_EQ(api_.cuda.StreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    return s;
  }
  void CopyToDevice(void* dst, const void* src, size_t n, void* s) override {
    Copy(dst, src, n, s, cudaMemcpyHostToDevice);
  }
  void CopyToHost(void* dst, const void* src, size_t n, void* s) override {
    Copy(dst, src, n, s, cudaMemcpyDeviceToHost);
    if (downloads_++ == corrupt_download && corrupt_byte < n)
      static_cast<unsigned char*>(dst)[corrupt_byte] ^= 0x40;
  }
  void CopyOnDevice(void* dst, const void* src, size_t n, void* s) override {
    Copy(dst, src, n, s, cudaMemcpyDeviceToDevice);
  }
  void Fill(void* dst, unsigned char byte, size_t n, void* s) override {
    std::vector<unsigned char> v(n, byte);
    Copy(dst, v.data(), n, s, cudaMemcpyHostToDevice);
  }
  double TimedCopy(void* dst, const void* src, size_t n, void* s) override {
    Copy(dst, src, n, s, cudaMemcpyDeviceToDevice);
    return 1e-3;
  }
  std::string StartAllReduceBound() override { return bound_error; }
  double TimedAllReduce(const void* src, void* dst, size_t count, void* s) override {
    return TimedCopy(dst, src, count * sizeof(float), s);
  }
  std::string BoundLibrary() override { return "the fake"; }

  int corrupt_download = -1;  // which CopyToHost (0-based) gets one byte flipped
  size_t corrupt_byte = 0;
  std::string bound_error;

 private:
  void Copy(void* dst, const void* src, size_t n, void* s, cudaMemcpyKind kind) {
    auto st = static_cast<cudaStream_t>(s);
    ASSERT_EQ(api_.cuda.MemcpyAsync(dst, src, n, kind, st), cudaSuccess);
    cudaEvent_t e;
    ASSERT_EQ(api_.cuda.EventCreateWithFlags(&e, 0), cudaSuccess);
    ASSERT_EQ(api_.cuda.EventRecord(e, st), cudaSuccess);
    while (api_.cuda.EventQuery(e) == cudaErrorNotReady) std::this_thread::yield();
    api_.cuda.EventDestroy(e);
  }
  const ringmaster::internal::GpuApi& api_;
  int downloads_ = 0;
};

class BenchOnFake : public ::testing::Test {
 protected:
  void SetUp() override {
    ringmaster::fake::Install(1);
    plan_.pack_total_bytes = 256 << 10;
    plan_.pack_tensor_bytes = {4 << 10, 64 << 10};
    plan_.latency_bytes = {4, 64 << 10};
    plan_.staging_bytes = {64 << 10, 256 << 10};
    plan_.members = 3;
    plan_.iters = 3;
    plan_.latency_iters = 4;
    plan_.warmups = 1;
    plan_.timeout_seconds = 30;
  }
  void TearDown() override { ringmaster::fake::Uninstall(); }

  std::vector<Row> Run(FakeBenchDevice& dev, bool staging = true) {
    std::vector<Row> rows;
    const Emit emit = [&](const Row& r) { rows.push_back(r); };
    auto one = FormLocalGroup(1);
    EXPECT_TRUE(one.ok()) << one.status().ToString();
    if (!one.ok()) return rows;
    MeasurePacking(dev, *(*one)[0], plan_, emit);
    MeasureLatency(dev, *(*one)[0], plan_, emit);
    one->clear();
    if (staging) MeasureStaging(dev, plan_, emit);
    return rows;
  }

  Plan plan_;
};

TEST_F(BenchOnFake, EveryFigureIsMadeThroughTheAgentAndChecked) {
  FakeBenchDevice dev(ringmaster::fake::Api());
  const auto rows = Run(dev);
  ASSERT_EQ(rows.size(), 8u);
  const char* kinds[] = {"pack",    "pack",          "latency", "latency-async",
                         "latency", "latency-async", "staging", "staging"};
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    EXPECT_EQ(r.kind, kinds[i]);
    EXPECT_EQ(r.check, "ok") << r.name;
    EXPECT_GT(r.ringmaster, 0) << r.name;
    EXPECT_GT(r.bound, 0) << r.name;
    EXPECT_GT(r.ratio, 0) << r.name;
  }
  EXPECT_EQ(rows[0].tensors, 64);
  EXPECT_EQ(rows[0].bytes, 4096u);
  EXPECT_EQ(rows[1].tensors, 4);
  EXPECT_EQ(rows[2].bytes, 4u);
  EXPECT_EQ(rows[2].unit, kMicros);
  EXPECT_EQ(rows[3].bytes, 4u);
  EXPECT_EQ(rows[6].members, 3);
  EXPECT_EQ(rows[7].bytes, 256u << 10);
  // The agent did the work: NCCL for packing and latency, host staging through pinned buffers.
  const auto st = ringmaster::fake::GetStats();
  EXPECT_GE(st.allreduces, 2 * (1 + 3) + 2 * 2 * (1 + 4));
  EXPECT_GT(st.host_allocs, 0);
  EXPECT_GT(st.events_created, 0) << "the agent recorded no event on the tensors' stream";
  EXPECT_EQ(ExitCode(rows), 0);
}

TEST_F(BenchOnFake, AWrongByteInTheAgentsOutputFailsItsCaseByName) {
  FakeBenchDevice dev(ringmaster::fake::Api());
  dev.corrupt_download = 0;  // the first check: the packed 4 KiB tensors
  dev.corrupt_byte = 4096 + 3;
  const auto rows = Run(dev, false);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].check.rfind("ringmaster: 1 of " + std::to_string(64 * (4096 + 256)) +
                                    " bytes differ; first: the gap after tensors[0] (its byte 3) is 0x",
                                0),
            0u)
      << rows[0].check;
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].check, "ok") << rows[i].name;
  EXPECT_EQ(ExitCode(rows), 1);
}

TEST_F(BenchOnFake, APoisonedOutputTheBoundNeverWroteFailsTheBound) {
  FakeBenchDevice dev(ringmaster::fake::Api());
  dev.corrupt_download = 1;  // the second check: the bound's copy of the 4 KiB case
  dev.corrupt_byte = 10;
  const auto rows = Run(dev, false);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].check.rfind("bound: 1 of 262144 bytes differ; first: byte 10 is 0x", 0), 0u)
      << rows[0].check;
}

TEST_F(BenchOnFake, WithoutTheAgentsNcclTheLatencyRowsFailNamingWhy) {
  FakeBenchDevice dev(ringmaster::fake::Api());
  dev.bound_error = "the agent has not loaded libnccl.so.2";
  const auto rows = Run(dev, false);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].check, "ok");
  for (size_t i : {2, 3, 4, 5}) {  // both latency rows of both sizes
    EXPECT_EQ(rows[i].check, "bound: the agent has not loaded libnccl.so.2") << rows[i].name;
    EXPECT_TRUE(std::isnan(rows[i].ratio)) << rows[i].name;
  }
  EXPECT_EQ(ExitCode(rows), 1);
}

}  // namespace
}  // namespace rmgpubench
