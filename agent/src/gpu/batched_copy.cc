// The batched copy: the kernels loaded once per device from the embedded
// images, the launches of a plan (by value, or one table uploaded first),
// and the per-item cudaMemcpyAsync fallback.
#include "gpu/batched_copy.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "agent_log.h"

namespace ringmaster::internal {
namespace {

struct DeviceKernel {
  const void* kernel = nullptr;        // a cudaKernel_t, as cudaLaunchKernel takes it
  const void* table_kernel = nullptr;  // the table form's, from the same image (nullptr: none)
  std::string what;                    // the image loaded, or why there is none
};

std::mutex g_mu;
// Keyed by the table's id too (gpu_api.h, TableId): each table loads its own.
std::map<std::pair<uint64_t, int>, DeviceKernel>& Kernels() {
  static auto* kernels = new std::map<std::pair<uint64_t, int>, DeviceKernel>;
  return *kernels;
}

// A failed runtime call is also the thread's last error; clear it so no later
// check of the backend's sees it (these errors are not sticky).
void ClearLastError(const GpuApi& api) {
  if (api.cuda.GetLastError) api.cuda.GetLastError();
}

std::string ImageName(const EmbeddedKernelImage& img) {
  return (img.ptx ? "compute_" : "sm_") + std::to_string(img.arch) + (img.ptx ? " PTX" : " cubin");
}

// Loads the kernel for `device`; on failure, what.kernel stays nullptr and
// `what` says why. Called once per device under g_mu.
DeviceKernel Load(const GpuApi& api, int device) {
  DeviceKernel k;
  const auto images = BatchedCopyImages();
  if (images.empty()) {
    k.what = std::string("no kernel image: ") + BatchedCopyImagesOrigin();
    return k;
  }
  const CudaOptionalApi& o = api.cuda_optional;
#if CUDART_VERSION >= 12000
  if (!o.LibraryLoadData || !o.LibraryGetKernel || !o.LaunchKernel || !o.DeviceGetAttribute) {
    k.what = "the CUDA runtime " + api.cudart_path +
             " lacks cudaLibraryLoadData, cudaLibraryGetKernel, cudaLaunchKernel or cudaDeviceGetAttribute "
             "(the kernel needs CUDA 12.0 or later)";
    return k;
  }
  int major = 0, minor = 0;
  if (cudaError_t e = o.DeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
      e != cudaSuccess) {
    k.what = "cudaDeviceGetAttribute(compute capability) on GPU " + std::to_string(device) + ": " +
             CudaErrorText(api, e);
    ClearLastError(api);
    return k;
  }
  o.DeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  const std::string cc = std::to_string(major) + "." + std::to_string(minor);
  const auto candidates = ImagesToTry(images, major, minor);
  if (candidates.empty()) {
    std::string have;
    for (const auto& img : images) have += (have.empty() ? "" : ", ") + ImageName(img);
    k.what = "no embedded image runs on compute capability " + cc + " (the build has " + have + ")";
    return k;
  }
  // Loading and the check below act on the current device.
  int current = device;
  if (api.cuda.GetDevice) api.cuda.GetDevice(&current);
  if (current != device && api.cuda.SetDevice) api.cuda.SetDevice(device);
  std::string failures;
  for (const EmbeddedKernelImage* img : candidates) {
    cudaLibrary_t lib = nullptr;
    cudaKernel_t kernel = nullptr;
    std::string step = "cudaLibraryLoadData";
    cudaError_t e = o.LibraryLoadData(&lib, img->data, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e == cudaSuccess) {
      step = "cudaLibraryGetKernel";
      e = o.LibraryGetKernel(&kernel, lib, RM_BATCHED_COPY_KERNEL_NAME);
    }
    cudaFuncAttributes attr{};
    if (e == cudaSuccess && o.FuncGetAttributes) {
      // Makes the driver load the image into this device's context now (it
      // may load lazily), so a bad image is found here and not at a launch.
      step = "cudaFuncGetAttributes";
      e = o.FuncGetAttributes(&attr, reinterpret_cast<const void*>(kernel));
      if (e == cudaSuccess && attr.maxThreadsPerBlock < RM_BATCHED_COPY_THREADS) {
        failures += (failures.empty() ? "" : "; ") + ImageName(*img) + ": " +
                    std::to_string(attr.maxThreadsPerBlock) + " threads a block at most";
        if (o.LibraryUnload) o.LibraryUnload(lib);
        continue;
      }
    }
    if (e == cudaSuccess) {
      k.kernel = reinterpret_cast<const void*>(kernel);
      cudaKernel_t table = nullptr;
      if (o.LibraryGetKernel(&table, lib, RM_BATCHED_COPY_TABLE_KERNEL_NAME) == cudaSuccess && table) {
        k.table_kernel = reinterpret_cast<const void*>(table);
      } else {
        ClearLastError(api);  // an image of before the table form: by value only
      }
      k.what = ImageName(*img) + " (" + BatchedCopyImagesOrigin() + ") on compute capability " + cc;
      break;
    }
    failures += (failures.empty() ? "" : "; ") + ImageName(*img) + ": " + step + ": " + CudaErrorText(api, e);
    ClearLastError(api);
    if (lib && o.LibraryUnload) o.LibraryUnload(lib);
  }
  if (current != device && api.cuda.SetDevice) api.cuda.SetDevice(current);
  if (!k.kernel) k.what = "no embedded image loaded on compute capability " + cc + " (" + failures + ")";
  return k;
#else
  k.what = "this build's CUDA headers are older than 12.0 (no cudaLibraryLoadData)";
  return k;
#endif
}

const DeviceKernel& KernelFor(const GpuApi& api, int device) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& kernels = Kernels();
  const auto key = std::make_pair(api.id.value(), device);
  if (auto it = kernels.find(key); it != kernels.end()) return it->second;
  DeviceKernel k = Load(api, device);
  DebugLog("batched copy on GPU " + std::to_string(device) + ": " +
           (k.kernel ? std::string(k.table_kernel ? "one kernel launch per pack (a table past "
                                                  : "one kernel launch per ") +
                           std::to_string(RM_BATCHED_COPY_MAX_ITEMS) + " copies" +
                           (k.table_kernel ? ")" : "") + ", " + k.what
                     : "one cudaMemcpyAsync per copy: " + k.what));
  return kernels.emplace(key, std::move(k)).first->second;  // std::map: the reference stays valid
}

std::string On(int device) {
  return " on GPU " + std::to_string(device);
}

Status CheckItems(std::span<const CopyItem> items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].bytes == 0) continue;
    if (!items[i].dst || !items[i].src)
      return InvalidArgumentError("copy item " + std::to_string(i) + " (" + std::to_string(items[i].bytes) +
                                  " bytes) has a null " + (items[i].dst ? "source" : "destination"));
  }
  return OkStatus();
}

