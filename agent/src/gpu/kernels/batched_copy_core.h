// The batched copy's per-thread work, shared by the kernel
// (batched_copy.cu, compiled by NVRTC) and the host tests, which run every
// block and thread of a launch in turn to check the kernel's arithmetic
// without a GPU. No includes: NVRTC compiles it without the C++ library.
//
// Item i of a launch is copied by the blocks the item owns, all their threads
// together: the largest word w in {16, 8, 4, 2, 1} that dst and src can both
// be aligned to (the low bits in which they differ decide it), a head of bytes
// up to dst's w-alignment, then w-byte words (16: one 128-bit load and store),
// then a tail of bytes. Any alignment and any size are copied exactly.
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

// The items of a launch, as the kernels read them: by value in the
// parameter struct, or a table in device memory.
struct ParamsItems {
  const RmBatchedCopyParams& p;
  RM_COPY_FN unsigned int count() const { return p.count; }
  RM_COPY_FN unsigned int block_end(unsigned int i) const { return p.block_end[i]; }
  RM_COPY_FN unsigned long long dst(unsigned int i) const { return p.dst[i]; }
  RM_COPY_FN unsigned long long src(unsigned int i) const { return p.src[i]; }
  RM_COPY_FN unsigned long long bytes(unsigned int i) const { return p.bytes[i]; }
};
struct TableItems {
  const RmBatchedCopyItem* items;
  unsigned int n;
  RM_COPY_FN unsigned int count() const { return n; }
  RM_COPY_FN unsigned int block_end(unsigned int i) const { return items[i].block_end; }
  RM_COPY_FN unsigned long long dst(unsigned int i) const { return items[i].dst; }
  RM_COPY_FN unsigned long long src(unsigned int i) const { return items[i].src; }
  RM_COPY_FN unsigned long long bytes(unsigned int i) const { return items[i].bytes; }
};

// Which item owns block `block`: the first i with block < block_end(i).
template <typename Items>
RM_COPY_FN unsigned int ItemOfBlock(const Items& p, unsigned int block) {
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

// What thread `thread` of block `block` does in a launch of `threads` threads a block.
template <typename Items>
RM_COPY_FN void CopyThread(const Items& p, unsigned int block, unsigned int thread, unsigned int threads) {
  const unsigned int i = ItemOfBlock(p, block);
  const unsigned int first = i == 0 ? 0 : p.block_end(i - 1);
  const unsigned long long worker = static_cast<unsigned long long>(block - first) * threads + thread;
  const unsigned long long workers = static_cast<unsigned long long>(p.block_end(i) - first) * threads;
  const unsigned long long dst = p.dst(i), src = p.src(i), n = p.bytes(i);
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

}  // namespace ringmaster_kernels
