// The batched copy's per-thread work, shared by the kernel
// (batched_copy.cu, compiled by NVRTC) and the host tests, which run every
// block and thread of a launch in turn to check the kernel's arithmetic
// without a GPU. No includes: NVRTC compiles it without the C++ library.
//
// Item i of a launch by value is copied by the blocks the item owns, all their
// threads together; in the table form each chunk of an item by one warp, its
// lanes together. Each copy uses the largest word w in {16, 8, 4, 2, 1} that
// dst and src can both be aligned to (the low bits in which they differ decide
// it): a head of bytes up to dst's w-alignment, then w-byte words (16: one
// 128-bit load and store), then a tail of bytes. Any alignment and any size
// are copied exactly.
#pragma once

#include "gpu/batched_copy_params.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define RM_COPY_FN __device__ __forceinline__
#else
#define RM_COPY_FN inline
#endif

namespace ringmaster_kernels {

struct alignas(16) Word16 {
  unsigned long long lo, hi;
};
template <int W>
struct WordOf;
template <>
struct WordOf<16> {
  using T = Word16;
};
template <>
struct WordOf<8> {
  using T = unsigned long long;
};
template <>
struct WordOf<4> {
  using T = unsigned int;
};
template <>
struct WordOf<2> {
  using T = unsigned short;
};
template <>
struct WordOf<1> {
  using T = unsigned char;
};

// The word size for a copy from src to dst: 16, 8, 4, 2 or 1.
RM_COPY_FN unsigned long long CopyWord(unsigned long long dst, unsigned long long src) {
  const unsigned long long diff = (dst ^ src) | 16ull;
  return diff & (~diff + 1ull);  // lowest set bit
}

// Worker `worker` of `workers` (threads over the item's blocks) copies its share.
template <int W>
RM_COPY_FN void CopyPart(unsigned long long dst, unsigned long long src, unsigned long long n,
                         unsigned long long worker, unsigned long long workers) {
  using T = typename WordOf<W>::T;
  unsigned long long head = (W - (dst & (W - 1))) & (W - 1);
  if (head > n) head = n;
  const unsigned long long words = (n - head) / W;
  const unsigned long long tail_at = head + words * W;
  unsigned char* d = reinterpret_cast<unsigned char*>(dst);
  const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  // Device allocations all lie in the global window: global loads and stores,
  // not generic ones (the table form reads its addresses from memory).
  __builtin_assume(__isGlobal(d));
  __builtin_assume(__isGlobal(s));
#endif
  for (unsigned long long h = worker; h < head; h += workers) d[h] = s[h];
  T* dw = reinterpret_cast<T*>(d + head);
  const T* sw = reinterpret_cast<const T*>(s + head);
  // Four words in flight per thread, then the rest one by one.
  unsigned long long k = worker;
  for (; k + 3 * workers < words; k += 4 * workers) {
    const T a = sw[k], b = sw[k + workers], c = sw[k + 2 * workers], e = sw[k + 3 * workers];
    dw[k] = a;
    dw[k + workers] = b;
    dw[k + 2 * workers] = c;
    dw[k + 3 * workers] = e;
  }
  for (; k < words; k += workers) dw[k] = sw[k];
  for (unsigned long long t = tail_at + worker; t < n; t += workers) d[t] = s[t];
}

// The items of a launch by value, as the kernel reads them.
struct ParamsItems {
  const RmBatchedCopyParams& p;
  RM_COPY_FN unsigned int count() const { return p.count; }
  RM_COPY_FN unsigned int block_end(unsigned int i) const { return p.block_end[i]; }
  RM_COPY_FN unsigned long long dst(unsigned int i) const { return p.dst[i]; }
  RM_COPY_FN unsigned long long src(unsigned int i) const { return p.src[i]; }
  RM_COPY_FN unsigned long long bytes(unsigned int i) const { return p.bytes[i]; }
};

// Which item owns block `block`: the first i with block < block_end(i).
RM_COPY_FN unsigned int ItemOfBlock(const ParamsItems& p, unsigned int block) {
  unsigned int lo = 0, hi = p.count() - 1;
  while (lo < hi) {
    const unsigned int mid = (lo + hi) / 2;
    if (block < p.block_end(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Worker `worker` of `workers` copies its share of n bytes from src to dst,
// in the widest word both allow.
RM_COPY_FN void CopyRange(unsigned long long dst, unsigned long long src, unsigned long long n,
                          unsigned long long worker, unsigned long long workers) {
  switch (CopyWord(dst, src)) {
    case 16:
      CopyPart<16>(dst, src, n, worker, workers);
      break;
    case 8:
      CopyPart<8>(dst, src, n, worker, workers);
      break;
    case 4:
      CopyPart<4>(dst, src, n, worker, workers);
      break;
    case 2:
      CopyPart<2>(dst, src, n, worker, workers);
      break;
    default:
      CopyPart<1>(dst, src, n, worker, workers);
      break;
  }
}

// What thread `thread` of block `block` does in a launch of `threads` threads a block.
RM_COPY_FN void CopyThread(const ParamsItems& p, unsigned int block, unsigned int thread,
                           unsigned int threads) {
  const unsigned int i = ItemOfBlock(p, block);
  const unsigned int first = i == 0 ? 0 : p.block_end(i - 1);
  const unsigned long long worker = static_cast<unsigned long long>(block - first) * threads + thread;
  const unsigned long long workers = static_cast<unsigned long long>(p.block_end(i) - first) * threads;
  CopyRange(p.dst(i), p.src(i), p.bytes(i), worker, workers);
}

// The table form (batched_copy_params.h): what thread `thread` of block
// `block` does in a grid of `blocks` blocks of `threads` threads. Its warp
// copies every warps-th chunk, all its lanes together; a chunk whose entries
// disagree (an item out of the table, a chunk outside its item) is left alone.
RM_COPY_FN void CopyTableThread(const RmBatchedCopyTableParams& p, const RmBatchedCopyItem* items,
                                const unsigned int* chunks, unsigned int block, unsigned int thread,
                                unsigned int threads, unsigned int blocks) {
  const unsigned int per_block = threads / RM_BATCHED_COPY_WARP;
  const unsigned long long warps = static_cast<unsigned long long>(blocks) * per_block;
  const unsigned int lane = thread % RM_BATCHED_COPY_WARP;
  for (unsigned long long c =
           static_cast<unsigned long long>(block) * per_block + thread / RM_BATCHED_COPY_WARP;
       c < p.chunk_count; c += warps) {
    const unsigned int i = chunks[c];
    if (i >= p.count) continue;
    const RmBatchedCopyItem& it = items[i];
    if (c < it.first_chunk) continue;
    const unsigned long long off = (c - it.first_chunk) * p.chunk_bytes;
    if (off >= it.bytes) continue;
    const unsigned long long n = it.bytes - off < p.chunk_bytes ? it.bytes - off : p.chunk_bytes;
    CopyRange(it.dst + off, it.src + off, n, lane, RM_BATCHED_COPY_WARP);
  }
}

}  // namespace ringmaster_kernels