cudaMemcpyKind KindOf(CopyEnds ends) {
  switch (ends) {
    case CopyEnds::kDeviceToHost:
      return cudaMemcpyDeviceToHost;
    case CopyEnds::kHostToDevice:
      return cudaMemcpyHostToDevice;
    case CopyEnds::kDeviceToDevice:
      break;
  }
  return cudaMemcpyDeviceToDevice;
}

Status CopyOne(const GpuApi& api, std::span<const CopyItem> items, size_t i, CopyEnds ends,
               cudaStream_t stream, int device) {
  const CopyItem& it = items[i];
  if (cudaError_t e = api.cuda.MemcpyAsync(it.dst, it.src, it.bytes, KindOf(ends), stream); e != cudaSuccess)
    return InternalError("cudaMemcpyAsync of copy item " + std::to_string(i) + " (" +
                         std::to_string(it.bytes) + " bytes)" + On(device) + ": " + CudaErrorText(api, e));
  return OkStatus();
}

Status Run(const GpuApi& api, const CopyPlan& plan, std::span<const CopyItem> items, const void* kernel,
           CopyEnds ends, cudaStream_t stream, int device) {
  for (size_t l = 0; l < plan.launches.size(); ++l) {
    const CopyLaunch& launch = plan.launches[l];
    void* args[] = {const_cast<RmBatchedCopyParams*>(&launch.params)};
    if (cudaError_t e = api.cuda_optional.LaunchKernel(kernel, dim3(launch.grid),
                                                       dim3(RM_BATCHED_COPY_THREADS), args, 0, stream);
        e != cudaSuccess)
      return InternalError("cudaLaunchKernel of the batched copy (launch " + std::to_string(l + 1) + " of " +
                           std::to_string(plan.launches.size()) + ", " + std::to_string(launch.params.count) +
                           " copies from item " + std::to_string(launch.first_item) + ", " +
                           std::to_string(launch.grid) + " blocks)" + On(device) + ": " +
                           CudaErrorText(api, e));
  }
  for (size_t i : plan.direct)
    if (Status s = CopyOne(api, items, i, ends, stream, device); !s.ok()) return s;
  return OkStatus();
}

