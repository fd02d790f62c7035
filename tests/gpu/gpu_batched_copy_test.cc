// The batched copy (agent/src/gpu/batched_copy*, kernels/) without a GPU: the
// parameter struct's layout, the split of items into launches, the kernel's
// per-thread arithmetic run on the host for every block and thread (every
// byte compared, odd alignments and sizes), the choice of image per compute
// capability, the embedded images themselves, and BatchedCopy against a small
// table of its own whose "device memory" is host memory: one launch per 128
// items, the module loaded once per device (also from many threads), and the
// per-item cudaMemcpyAsync fallback with the reason it gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpu/batched_copy.h"
#include "gpu/batched_copy_params.h"
#include "gpu/batched_copy_plan.h"
#include "gpu/kernels/batched_copy_core.h"
#include "gpu/kernels/embedded_image.h"

#ifndef RINGMASTER_TEST_HAVE_NVRTC
#define RINGMASTER_TEST_HAVE_NVRTC 0
#endif

namespace ringmaster::internal {
namespace {

void* Addr(uintptr_t a) {
  return reinterpret_cast<void*>(a);
}

// What the GPU does for one launch: every thread of every block, in turn.
void EmulateLaunch(const RmBatchedCopyParams& p, unsigned grid, unsigned threads) {
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < threads; ++t)
      ringmaster_kernels::CopyThread(ringmaster_kernels::ParamsItems{p}, b, t, threads);
}

TEST(BatchedCopyParams, PlainLayoutUnderTheClassicParameterLimit) {
  EXPECT_EQ(sizeof(RmBatchedCopyParams), 3592u);
  EXPECT_LE(sizeof(RmBatchedCopyParams), 4096u);
  EXPECT_EQ(offsetof(RmBatchedCopyParams, dst), 0u);
  EXPECT_EQ(offsetof(RmBatchedCopyParams, src), 8u * RM_BATCHED_COPY_MAX_ITEMS);
  EXPECT_EQ(offsetof(RmBatchedCopyParams, bytes), 16u * RM_BATCHED_COPY_MAX_ITEMS);
  EXPECT_EQ(offsetof(RmBatchedCopyParams, block_end), 24u * RM_BATCHED_COPY_MAX_ITEMS);
  EXPECT_EQ(offsetof(RmBatchedCopyParams, count), 28u * RM_BATCHED_COPY_MAX_ITEMS);
  EXPECT_EQ(std::string_view(RM_BATCHED_COPY_KERNEL_NAME), "ringmaster_batched_copy");
}

TEST(BatchedCopyPlan, WordSizeIsTheAlignmentBothAddressesShare) {
  EXPECT_EQ(CopyWordBytes(Addr(0x1000), Addr(0x2000)), 16u);
  EXPECT_EQ(CopyWordBytes(Addr(0x1003), Addr(0x2013)), 16u);  // same offset in 16: a head, then 16-byte words
  EXPECT_EQ(CopyWordBytes(Addr(0x1008), Addr(0x2000)), 8u);
  EXPECT_EQ(CopyWordBytes(Addr(0x100c), Addr(0x2000)), 4u);
  EXPECT_EQ(CopyWordBytes(Addr(0x1002), Addr(0x2000)), 2u);
  EXPECT_EQ(CopyWordBytes(Addr(0x1001), Addr(0x2000)), 1u);
}

TEST(BatchedCopyPlan, BlocksGrowWithTheItemUpToACap) {
  EXPECT_EQ(BlocksForItem(1), 1u);
  EXPECT_EQ(BlocksForItem(kBytesPerBlock), 1u);
  EXPECT_EQ(BlocksForItem(kBytesPerBlock + 1), 2u);
  EXPECT_EQ(BlocksForItem(size_t{1} << 20), (size_t{1} << 20) / kBytesPerBlock);
  EXPECT_EQ(BlocksForItem(size_t{1} << 40), kMaxBlocksPerItem);
}

TEST(BatchedCopyPlan, OneLaunchPer128ItemsWithPrefixSumsOfBlocks) {
  std::vector<CopyItem> items;
  for (uintptr_t i = 0; i < 300; ++i)
    items.push_back(
        {Addr(0x100000 * (i + 1)), Addr(0x80000000 + 0x100000 * i), static_cast<size_t>(4096 + i * 1000)});
  items.insert(items.begin() + 5, CopyItem{Addr(0x10), Addr(0x20), 0});  // zero bytes: left out
  const CopyPlan plan = PlanBatchedCopy(items);
  ASSERT_EQ(plan.launches.size(), 3u);
  EXPECT_TRUE(plan.direct.empty());
  EXPECT_EQ(plan.launches[0].params.count, 128u);
  EXPECT_EQ(plan.launches[1].params.count, 128u);
  EXPECT_EQ(plan.launches[2].params.count, 44u);
  EXPECT_EQ(plan.launches[0].first_item, 0u);
  EXPECT_EQ(plan.launches[1].first_item, 129u);  // item 5 was the empty one
  EXPECT_EQ(plan.launches[2].first_item, 257u);
  size_t next = 0;
  for (const CopyLaunch& l : plan.launches) {
    unsigned blocks = 0;
    for (unsigned k = 0; k < l.params.count; ++k, ++next) {
      if (next == 5) ++next;
      const CopyItem& it = items[next];
      EXPECT_EQ(l.params.dst[k], reinterpret_cast<uintptr_t>(it.dst)) << next;
      EXPECT_EQ(l.params.src[k], reinterpret_cast<uintptr_t>(it.src)) << next;
      EXPECT_EQ(l.params.bytes[k], it.bytes) << next;
      blocks += BlocksForItem(it.bytes);
      EXPECT_EQ(l.params.block_end[k], blocks) << next;
    }
    EXPECT_EQ(l.grid, blocks);
    for (unsigned k = l.params.count; k < RM_BATCHED_COPY_MAX_ITEMS; ++k) EXPECT_EQ(l.params.bytes[k], 0u);
    EXPECT_EQ(l.params.reserved, 0u);
  }
  EXPECT_EQ(next, items.size());
}

TEST(BatchedCopyPlan, HugeAndNarrowItemsGoDirectlyAndTheFallbackTakesAll) {
  const std::vector<CopyItem> items = {
      {Addr(0x1000), Addr(0x2000), kDirectCopyMinBytes},            // huge
      {Addr(0x1000), Addr(0x2000), kDirectCopyMinBytes - 1},        // kernel
      {Addr(0x1001), Addr(0x2000), kDirectNarrowCopyMinBytes},      // narrow (1-byte words), big: direct
      {Addr(0x1001), Addr(0x2000), kDirectNarrowCopyMinBytes - 1},  // narrow, smaller: kernel
      {Addr(0x1004), Addr(0x2000), kDirectNarrowCopyMinBytes},      // 4-byte words: kernel
  };
  const CopyPlan plan = PlanBatchedCopy(items);
  EXPECT_EQ(plan.direct, (std::vector<size_t>{0, 2}));
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].params.count, 3u);
  EXPECT_EQ(plan.launches[0].params.bytes[0], kDirectCopyMinBytes - 1);
  const CopyPlan fallback = PlanBatchedCopy(items, /*kernel=*/false);
  EXPECT_TRUE(fallback.launches.empty());
  EXPECT_EQ(fallback.direct, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(BatchedCopyPlan, CopiesWithAHostEndGoDirectlyFromAQuarterMebibyteOrWithNarrowWords) {
  for (CopyEnds ends : {CopyEnds::kDeviceToHost, CopyEnds::kHostToDevice}) {
    EXPECT_FALSE(CopiesDirectly({Addr(0x1000), Addr(0x2000), kDirectHostCopyMinBytes - 1}, ends));
    EXPECT_TRUE(CopiesDirectly({Addr(0x1000), Addr(0x2000), kDirectHostCopyMinBytes}, ends));
    EXPECT_FALSE(CopiesDirectly({Addr(0x1004), Addr(0x2000), 64}, ends));  // 4-byte words: the kernel
    EXPECT_TRUE(CopiesDirectly({Addr(0x1002), Addr(0x2000), 64}, ends));   // 2-byte words over PCIe: a DMA
  }
  const std::vector<CopyItem> items = {{Addr(0x1000), Addr(0x2000), 4096},
                                       {Addr(0x10000), Addr(0x20000), kDirectHostCopyMinBytes}};
  const CopyPlan down = PlanBatchedCopy(items, true, CopyEnds::kDeviceToHost);
  EXPECT_EQ(down.direct, (std::vector<size_t>{1}));
  ASSERT_EQ(down.launches.size(), 1u);
  EXPECT_EQ(down.launches[0].params.count, 1u);
  const CopyTablePlan up = PlanBatchedCopyTable(items, kChunkBytes, CopyEnds::kHostToDevice);
  EXPECT_EQ(up.direct, (std::vector<size_t>{1}));
  EXPECT_EQ(up.items.size(), 1u);
  // Between device buffers the same item is the kernel's.
  EXPECT_TRUE(PlanBatchedCopy(items).direct.empty());
}

// The kernel's arithmetic, on the host: items of many sizes at every offset
// pair mod 16 (and more), each byte compared, nothing outside written. The
// table form runs every thread of `grid` blocks (the plan's unless given: a
// smaller grid loops over the chunks).
void EmulateTable(const CopyTablePlan& plan, unsigned threads, unsigned grid = 0) {
  const RmBatchedCopyTableParams p{0,
                                   0,
                                   static_cast<unsigned>(plan.items.size()),
                                   static_cast<unsigned>(plan.chunks.size()),
                                   plan.chunk_bytes,
                                   0};
  if (grid == 0) grid = plan.grid;
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < threads; ++t)
      ringmaster_kernels::CopyTableThread(p, plan.items.data(), plan.chunks.data(), b, t, threads, grid);
}

