// The batched copy (agent/src/gpu/batched_copy.h) on a real GPU (label gpu).
// Without a device every test reports "skipped: no GPU". With one:
//  - the embedded kernel loads (where the build had NVRTC) and says which image;
//  - hundreds of items of mixed sizes (1 byte to 4 MiB, plus one past the
//    direct-copy threshold) at odd offsets, random data, every byte compared
//    and the bytes around each item untouched, through every path (the
//    automatic one, the kernel by value, its table form (with chunks of
//    several sizes), one cudaMemcpyAsync per item, and cudaMemcpyBatchAsync
//    where the runtime has it);
//  - a throughput print (GB/s, host enqueue to completion) for 4 KiB, 64 KiB
//    and 1 MiB items, 64 MiB in all, against one 64 MiB cudaMemcpyAsync,
//    per path and for the table form per chunk size;
//  - host staging's copies to and from pinned host memory (the kernel, and
//    one cudaMemcpyAsync per item), every byte checked, GB/s beside one DMA.
// Nothing is gated on time.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gpu/batched_copy.h"
#include "gpu/gpu_api.h"

#ifndef RINGMASTER_TEST_HAVE_NVRTC
#define RINGMASTER_TEST_HAVE_NVRTC 0
#endif

namespace ringmaster::internal {
namespace {

bool HaveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define REQUIRE_GPU() \
  if (!HaveGpu()) GTEST_SKIP() << "skipped: no GPU"

const GpuApi* Api() {
  auto api = LoadGpuApi();
  EXPECT_TRUE(api.ok()) << api.status().ToString();
  return api.ok() ? *api : nullptr;
}

struct DevBuf {
  unsigned char* p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t bytes) : n(bytes) {
    void* v = nullptr;
    EXPECT_EQ(cudaMalloc(&v, bytes), cudaSuccess) << bytes << " bytes";
    p = static_cast<unsigned char*>(v);
  }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
};

const char* PathName(CopyPath p) {
  switch (p) {
    case CopyPath::kAuto:
      return "auto";
    case CopyPath::kKernel:
      return "kernel";
    case CopyPath::kMemcpy:
      return "cudaMemcpyAsync each";
    case CopyPath::kMemcpyBatch:
      return "cudaMemcpyBatchAsync";
    case CopyPath::kKernelTable:
      return "kernel table";
  }
  return "?";
}

class BatchedCopyDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "skipped: no GPU";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    api_ = Api();
    ASSERT_NE(api_, nullptr);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (api_ && stream_) table_.Destroy(*api_, stream_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // One call through `path`: auto and the table form with the table (as
  // the agent's packs), the others without.
  Status Copy(CopyPath path, std::span<const CopyItem> items) {
    const bool with_table = path == CopyPath::kAuto || path == CopyPath::kKernelTable;
    if (with_table) {
      size_t bytes = 0;
      for (const CopyItem& it : items) bytes += it.bytes;
      table_.BeginCall(items.size(), bytes);
    }
    return BatchedCopyVia(path, *api_, items, stream_, 0, with_table ? &table_ : nullptr);
  }
  const GpuApi* api_ = nullptr;
  cudaStream_t stream_ = nullptr;
  CopyTable table_;
};

constexpr CopyPath kPaths[] = {CopyPath::kAuto, CopyPath::kKernel, CopyPath::kKernelTable, CopyPath::kMemcpy,
                               CopyPath::kMemcpyBatch};

TEST_F(BatchedCopyDevice, TheEmbeddedKernelLoads) {
  const auto info = BatchedCopyKernel(*api_, 0);
  std::printf("batched copy kernel on GPU 0: %s: %s\n", info.available ? "loaded" : "not available",
              info.what.c_str());
  if (!RINGMASTER_TEST_HAVE_NVRTC)
    GTEST_SKIP() << "this build embeds no kernel image (no NVRTC): " << info.what;
  EXPECT_TRUE(info.available) << info.what;
}

TEST_F(BatchedCopyDevice, MixedSizesAndOddAlignmentsEveryByteEveryPath) {
  std::mt19937_64 rng(2026);
  std::vector<size_t> sizes;
  for (int i = 0; i < 200; ++i) sizes.push_back(1 + rng() % 64);
  for (int i = 0; i < 200; ++i) sizes.push_back(65 + rng() % (64 * 1024));
  for (int i = 0; i < 40; ++i) sizes.push_back(64 * 1024 + rng() % (4 * 1024 * 1024 - 64 * 1024 + 1));
  sizes.push_back(4 * 1024 * 1024);
  sizes.push_back(1);
  sizes.push_back(kDirectCopyMinBytes + 3);        // past the threshold: its own cudaMemcpyAsync
  sizes.push_back(kDirectNarrowCopyMinBytes + 1);  // given 1-byte words below: also direct
  std::shuffle(sizes.begin(), sizes.end(), rng);
  std::vector<size_t> src_at, dst_at;
  size_t src_len = 0, dst_len = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    size_t so = rng() % 32, d = rng() % 32;
    if (sizes[i] == kDirectNarrowCopyMinBytes + 1) so = 0, d = 1;
    src_at.push_back(src_len + so);
    dst_at.push_back(dst_len + d);
    src_len += (so + sizes[i] + 64 + 255) / 256 * 256;
    dst_len += (d + sizes[i] + 64 + 255) / 256 * 256;
  }
  std::vector<unsigned char> src_host(src_len);
  for (auto& b : src_host) b = static_cast<unsigned char>(rng());
  std::vector<unsigned char> want(dst_len, 0xA5);
  for (size_t i = 0; i < sizes.size(); ++i) std::memcpy(&want[dst_at[i]], &src_host[src_at[i]], sizes[i]);
  DevBuf src(src_len), dst(dst_len);
  ASSERT_EQ(cudaMemcpy(src.p, src_host.data(), src_len, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<CopyItem> items;
  for (size_t i = 0; i < sizes.size(); ++i) items.push_back({dst.p + dst_at[i], src.p + src_at[i], sizes[i]});
  items.push_back({dst.p, src.p, 0});  // an empty item changes nothing

  // Every path; the table form again with other chunk sizes (0: the default).
  std::vector<std::pair<CopyPath, unsigned>> runs;
  for (CopyPath path : kPaths) runs.emplace_back(path, 0);
  for (unsigned chunk : {16u, 1040u, 32768u}) runs.emplace_back(CopyPath::kKernelTable, chunk);
  for (const auto& [path, chunk] : runs) {
    SCOPED_TRACE(std::string(PathName(path)) + (chunk ? ", chunks of " + std::to_string(chunk) : ""));
    table_.chunk_bytes = chunk ? chunk : kChunkBytes;
    ASSERT_EQ(cudaMemset(dst.p, 0xA5, dst_len), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Status s = Copy(path, items);
    const bool kernel = path == CopyPath::kKernel || path == CopyPath::kKernelTable;
    if (s.code() == StatusCode::kFailedPrecondition && path != CopyPath::kAuto &&
        !(kernel && RINGMASTER_TEST_HAVE_NVRTC)) {
      std::printf("batched copy path %s not run: %s\n", PathName(path), s.message().c_str());
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    std::vector<unsigned char> got(dst_len);
    ASSERT_EQ(cudaMemcpy(got.data(), dst.p, dst_len, cudaMemcpyDeviceToHost), cudaSuccess);
    if (got != want) {
      for (size_t i = 0; i < sizes.size(); ++i) {
        const size_t from = i == 0 ? 0 : dst_at[i - 1] + sizes[i - 1];
        for (size_t b = from; b < dst_at[i] + sizes[i]; ++b)
          ASSERT_EQ(got[b], want[b]) << "item " << i << " (" << sizes[i] << " bytes, src offset "
                                     << src_at[i] % 256 << ", dst offset " << dst_at[i] % 256 << "), byte "
                                     << static_cast<long>(b - dst_at[i]);
      }
      FAIL() << "the bytes after the last item differ";
    }
    std::printf("batched copy path %s%s: %zu items, every byte right\n", PathName(path),
                chunk ? (" (chunks of " + std::to_string(chunk) + " bytes)").c_str() : "", sizes.size());
  }
  table_.chunk_bytes = kChunkBytes;
}

// Host enqueue to completion, best of `reps`, in GB/s.
template <typename F>
double GBps(size_t bytes, int reps, cudaStream_t stream, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps + 1; ++r) {  // the first is a warm-up
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto t0 = std::chrono::steady_clock::now();
    if (!f()) return 0;
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, s);
  }
  return static_cast<double>(bytes) / best / 1e9;
}

TEST_F(BatchedCopyDevice, ThroughputAgainstOneLargeCopy) {
  constexpr size_t kTotal = size_t{64} << 20;
  constexpr int kReps = 10;
  DevBuf src(kTotal), dst(kTotal);
  ASSERT_EQ(cudaMemset(src.p, 0x3c, kTotal), cudaSuccess);
  const double one = GBps(kTotal, kReps, stream_, [&] {
    return cudaMemcpyAsync(dst.p, src.p, kTotal, cudaMemcpyDeviceToDevice, stream_) == cudaSuccess;
  });
  for (size_t item : {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20}) {
    std::vector<CopyItem> items;
    for (size_t off = 0; off < kTotal; off += item) items.push_back({dst.p + off, src.p + off, item});
    std::string line =
        "batched copy " + std::to_string(item >> 10) + " KiB x " + std::to_string(items.size()) + ":";
    for (CopyPath path : kPaths) {
      Status last;
      const double g = GBps(kTotal, kReps, stream_, [&] {
        last = Copy(path, items);
        return last.ok();
      });
      char buf[128];
      if (last.ok()) {
        std::snprintf(buf, sizeof buf, " %s %.1f GB/s,", PathName(path), g);
      } else {
        std::snprintf(buf, sizeof buf, " %s n/a,", PathName(path));
        EXPECT_EQ(last.code(), StatusCode::kFailedPrecondition) << last.ToString();
      }
      line += buf;
    }
    char tail[96];
    std::snprintf(tail, sizeof tail, " one 64 MiB cudaMemcpyAsync %.1f GB/s", one);
    std::printf("%s%s\n", line.c_str(), tail);
    // The table form per chunk size: what kChunkBytes was chosen by.
    line = "batched copy " + std::to_string(item >> 10) + " KiB x " + std::to_string(items.size()) +
           " by chunk:";
    for (unsigned chunk : {4096u, 8192u, 16384u, 32768u, 65536u}) {
      table_.chunk_bytes = chunk;
      Status last;
      const double g = GBps(kTotal, kReps, stream_, [&] {
        last = Copy(CopyPath::kKernelTable, items);
        return last.ok();
      });
      if (RINGMASTER_TEST_HAVE_NVRTC) {
        EXPECT_TRUE(last.ok()) << last.ToString();
      }
      char buf[96];
      if (last.ok())
        std::snprintf(buf, sizeof buf, "%s %u KiB %.1f GB/s", chunk == 4096u ? "" : ",", chunk >> 10, g);
      else
        std::snprintf(buf, sizeof buf, "%s %u KiB n/a", chunk == 4096u ? "" : ",", chunk >> 10);
      line += buf;
    }
    table_.chunk_bytes = kChunkBytes;
    std::printf("%s\n", line.c_str());
    // The copies were right, too.
    std::vector<unsigned char> got(kTotal);
    ASSERT_EQ(cudaMemcpy(got.data(), dst.p, kTotal, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(std::count(got.begin(), got.end(), 0x3c), static_cast<long>(kTotal));
    ASSERT_EQ(cudaMemset(dst.p, 0, kTotal), cudaSuccess);
  }
}

// Host staging's copies: device memory to pinned host memory and back,
// through the kernel (which reads and writes pinned memory in place) and one
// cudaMemcpyAsync per item, every byte checked, GB/s beside one DMA.
TEST_F(BatchedCopyDevice, ToAndFromPinnedHostMemoryEveryByteAndThroughput) {
  constexpr size_t kTotal = size_t{64} << 20;
  constexpr int kReps = 10;
  DevBuf dev(kTotal);
  void* h = nullptr;
  ASSERT_EQ(cudaHostAlloc(&h, kTotal, cudaHostAllocPortable), cudaSuccess);
  auto* pinned = static_cast<unsigned char*>(h);
  std::mt19937_64 rng(55);
  std::vector<unsigned char> want(kTotal);
  for (auto& b : want) b = static_cast<unsigned char>(rng());
  for (CopyEnds ends : {CopyEnds::kDeviceToHost, CopyEnds::kHostToDevice}) {
    const bool down = ends == CopyEnds::kDeviceToHost;
    const cudaMemcpyKind kind = down ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    unsigned char* to = down ? pinned : dev.p;
    const unsigned char* from = down ? dev.p : pinned;
    const double one = GBps(kTotal, kReps, stream_,
                            [&] { return cudaMemcpyAsync(to, from, kTotal, kind, stream_) == cudaSuccess; });
    for (size_t item : {size_t{4} << 10, size_t{64} << 10}) {
      std::vector<CopyItem> items;
      for (size_t off = 0; off < kTotal; off += item) items.push_back({to + off, from + off, item});
      std::string line = std::string("batched copy ") + (down ? "down " : "up ") +
                         std::to_string(item >> 10) + " KiB x " + std::to_string(items.size()) + ":";
      for (CopyPath path : {CopyPath::kAuto, CopyPath::kMemcpy}) {
        // Fresh source bytes, a poisoned destination, every byte compared.
        if (down) {
          ASSERT_EQ(cudaMemcpy(dev.p, want.data(), kTotal, cudaMemcpyHostToDevice), cudaSuccess);
          std::memset(pinned, 0xA5, kTotal);
        } else {
          std::memcpy(pinned, want.data(), kTotal);
          ASSERT_EQ(cudaMemset(dev.p, 0xA5, kTotal), cudaSuccess);
        }
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        Status last;
        const double g = GBps(kTotal, kReps, stream_, [&] {
          if (path == CopyPath::kAuto) {
            table_.BeginCall(items.size(), kTotal);
            last = BatchedCopyVia(path, *api_, items, stream_, 0, &table_, ends);
          } else {
            last = BatchedCopyVia(path, *api_, items, stream_, 0, nullptr, ends);
          }
          return last.ok();
        });
        ASSERT_TRUE(last.ok()) << last.ToString();
        std::vector<unsigned char> got(kTotal);
        if (down) {
          std::memcpy(got.data(), pinned, kTotal);
        } else {
          ASSERT_EQ(cudaMemcpy(got.data(), dev.p, kTotal, cudaMemcpyDeviceToHost), cudaSuccess);
        }
        for (size_t b = 0; got != want && b < kTotal; ++b)
          ASSERT_EQ(got[b], want[b]) << (down ? "down" : "up") << ", " << PathName(path) << ", item "
                                     << b / item << " byte " << b % item;
        char buf[96];
        std::snprintf(buf, sizeof buf, " %s %.1f GB/s,", PathName(path), g);
        line += buf;
      }
      char tail[96];
      std::snprintf(tail, sizeof tail, " one 64 MiB cudaMemcpyAsync %.1f GB/s", one);
      std::printf("%s%s\n", line.c_str(), tail);
    }
  }
  cudaFreeHost(h);
}

}  // namespace
}  // namespace ringmaster::internal

int main(int argc, char** argv) {
  // The agent dlopens the very runtime this test links (the wheels' copy is on
  // no loader path); an explicit setting wins.
  ::setenv(ringmaster::kEnvCudartLibrary, RINGMASTER_TEST_CUDART, 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