// Room for `n` bytes in this call's table (allocating it at the call's first
// use), or nullopt: no table this call (a queued upload of an earlier call,
// an allocation that failed, too large a table).
std::optional<size_t> TableRoom(const GpuApi& api, CopyTable& t, size_t n, cudaStream_t stream, int device) {
  if (!t.checked) {
    t.checked = true;
    t.usable = false;
    if (t.uploaded) {
      cudaError_t q = api.cuda.EventQuery(t.uploaded);
      if (q != cudaSuccess) {
        ClearLastError(api);
        DebugLog("batched copy on GPU " + std::to_string(device) +
                 ": an earlier call's copy table is still queued; this call's copies go by value");
        return std::nullopt;
      }
    } else if (api.cuda.EventCreateWithFlags(&t.uploaded, cudaEventDisableTiming) != cudaSuccess) {
      t.uploaded = nullptr;
      ClearLastError(api);
      return std::nullopt;
    }
    const size_t need = std::max(t.wanted, n);
    if (need > kMaxTableBytes) return std::nullopt;
    if (need > t.capacity) {
      // Every earlier upload has run (the event above): the old buffers are free.
      t.Release(api, stream);
      void* host = nullptr;
      void* dev = nullptr;
      if (api.cuda.HostAlloc(&host, need, cudaHostAllocDefault) != cudaSuccess ||
          api.cuda.MallocAsync(&dev, need, stream) != cudaSuccess) {
        if (host) api.cuda.FreeHost(host);
        ClearLastError(api);
        DebugLog("batched copy on GPU " + std::to_string(device) + ": no " + std::to_string(need) +
                 "-byte copy table; copies go by value");
        return std::nullopt;
      }
      t.host = static_cast<unsigned char*>(host);
      t.device = dev;
      t.capacity = need;
    }
    t.usable = true;
  }
  if (!t.usable || t.used + n > t.capacity) return std::nullopt;
  const size_t at = t.used;
  t.used += n;
  return at;
}

// The table form: `plan`'s items and chunks uploaded after the call's earlier
// uploads, one launch, then the direct items.
Status RunTable(const GpuApi& api, const CopyTablePlan& plan, std::span<const CopyItem> items,
                const void* kernel, CopyTable& t, size_t at, CopyEnds ends, cudaStream_t stream, int device) {
  unsigned char* host = t.host + at;
  std::memcpy(host, plan.items.data(), plan.ChunksAt());
  std::memcpy(host + plan.ChunksAt(), plan.chunks.data(), plan.chunks.size() * sizeof(unsigned));
  char* dev = static_cast<char*>(t.device) + at;
  auto what = [&] {  // for errors only
    return std::to_string(plan.items.size()) + " copies in " + std::to_string(plan.chunks.size()) + " chunks";
  };
  if (cudaError_t e = api.cuda.MemcpyAsync(dev, host, plan.Bytes(), cudaMemcpyHostToDevice, stream);
      e != cudaSuccess)
    return InternalError("cudaMemcpyAsync of the batched copy's table (" + what() + ")" + On(device) + ": " +
                         CudaErrorText(api, e));
  if (cudaError_t e = api.cuda.EventRecord(t.uploaded, stream); e != cudaSuccess)
    return InternalError("cudaEventRecord after the batched copy's table" + On(device) + ": " +
                         CudaErrorText(api, e));
  RmBatchedCopyTableParams params{reinterpret_cast<uintptr_t>(dev),
                                  reinterpret_cast<uintptr_t>(dev + plan.ChunksAt()),
                                  static_cast<unsigned>(plan.items.size()),
                                  static_cast<unsigned>(plan.chunks.size()),
                                  plan.chunk_bytes,
                                  0};
  void* args[] = {&params};
  if (cudaError_t e = api.cuda_optional.LaunchKernel(kernel, dim3(plan.grid), dim3(RM_BATCHED_COPY_THREADS),
                                                     args, 0, stream);
      e != cudaSuccess)
    return InternalError("cudaLaunchKernel of the batched copy's table form (" + what() + ", " +
                         std::to_string(plan.grid) + " blocks)" + On(device) + ": " + CudaErrorText(api, e));
  for (size_t i : plan.direct)
    if (Status s = CopyOne(api, items, i, ends, stream, device); !s.ok()) return s;
  return OkStatus();
}