// 0: by value; else the table form with chunks of this many bytes.
class BatchedCopyKernelMath : public ::testing::TestWithParam<unsigned> {};

TEST_P(BatchedCopyKernelMath, EveryByteAtAnyAlignmentAndSize) {
  std::mt19937_64 rng(7);
  const size_t sizes[] = {1,   2,   3,    7,    15,   16,    17,    31,    33,
                          100, 255, 4095, 4096, 4097, 16383, 16385, 40000, 70001};
  struct Case {
    size_t src_off, dst_off, size;
  };
  std::vector<Case> cases;
  for (size_t s : sizes)
    for (size_t so = 0; so < 17; so += (s > 5000 ? 5 : 1))
      for (size_t d = 0; d < 17; d += (s > 5000 ? 3 : 1)) cases.push_back({so, d, s});
  // Laid out in two arenas with guard bytes between items.
  std::vector<size_t> src_at, dst_at;
  size_t src_len = 0, dst_len = 0;
  for (const Case& c : cases) {
    src_at.push_back(src_len + c.src_off);
    dst_at.push_back(dst_len + c.dst_off);
    src_len += (c.src_off + c.size + 64 + 15) / 16 * 16;
    dst_len += (c.dst_off + c.size + 64 + 15) / 16 * 16;
  }
  std::vector<unsigned char> src(src_len + 16), dst(dst_len + 16, 0xA5), want(dst_len + 16, 0xA5);
  for (auto& b : src) b = static_cast<unsigned char>(rng());
  // 16-byte aligned bases, like device allocations.
  unsigned char* s0 = src.data() + (16 - reinterpret_cast<uintptr_t>(src.data()) % 16) % 16;
  unsigned char* d0 = dst.data() + (16 - reinterpret_cast<uintptr_t>(dst.data()) % 16) % 16;
  unsigned char* w0 = want.data() + (d0 - dst.data());
  std::vector<CopyItem> items;
  for (size_t i = 0; i < cases.size(); ++i) {
    items.push_back({d0 + dst_at[i], s0 + src_at[i], cases[i].size});
    std::memcpy(w0 + dst_at[i], s0 + src_at[i], cases[i].size);
  }
  if (GetParam()) {
    const CopyTablePlan plan = PlanBatchedCopyTable(items, GetParam());
    ASSERT_TRUE(plan.direct.empty());
    ASSERT_EQ(plan.items.size(), items.size());  // one launch for them all
    EmulateTable(plan, RM_BATCHED_COPY_THREADS);
  } else {
    const CopyPlan plan = PlanBatchedCopy(items);
    ASSERT_TRUE(plan.direct.empty());
    ASSERT_GT(plan.launches.size(), 1u);
    for (const CopyLaunch& l : plan.launches) EmulateLaunch(l.params, l.grid, RM_BATCHED_COPY_THREADS);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const size_t from = dst_at[i] - cases[i].dst_off, to = dst_at[i] + cases[i].size + 32;
    for (size_t b = from; b < to; ++b)
      ASSERT_EQ(d0[b], w0[b]) << "item " << i << " (" << cases[i].size << " bytes, src offset "
                              << cases[i].src_off << ", dst offset " << cases[i].dst_off << "): byte "
                              << static_cast<long>(b - dst_at[i]);
  }
  EXPECT_EQ(dst, want);
}

