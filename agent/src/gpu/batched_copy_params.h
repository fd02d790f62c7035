/* The batched copy kernels' parameters, shared by the host (batched_copy.cc,
 * the tests' fake CUDA table) and the kernel (kernels/batched_copy.cu, compiled
 * by NVRTC). Plain C layout, no includes: it must mean the same to g++ and to
 * NVRTC, and to a fake that reads it without CUDA's headers.
 *
 * A launch is cudaLaunchKernel(kernel, grid = {block_end[count - 1], 1, 1},
 * block = {RM_BATCHED_COPY_THREADS, 1, 1}, args, 0 shared bytes, stream) where
 * args[0] points to one RmBatchedCopyParams (passed by value: the kernel's
 * parameter struct, under the classic 4 KiB parameter limit). Item i copies
 * bytes[i] bytes from src[i] to dst[i] (device addresses as integers) and owns
 * the grid's blocks [i == 0 ? 0 : block_end[i - 1], block_end[i]). Items of one
 * launch must not overlap one another.
 *
 * The table form, for any number of items in one launch, is cut into chunks
 * that one warp each copies: the kernel RM_BATCHED_COPY_TABLE_KERNEL_NAME
 * takes one RmBatchedCopyTableParams by value, whose `items` is the device
 * address of `count` RmBatchedCopyItem and `chunks` that of `chunk_count`
 * unsigned ints (both uploaded on the same stream before the launch). Item i
 * is cut into chunks of `chunk_bytes` bytes (a multiple of 16; its last chunk
 * may be shorter), numbered from items[i].first_chunk on, and chunks[c] is the
 * item chunk c belongs to: a warp finds its work with two loads, whatever the
 * number of items. Warp w of the grid (of gridDim.x * blockDim.x / 32 warps)
 * copies chunks w, w + warps, w + 2 * warps, ...: any grid of at least one
 * block covers them all. */
#ifndef RINGMASTER_GPU_BATCHED_COPY_PARAMS_H_
#define RINGMASTER_GPU_BATCHED_COPY_PARAMS_H_

/* Items per launch: 28 bytes each, so 128 items are 3,592 bytes. */
#define RM_BATCHED_COPY_MAX_ITEMS 128
/* Threads per block (blockDim.x). */
#define RM_BATCHED_COPY_THREADS 256
/* Lanes of a warp (warpSize on every NVIDIA GPU): the table form's unit. */
#define RM_BATCHED_COPY_WARP 32
/* The kernel's entry point (extern "C": the name cudaLibraryGetKernel takes). */
#define RM_BATCHED_COPY_KERNEL_NAME "ringmaster_batched_copy"

/* The table form's kernel. */
#define RM_BATCHED_COPY_TABLE_KERNEL_NAME "ringmaster_batched_copy_table"

struct RmBatchedCopyParams {
  unsigned long long dst[RM_BATCHED_COPY_MAX_ITEMS];
  unsigned long long src[RM_BATCHED_COPY_MAX_ITEMS];
  unsigned long long bytes[RM_BATCHED_COPY_MAX_ITEMS];
  unsigned int block_end[RM_BATCHED_COPY_MAX_ITEMS]; /* inclusive prefix sums of blocks per item */
  unsigned int count;                                /* items used, 1..RM_BATCHED_COPY_MAX_ITEMS */
  unsigned int reserved;                             /* 0 */
};

struct RmBatchedCopyItem {
  unsigned long long dst, src, bytes;
  unsigned int first_chunk; /* the item's first chunk: the chunks before it, over the table */
  unsigned int reserved;    /* 0 */
};

struct RmBatchedCopyTableParams {
  unsigned long long items;  /* device address of the items */
  unsigned long long chunks; /* device address of the chunks' items */
  unsigned int count;        /* items, >= 1 */
  unsigned int chunk_count;  /* chunks, >= 1 */
  unsigned int chunk_bytes;  /* bytes a chunk, a multiple of 16 */
  unsigned int reserved;     /* 0 */
};

#ifdef __cplusplus
static_assert(sizeof(RmBatchedCopyItem) == 32 && sizeof(RmBatchedCopyTableParams) == 32, "no padding");
static_assert(RM_BATCHED_COPY_THREADS % RM_BATCHED_COPY_WARP == 0, "whole warps a block");
static_assert(sizeof(unsigned long long) == 8 && sizeof(unsigned int) == 4, "LP64 layout");
static_assert(sizeof(RmBatchedCopyParams) == 28 * RM_BATCHED_COPY_MAX_ITEMS + 8,
              "no padding: host and kernel agree field by field");
static_assert(sizeof(RmBatchedCopyParams) <= 4096, "fits the classic 4 KiB kernel-parameter limit");
#endif

#endif /* RINGMASTER_GPU_BATCHED_COPY_PARAMS_H_ */