Status MemcpyBatch(const GpuApi& api, std::span<const CopyItem> items, CopyEnds ends, cudaStream_t stream,
                   int device) {
#if CUDART_VERSION >= 12080
  const CudaOptionalApi& o = api.cuda_optional;
  int version = 0;
  if (!o.MemcpyBatchAsync || !o.RuntimeGetVersion || o.RuntimeGetVersion(&version) != cudaSuccess ||
      version < 12080 || version >= 13000)
    return FailedPreconditionError("cudaMemcpyBatchAsync needs a CUDA 12.8+ runtime of CUDA 12 (" +
                                   api.cudart_path + " is version " + std::to_string(version) + ")");
  if (stream == nullptr)
    return FailedPreconditionError("cudaMemcpyBatchAsync refuses the legacy default stream");
  std::vector<void*> dsts, srcs;
  std::vector<size_t> sizes, index;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].bytes == 0) continue;
    dsts.push_back(items[i].dst);
    srcs.push_back(const_cast<void*>(items[i].src));
    sizes.push_back(items[i].bytes);
    index.push_back(i);
  }
  if (dsts.empty()) return OkStatus();
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attr.srcLocHint.type =
      ends == CopyEnds::kHostToDevice ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  attr.srcLocHint.id = device;
  attr.dstLocHint.type =
      ends == CopyEnds::kDeviceToHost ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  attr.dstLocHint.id = device;
  size_t attr_index = 0, fail = SIZE_MAX;
  if (cudaError_t e = o.MemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(), &attr,
                                         &attr_index, 1, &fail, stream);
      e != cudaSuccess)
    return InternalError("cudaMemcpyBatchAsync of " + std::to_string(dsts.size()) + " copies" + On(device) +
                         (fail < index.size() ? " (at copy item " + std::to_string(index[fail]) + ")" : "") +
                         ": " + CudaErrorText(api, e));
  return OkStatus();
#else
  return FailedPreconditionError("this build's CUDA headers are older than 12.8 (no cudaMemcpyBatchAsync)");
#endif
}

}  // namespace

void CopyTable::Release(const GpuApi& api, cudaStream_t stream) {
  // An upload still queued reads the host table: that one is left (a failed
  // call's leftovers, at shutdown), not freed under it.
  const bool queued = uploaded && host && api.cuda.EventQuery(uploaded) != cudaSuccess;
  if (queued) {
    ClearLastError(api);
    DebugLog("batched copy: a copy table upload is still queued; its pinned host buffer is left allocated");
  } else if (host) {
    api.cuda.FreeHost(host);
  }
  if (device) api.cuda.FreeAsync(device, stream);  // stream-ordered: after the queued kernels
  host = nullptr;
  device = nullptr;
  capacity = 0;
  usable = false;
}

void CopyTable::Destroy(const GpuApi& api, cudaStream_t stream) {
  Release(api, stream);
  if (uploaded) api.cuda.EventDestroy(uploaded);
  uploaded = nullptr;
}

Status BatchedCopy(const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream, int device,
                   CopyTable* table, CopyEnds ends) {
  return BatchedCopyVia(CopyPath::kAuto, api, items, stream, device, table, ends);
}

Status BatchedCopyVia(CopyPath path, const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream,
                      int device, CopyTable* table, CopyEnds ends) {
  if (Status s = CheckItems(items); !s.ok()) return s;
  if (path == CopyPath::kMemcpyBatch) return MemcpyBatch(api, items, ends, stream, device);
  const void* kernel = nullptr;
  if (path != CopyPath::kMemcpy) {
    const DeviceKernel& k = KernelFor(api, device);
    if (!k.kernel && (path == CopyPath::kKernel || path == CopyPath::kKernelTable))
      return FailedPreconditionError("the batched copy kernel is not available" + On(device) + ": " + k.what);
    if (path == CopyPath::kKernelTable && (!table || !k.table_kernel))
      return FailedPreconditionError(std::string("the batched copy's table form needs ") +
                                     (table ? "a kernel image with it" : "a CopyTable") + On(device));
    kernel = k.kernel;
    if (table && k.table_kernel) {
      if (table->chunk_bytes == 0 || table->chunk_bytes % 16 != 0)
        return InvalidArgumentError("the batched copy's chunk of " + std::to_string(table->chunk_bytes) +
                                    " bytes is not a positive multiple of 16");
      CopyTablePlan& tp = table->plan;
      PlanBatchedCopyTable(items, table->chunk_bytes, ends, tp);
      if (!tp.items.empty() &&
          (path == CopyPath::kKernelTable || tp.items.size() > RM_BATCHED_COPY_MAX_ITEMS)) {
        if (auto at = TableRoom(api, *table, tp.Bytes(), stream, device))
          return RunTable(api, tp, items, k.table_kernel, *table, *at, ends, stream, device);
        if (path == CopyPath::kKernelTable)
          return FailedPreconditionError("no room in the batched copy's table" + On(device));
      }
    }
  }
  return Run(api, PlanBatchedCopy(items, kernel != nullptr, ends), items, kernel, ends, stream, device);
}

BatchedCopyKernelInfo BatchedCopyKernel(const GpuApi& api, int device) {
  const DeviceKernel& k = KernelFor(api, device);
  return {k.kernel != nullptr, k.table_kernel != nullptr, k.what};
}

}  // namespace ringmaster::internal