INSTANTIATE_TEST_SUITE_P(ByValueAndTable, BatchedCopyKernelMath,
                         ::testing::Values(0u, 16u, 1040u, kChunkBytes), [](const auto& info) {
                           return info.param ? "TableOf" + std::to_string(info.param) + "ByteChunks"
                                             : std::string("ByValue");
                         });

TEST(BatchedCopyPlan, TheTableFormCutsEveryKernelItemIntoChunksAWarpEach) {
  std::vector<CopyItem> items;
  for (size_t i = 0; i < 1000; ++i)
    items.push_back({Addr(0x100000 + i * 0x10000), Addr(0x90000000 + i * 0x10000), 1000 + i * 37});
  items.push_back({Addr(0x10), Addr(0x20), 0});                                  // empty: skipped
  items.push_back({Addr(0x200000000), Addr(0x300000000), kDirectCopyMinBytes});  // its own copy
  const CopyTablePlan plan = PlanBatchedCopyTable(items, 4096);
  ASSERT_EQ(plan.items.size(), 1000u);
  EXPECT_EQ(plan.direct, (std::vector<size_t>{1001}));
  EXPECT_EQ(plan.chunk_bytes, 4096u);
  size_t chunks = 0;
  for (size_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(plan.items[i].first_chunk, chunks) << i;
    EXPECT_EQ(plan.items[i].dst, reinterpret_cast<uintptr_t>(items[i].dst));
    EXPECT_EQ(plan.items[i].src, reinterpret_cast<uintptr_t>(items[i].src));
    EXPECT_EQ(plan.items[i].bytes, items[i].bytes);
    EXPECT_EQ(plan.items[i].reserved, 0u);
    const size_t n = (items[i].bytes + 4095) / 4096;  // 1 for 1000 bytes, 10 for 37,963
    for (size_t k = 0; k < n; ++k) ASSERT_EQ(plan.chunks.at(chunks + k), i) << "chunk " << chunks + k;
    chunks += n;
  }
  EXPECT_EQ(plan.chunks.size(), chunks);
  // A warp a chunk, 8 warps a block.
  EXPECT_EQ(plan.grid, (chunks + 7) / 8);
  // The upload: 32 bytes an item, then 4 a chunk padded to 16.
  EXPECT_EQ(plan.ChunksAt(), 32u * 1000);
  EXPECT_EQ(plan.Bytes(), 32u * 1000 + (4 * chunks + 15) / 16 * 16);
  // What a call announces covers its uploads, however they are split.
  EXPECT_GE(TableBytesFor(1000, 1000 * 1000 + 37 * 999 * 1000 / 2, 4096), plan.Bytes());
  size_t split = 0;
  for (size_t at = 0; at < 1000; at += 129)
    split +=
        PlanBatchedCopyTable(std::span(items).subspan(at, std::min<size_t>(129, 1000 - at)), 4096).Bytes();
  EXPECT_GE(TableBytesFor(1000, 1000 * 1000 + 37 * 999 * 1000 / 2, 4096), split);
}

TEST(BatchedCopyPlan, AReusedTablePlanIsTheFreshPlanOfEachCall) {
  std::vector<CopyItem> many, few = {{Addr(0x1000), Addr(0x9000), 30000}, {Addr(0x20000), Addr(0x30000), 5}};
  for (size_t i = 0; i < 400; ++i)
    many.push_back({Addr(0x100000 + i * 0x10000), Addr(0x90000000 + i * 0x10000), 100 + i * 91});
  many.push_back({Addr(0x200000000), Addr(0x300000000), kDirectCopyMinBytes});
  CopyTablePlan scratch;
  for (const auto* call : {&many, &few, &many, &few}) {
    PlanBatchedCopyTable(*call, 1024, CopyEnds::kDeviceToDevice, scratch);
    const CopyTablePlan fresh = PlanBatchedCopyTable(*call, 1024);
    ASSERT_EQ(scratch.items.size(), fresh.items.size());
    for (size_t i = 0; i < fresh.items.size(); ++i)
      EXPECT_EQ(std::memcmp(&scratch.items[i], &fresh.items[i], sizeof(RmBatchedCopyItem)), 0) << i;
    EXPECT_EQ(scratch.chunks, fresh.chunks);
    EXPECT_EQ(scratch.direct, fresh.direct);
    EXPECT_EQ(scratch.grid, fresh.grid);
    EXPECT_EQ(scratch.Bytes(), fresh.Bytes());
  }
}

TEST(BatchedCopyPlan, TheTableFormsGridIsCappedAndItsWarpsLoopOverTheRest) {
  const std::vector<CopyItem> huge = {{Addr(0x100000000), Addr(0x900000000), kDirectCopyMinBytes - 16}};
  const CopyTablePlan plan = PlanBatchedCopyTable(huge, 16);  // 4M chunks of 16 bytes
  EXPECT_EQ(plan.chunks.size(), (kDirectCopyMinBytes - 16) / 16);
  EXPECT_EQ(plan.grid, kMaxTableGrid);
  // Emulated with a grid of 3 blocks of 64 threads: 6 warps cover 41 chunks.
  std::vector<unsigned char> src(41 * 64 - 5), dst(src.size() + 32, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 13 + 1);
  const std::vector<CopyItem> one = {{dst.data() + 7, src.data(), src.size()}};
  const CopyTablePlan small = PlanBatchedCopyTable(one, 64);
  ASSERT_EQ(small.chunks.size(), 41u);
  EmulateTable(small, 64, 3);
  EXPECT_EQ(std::memcmp(dst.data() + 7, src.data(), src.size()), 0);
  EXPECT_EQ(dst[6], 0);
  EXPECT_EQ(dst[src.size() + 7], 0);
}

TEST(BatchedCopyKernelMath, ATableEntryThatDisagreesCopiesNothing) {
  std::vector<unsigned char> src(100, 1), dst(100, 0);
  const std::vector<CopyItem> one = {{dst.data(), src.data(), 100}};
  CopyTablePlan plan = PlanBatchedCopyTable(one, 32);
  ASSERT_EQ(plan.chunks.size(), 4u);
  plan.chunks[1] = 7;  // an item out of the table
  plan.chunks[2] = 0;
  plan.items[0].bytes = 64;  // chunk 2 and 3 lie past the item now
  EmulateTable(plan, 32, 1);
  EXPECT_EQ(std::count(dst.begin(), dst.end(), 1), 32) << "only chunk 0 is the item's";
}

TEST(BatchedCopyKernelMath, ABigItemLoopsOverItsCappedBlocks) {
  // More bytes than kMaxBlocksPerItem blocks cover in one pass, with few threads
  // a block so the emulation stays quick: the grid-stride loop must cover all.
  std::vector<unsigned char> src(3 * 1024 * 40 + 5), dst(src.size() + 32, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
  RmBatchedCopyParams p{};
  p.count = 1;
  p.dst[0] = reinterpret_cast<uintptr_t>(dst.data() + 3);
  p.src[0] = reinterpret_cast<uintptr_t>(src.data());
  p.bytes[0] = src.size();
  p.block_end[0] = 7;
  EmulateLaunch(p, 7, 32);
  EXPECT_EQ(std::memcmp(dst.data() + 3, src.data(), src.size()), 0);
  EXPECT_EQ(dst[0], 0);
  EXPECT_EQ(dst[src.size() + 3], 0);
}

const unsigned char kData[] = {1, 2, 3, 0};

TEST(BatchedCopyImages, CubinsOfTheSameMajorFirstThenPtx) {
  const EmbeddedKernelImage images[] = {
      {true, 80, kData, sizeof kData}, {false, 80, kData, sizeof kData}, {false, 90, kData, sizeof kData}};
  auto archs = [&](int major, int minor) {
    std::vector<std::string> out;
    for (const auto* img : ImagesToTry(images, major, minor))
      out.push_back((img->ptx ? "ptx" : "sm") + std::to_string(img->arch));
    return out;
  };
  EXPECT_EQ(archs(9, 0), (std::vector<std::string>{"sm90", "ptx80"}));  // H100, H200
  EXPECT_EQ(archs(8, 0), (std::vector<std::string>{"sm80", "ptx80"}));  // A100
  EXPECT_EQ(archs(8, 6), (std::vector<std::string>{"sm80", "ptx80"}));  // an sm_80 cubin runs on 8.x
  EXPECT_EQ(archs(10, 0), (std::vector<std::string>{"ptx80"}));         // newer: the driver compiles the PTX
  EXPECT_EQ(archs(12, 0), (std::vector<std::string>{"ptx80"}));
  EXPECT_TRUE(archs(7, 5).empty());  // older than the PTX
  const EmbeddedKernelImage empty[] = {{false, 90, kData, 0}, {true, 80, nullptr, 4}};
  EXPECT_TRUE(ImagesToTry(empty, 9, 0).empty());
}

TEST(BatchedCopyImages, TheBuildEmbedsPtxAndCubinsNamingTheKernelWhenNvrtcWasFound) {
  const auto images = BatchedCopyImages();
  const std::string origin = BatchedCopyImagesOrigin();
  if (!RINGMASTER_TEST_HAVE_NVRTC) {
    EXPECT_TRUE(images.empty());
    EXPECT_NE(origin.find("no NVRTC"), std::string::npos) << origin;
    return;
  }
  EXPECT_EQ(origin.rfind("NVRTC ", 0), 0u) << origin;
  ASSERT_EQ(images.size(), 3u);
  bool ptx80 = false, sm80 = false, sm90 = false;
  for (const auto& img : images) {
    ASSERT_GT(img.size, 1000u);
    const std::string_view bytes(reinterpret_cast<const char*>(img.data), img.size);
    EXPECT_NE(bytes.find(RM_BATCHED_COPY_KERNEL_NAME), std::string_view::npos) << img.arch;
    if (img.ptx) {
      EXPECT_EQ(bytes.back(), '\0') << "PTX must be NUL-terminated for cudaLibraryLoadData";
      EXPECT_NE(bytes.find(".entry " RM_BATCHED_COPY_KERNEL_NAME), std::string_view::npos);
      EXPECT_NE(bytes.find(".target sm_80"), std::string_view::npos);
      EXPECT_NE(bytes.find("ld.global.v4.u32"), std::string_view::npos) << "16-byte loads";
      ptx80 = ptx80 || img.arch == 80;
    } else {
      EXPECT_EQ(bytes.substr(0, 4), std::string_view("\x7f"
                                                     "ELF",
                                                     4))
          << img.arch;
      sm80 = sm80 || img.arch == 80;
      sm90 = sm90 || img.arch == 90;
    }
  }
  EXPECT_TRUE(ptx80 && sm80 && sm90);
}

// ---- BatchedCopy against a table of our own: host memory stands in for the device. ----

struct Calls {
  std::atomic<int> memcpy{0}, launch{0}, load{0}, unload{0}, get_kernel{0};
  int uploads = 0, table_launches = 0, host_allocs = 0, device_allocs = 0, events = 0;
  cudaError_t event_state = cudaSuccess;  // what cudaEventQuery answers
  int cc_major = 9, cc_minor = 0;
  int fail_loads = 0;  // the first this many cudaLibraryLoadData calls fail
  bool fail_launch = false;
  std::vector<int> load_arch;             // the image each load was given (by its arch)
  std::vector<std::string> kernel_names;  // asked for, in order
  int launch_block = 0;
  unsigned table_chunk_bytes = 0;
};
Calls* g_calls = nullptr;
int g_fake_lib = 0, g_fake_kernel = 0, g_fake_table_kernel = 0;

cudaError_t FakeMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t) {
  if (kind == cudaMemcpyHostToDevice) {  // the table form's upload
    ++g_calls->uploads;
    std::memcpy(dst, src, n);
    return cudaSuccess;
  }
  if (kind != cudaMemcpyDeviceToDevice) return cudaErrorInvalidValue;
  ++g_calls->memcpy;
  std::memcpy(dst, src, n);
  return cudaSuccess;
}
cudaError_t FakeLaunch(const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t) {
  ++g_calls->launch;
  if (g_calls->fail_launch) return cudaErrorLaunchOutOfResources;
  if ((func != &g_fake_kernel && func != &g_fake_table_kernel) || shared != 0 || grid.y != 1 || block.y != 1)
    return cudaErrorInvalidValue;
  g_calls->launch_block = static_cast<int>(block.x);
  if (func == &g_fake_table_kernel) {
    ++g_calls->table_launches;
    const auto& t = *static_cast<const RmBatchedCopyTableParams*>(args[0]);
    const auto* items = static_cast<const RmBatchedCopyItem*>(Addr(t.items));
    const auto* chunks = static_cast<const unsigned*>(Addr(t.chunks));
    g_calls->table_chunk_bytes = t.chunk_bytes;
    if (t.count == 0 || t.chunk_count == 0 || grid.x != std::min((t.chunk_count + 7) / 8, kMaxTableGrid))
      return cudaErrorInvalidValue;
    // What the kernel does (its per-thread math is tested above), warp by warp.
    for (unsigned b = 0; b < grid.x; ++b)
      for (unsigned th = 0; th < block.x; ++th)
        ringmaster_kernels::CopyTableThread(t, items, chunks, b, th, block.x, grid.x);
    return cudaSuccess;
  }
  const auto& p = *static_cast<const RmBatchedCopyParams*>(args[0]);
  if (p.count == 0 || p.count > RM_BATCHED_COPY_MAX_ITEMS || grid.x != p.block_end[p.count - 1])
    return cudaErrorInvalidValue;
  // What the kernel does, item by item (the per-thread math is tested above).
  for (unsigned i = 0; i < p.count; ++i) std::memcpy(Addr(p.dst[i]), Addr(p.src[i]), p.bytes[i]);
  return cudaSuccess;
}
cudaError_t FakeLoad(cudaLibrary_t* lib, const void* code, cudaJitOption*, void**, unsigned,
                     cudaLibraryOption*, void**, unsigned) {
  ++g_calls->load;
  for (const auto& img : BatchedCopyImages())
    if (img.data == code) g_calls->load_arch.push_back(img.ptx ? -img.arch : img.arch);
  if (g_calls->fail_loads > 0) {
    --g_calls->fail_loads;
    return cudaErrorUnsupportedPtxVersion;
  }
  *lib = reinterpret_cast<cudaLibrary_t>(&g_fake_lib);
  return cudaSuccess;
}
cudaError_t FakeUnload(cudaLibrary_t) {
  ++g_calls->unload;
  return cudaSuccess;
}
cudaError_t FakeGetKernel(cudaKernel_t* k, cudaLibrary_t lib, const char* name) {
  ++g_calls->get_kernel;
  g_calls->kernel_names.push_back(name);
  if (lib != reinterpret_cast<cudaLibrary_t>(&g_fake_lib)) return cudaErrorInvalidResourceHandle;
  *k = reinterpret_cast<cudaKernel_t>(
      std::string_view(name) == RM_BATCHED_COPY_TABLE_KERNEL_NAME ? &g_fake_table_kernel : &g_fake_kernel);
  return cudaSuccess;
}
cudaError_t FakeFuncAttributes(cudaFuncAttributes* attr, const void* func) {
  if (func != &g_fake_kernel && func != &g_fake_table_kernel) return cudaErrorInvalidDeviceFunction;
  *attr = cudaFuncAttributes{};
  attr->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
cudaError_t FakeAttribute(int* v, cudaDeviceAttr attr, int) {
  if (attr == cudaDevAttrComputeCapabilityMajor)
    *v = g_calls->cc_major;
  else if (attr == cudaDevAttrComputeCapabilityMinor)
    *v = g_calls->cc_minor;
  else
    return cudaErrorInvalidValue;
  return cudaSuccess;
}
const char* FakeErrorString(cudaError_t e) {
  return e == cudaErrorLaunchOutOfResources ? "too many resources requested for launch" : "some error";
}
cudaError_t FakeGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t FakeSetDevice(int) {
  return cudaSuccess;
}
cudaError_t FakeGetLastError() {
  return cudaSuccess;
}
// The table form's buffers: host memory for both.
cudaError_t FakeHostAlloc(void** p, size_t n, unsigned) {
  ++g_calls->host_allocs;
  *p = std::malloc(n);
  return cudaSuccess;
}
cudaError_t FakeFreeHost(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t FakeMallocAsync(void** p, size_t n, cudaStream_t) {
  ++g_calls->device_allocs;
  *p = std::malloc(n);
  return cudaSuccess;
}
cudaError_t FakeFreeAsync(void* p, cudaStream_t) {
  std::free(p);
  return cudaSuccess;
}
int g_fake_event = 0;
cudaError_t FakeEventCreate(cudaEvent_t* e, unsigned) {
  ++g_calls->events;
  *e = reinterpret_cast<cudaEvent_t>(&g_fake_event);
  return cudaSuccess;
}
cudaError_t FakeEventRecord(cudaEvent_t, cudaStream_t) {
  return cudaSuccess;
}
cudaError_t FakeEventQuery(cudaEvent_t) {
  return g_calls->event_state;
}
cudaError_t FakeEventDestroy(cudaEvent_t) {
  return cudaSuccess;
}

class BatchedCopyTable : public ::testing::Test {
 protected:
  void SetUp() override {
    g_calls = &calls_;
    api_.cudart_path = "libcudart-fake.so";
    api_.cuda.GetErrorString = FakeErrorString;
    api_.cuda.MemcpyAsync = FakeMemcpyAsync;
    api_.cuda.GetDevice = FakeGetDevice;
    api_.cuda.SetDevice = FakeSetDevice;
    api_.cuda.GetLastError = FakeGetLastError;
    api_.cuda.HostAlloc = FakeHostAlloc;
    api_.cuda.FreeHost = FakeFreeHost;
    api_.cuda.MallocAsync = FakeMallocAsync;
    api_.cuda.FreeAsync = FakeFreeAsync;
    api_.cuda.EventCreateWithFlags = FakeEventCreate;
    api_.cuda.EventRecord = FakeEventRecord;
    api_.cuda.EventQuery = FakeEventQuery;
    api_.cuda.EventDestroy = FakeEventDestroy;
    auto& o = api_.cuda_optional;
    o.DeviceGetAttribute = FakeAttribute;
    o.LaunchKernel = FakeLaunch;
    o.FuncGetAttributes = FakeFuncAttributes;
    o.LibraryLoadData = FakeLoad;
    o.LibraryUnload = FakeUnload;
    o.LibraryGetKernel = FakeGetKernel;
  }
  void TearDown() override { g_calls = nullptr; }
  // n items of `bytes` each from one random arena into another; Check() compares.
  void MakeItems(size_t n, size_t bytes) {
    src_.assign(n * bytes, 0);
    dst_.assign(n * bytes, 0);
    std::mt19937 rng(11);
    for (auto& b : src_) b = static_cast<unsigned char>(rng());
    items_.clear();
    for (size_t i = 0; i < n; ++i)
      items_.push_back({dst_.data() + i * bytes, src_.data() + i * bytes, bytes});
  }
  void Check() { EXPECT_EQ(dst_, src_); }

  Calls calls_;
  GpuApi api_;
  std::vector<unsigned char> src_, dst_;
  std::vector<CopyItem> items_;
};

TEST_F(BatchedCopyTable, OneLaunchPer128ItemsAndTheModuleLoadedOncePerDevice) {
  if (!RINGMASTER_TEST_HAVE_NVRTC) GTEST_SKIP() << "this build embeds no kernel image (no NVRTC)";
  MakeItems(300, 4096);
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0).ok());
  Check();
  EXPECT_EQ(calls_.launch.load(), 3);
  EXPECT_EQ(calls_.memcpy.load(), 0);
  EXPECT_EQ(calls_.launch_block, RM_BATCHED_COPY_THREADS);
  EXPECT_EQ(calls_.kernel_names,
            (std::vector<std::string>{RM_BATCHED_COPY_KERNEL_NAME, RM_BATCHED_COPY_TABLE_KERNEL_NAME}));
  EXPECT_EQ(calls_.load_arch, (std::vector<int>{90}));  // compute capability 9.0: the sm_90 cubin
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0).ok());
  EXPECT_EQ(calls_.load.load(), 1);
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 1).ok());
  EXPECT_EQ(calls_.load.load(), 2);
  EXPECT_EQ(calls_.launch.load(), 9);
  const auto info = BatchedCopyKernel(api_, 0);
  EXPECT_TRUE(info.available);
  EXPECT_NE(info.what.find("sm_90 cubin"), std::string::npos) << info.what;
}

TEST_F(BatchedCopyTable, WithATableManyItemsGoInOneLaunchAndTheBuffersAreKept) {
  if (!RINGMASTER_TEST_HAVE_NVRTC) GTEST_SKIP() << "this build embeds no kernel image (no NVRTC)";
  MakeItems(1000, 512);
  CopyTable table;
  table.BeginCall(2000, 2000 * 512);
  // The call's two copies (in, then out) share the table, one after the other.
  std::span<const CopyItem> half1(items_.data(), 500), half2(items_.data() + 500, 500);
  ASSERT_TRUE(BatchedCopy(api_, half1, nullptr, 0, &table).ok());
  ASSERT_TRUE(BatchedCopy(api_, half2, nullptr, 0, &table).ok());
  Check();
  EXPECT_EQ(calls_.launch.load(), 2);
  EXPECT_EQ(calls_.table_launches, 2);
  EXPECT_EQ(calls_.uploads, 2);
  EXPECT_EQ(calls_.memcpy.load(), 0);
  EXPECT_EQ(calls_.table_chunk_bytes, kChunkBytes);
  EXPECT_EQ(table.used, 2 * (500u * 32 + 500 * 4));            // an item and a chunk each
  EXPECT_EQ(table.capacity, TableBytesFor(2000, 2000 * 512));  // the call's announced need, taken at once
  EXPECT_EQ(calls_.host_allocs, 1);
  EXPECT_EQ(calls_.device_allocs, 1);
  // The next call reuses the buffers.
  std::fill(dst_.begin(), dst_.end(), 0);
  table.BeginCall(2000, 2000 * 512);
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0, &table).ok());
  Check();
  EXPECT_EQ(calls_.table_launches, 3);
  EXPECT_EQ(calls_.host_allocs, 1);
  EXPECT_EQ(calls_.events, 1);
  // Few items go by value, without the table.
  MakeItems(RM_BATCHED_COPY_MAX_ITEMS, 64);
  table.BeginCall(2 * RM_BATCHED_COPY_MAX_ITEMS, 2 * RM_BATCHED_COPY_MAX_ITEMS * 64);
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0, &table).ok());
  Check();
  EXPECT_EQ(calls_.table_launches, 3);
  EXPECT_EQ(calls_.launch.load(), 4);
  // Another chunk size (a benchmark's sweep) is the kernel's; a bad one is refused.
  MakeItems(1000, 512);
  table.chunk_bytes = 1024;
  table.BeginCall(1000, 1000 * 512);
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0, &table).ok());
  Check();
  EXPECT_EQ(calls_.table_chunk_bytes, 1024u);
  table.chunk_bytes = 24;
  table.BeginCall(1000, 1000 * 512);
  const Status bad = BatchedCopy(api_, items_, nullptr, 0, &table);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.ToString();
  EXPECT_NE(bad.message().find("chunk of 24 bytes"), std::string::npos) << bad.ToString();
  table.Destroy(api_, nullptr);
}

TEST_F(BatchedCopyTable, AnUploadStillQueuedIsNeverOverwritten) {
  // An earlier call's table not yet read by its kernel (the call failed with
  // its work left on the stream): this call goes by value.
  if (!RINGMASTER_TEST_HAVE_NVRTC) GTEST_SKIP() << "this build embeds no kernel image (no NVRTC)";
  MakeItems(300, 256);
  CopyTable table;
  table.BeginCall(300, 300 * 256);
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0, &table).ok());
  EXPECT_EQ(calls_.table_launches, 1);
  RmBatchedCopyItem first;
  std::memcpy(&first, table.host, sizeof first);
  calls_.event_state = cudaErrorNotReady;
  std::fill(dst_.begin(), dst_.end(), 0);
  std::vector<CopyItem> reversed(items_.rbegin(), items_.rend());
  table.BeginCall(300, 300 * 256);
  ASSERT_TRUE(BatchedCopy(api_, reversed, nullptr, 0, &table).ok());
  Check();
  EXPECT_EQ(calls_.table_launches, 1);  // by value: 3 launches of at most 128
  EXPECT_EQ(calls_.launch.load(), 1 + 3);
  RmBatchedCopyItem now;
  std::memcpy(&now, table.host, sizeof now);
  EXPECT_EQ(now.dst, first.dst);  // the queued table untouched
  // Its path asked for explicitly is refused, saying why.
  table.BeginCall(300, 300 * 256);
  Status st = BatchedCopyVia(CopyPath::kKernelTable, api_, items_, nullptr, 0, &table);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.message();
  calls_.event_state = cudaSuccess;
  table.Destroy(api_, nullptr);
}

TEST_F(BatchedCopyTable, ManyThreadsAtOnceLoadTheModuleOnce) {
  if (!RINGMASTER_TEST_HAVE_NVRTC) GTEST_SKIP() << "this build embeds no kernel image (no NVRTC)";
  std::vector<std::thread> threads;
  std::atomic<int> available{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] { available += BatchedCopyKernel(api_, 3).available ? 1 : 0; });
  for (auto& t : threads) t.join();
  EXPECT_EQ(available.load(), 8);
  EXPECT_EQ(calls_.load.load(), 1);
}

TEST_F(BatchedCopyTable, AnImageThatFailsToLoadFallsToTheNextThenToMemcpy) {
  if (!RINGMASTER_TEST_HAVE_NVRTC) GTEST_SKIP() << "this build embeds no kernel image (no NVRTC)";
  calls_.fail_loads = 1;  // the sm_90 cubin fails; the PTX loads
  MakeItems(10, 1000);
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0).ok());
  Check();
  EXPECT_EQ(calls_.load_arch, (std::vector<int>{90, -80}));
  EXPECT_EQ(calls_.launch.load(), 1);
  EXPECT_NE(BatchedCopyKernel(api_, 0).what.find("compute_80 PTX"), std::string::npos);

  calls_.fail_loads = 2;  // on GPU 1 both fail: per-item copies, and the reason names both
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 1).ok());
  EXPECT_EQ(calls_.memcpy.load(), 10);
  const auto info = BatchedCopyKernel(api_, 1);
  EXPECT_FALSE(info.available);
  EXPECT_NE(info.what.find("sm_90 cubin: cudaLibraryLoadData"), std::string::npos) << info.what;
  EXPECT_NE(info.what.find("compute_80 PTX: cudaLibraryLoadData"), std::string::npos) << info.what;
  const Status forced = BatchedCopyVia(CopyPath::kKernel, api_, items_, nullptr, 1);
  EXPECT_EQ(forced.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(forced.message().find("GPU 1"), std::string::npos) << forced.ToString();
}

TEST_F(BatchedCopyTable, AnOldRuntimeOrAnOldGpuCopiesItemByItemAndSaysWhy) {
  api_.cuda_optional.LibraryLoadData = nullptr;  // a CUDA 11 runtime
  MakeItems(200, 512);
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0).ok());
  Check();
  EXPECT_EQ(calls_.memcpy.load(), 200);
  EXPECT_EQ(calls_.launch.load(), 0);
  const auto info = BatchedCopyKernel(api_, 0);
  EXPECT_FALSE(info.available);
  if (RINGMASTER_TEST_HAVE_NVRTC) {
    EXPECT_NE(info.what.find("lacks cudaLibraryLoadData"), std::string::npos) << info.what;
    EXPECT_NE(info.what.find("libcudart-fake.so"), std::string::npos) << info.what;
  } else {
    EXPECT_NE(info.what.find("no kernel image"), std::string::npos) << info.what;
  }

  api_.cuda_optional.LibraryLoadData = FakeLoad;
  api_.id = TableId();  // a changed table is a new one: the kernel is looked up anew
  calls_.cc_major = 7;  // a Turing GPU: nothing embedded runs there
  calls_.cc_minor = 5;
  ASSERT_TRUE(BatchedCopy(api_, items_, nullptr, 0).ok());
  EXPECT_EQ(calls_.memcpy.load(), 400);
  EXPECT_EQ(calls_.load.load(), 0);
  if (RINGMASTER_TEST_HAVE_NVRTC) {
    const auto old = BatchedCopyKernel(api_, 0);
    EXPECT_NE(old.what.find("compute capability 7.5"), std::string::npos) << old.what;
  }
}

TEST_F(BatchedCopyTable, ErrorsNameTheItemOrTheLaunchAndCarryCudasText) {
  MakeItems(4, 64);
  items_[2].src = nullptr;
  const Status null_src = BatchedCopy(api_, items_, nullptr, 0);
  EXPECT_EQ(null_src.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(null_src.message().find("copy item 2 (64 bytes) has a null source"), std::string::npos)
      << null_src.ToString();
  EXPECT_EQ(calls_.launch.load() + calls_.memcpy.load(), 0) << "nothing queued for a refused call";

  if (!RINGMASTER_TEST_HAVE_NVRTC) return;  // no kernel to fail a launch of
  MakeItems(4, 64);
  calls_.fail_launch = true;
  const Status failed = BatchedCopy(api_, items_, nullptr, 0);
  EXPECT_EQ(failed.code(), StatusCode::kInternal);
  EXPECT_NE(
      failed.message().find("cudaLaunchKernel of the batched copy (launch 1 of 1, 4 copies from item 0"),
      std::string::npos)
      << failed.ToString();
  EXPECT_NE(failed.message().find("too many resources requested for launch"), std::string::npos)
      << failed.ToString();
  EXPECT_NE(failed.message().find("GPU 0"), std::string::npos) << failed.ToString();
}

TEST_F(BatchedCopyTable, ThePerItemPathCanBeForced) {
  MakeItems(50, 300);
  ASSERT_TRUE(BatchedCopyVia(CopyPath::kMemcpy, api_, items_, nullptr, 0).ok());
  Check();
  EXPECT_EQ(calls_.memcpy.load(), 50);
  EXPECT_EQ(calls_.launch.load(), 0);
  EXPECT_EQ(calls_.load.load(), 0) << "no module loaded for the per-item path";
  const Status batch = BatchedCopyVia(CopyPath::kMemcpyBatch, api_, items_, nullptr, 0);
  EXPECT_EQ(batch.code(), StatusCode::kFailedPrecondition) << "the table has no cudaMemcpyBatchAsync";
}

}  // namespace
}  // namespace ringmaster::internal
