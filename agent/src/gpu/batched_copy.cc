// The batched copy: the kernel loaded once per device from the embedded
// images, the launches of a plan, and the per-item cudaMemcpyAsync fallback.
#include "gpu/batched_copy.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "agent_log.h"

namespace ringmaster::internal {
namespace {

struct DeviceKernel {
  const void* kernel = nullptr;  // a cudaKernel_t, as cudaLaunchKernel takes it
  std::string what;              // the image loaded, or why there is none
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
           (k.kernel
                ? "one kernel launch per " + std::to_string(RM_BATCHED_COPY_MAX_ITEMS) + " copies, " + k.what
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

Status CopyOne(const GpuApi& api, std::span<const CopyItem> items, size_t i, cudaStream_t stream,
               int device) {
  const CopyItem& it = items[i];
  if (cudaError_t e = api.cuda.MemcpyAsync(it.dst, it.src, it.bytes, cudaMemcpyDeviceToDevice, stream);
      e != cudaSuccess)
    return InternalError("cudaMemcpyAsync of copy item " + std::to_string(i) + " (" +
                         std::to_string(it.bytes) + " bytes)" + On(device) + ": " + CudaErrorText(api, e));
  return OkStatus();
}

Status Run(const GpuApi& api, const CopyPlan& plan, std::span<const CopyItem> items, const void* kernel,
           cudaStream_t stream, int device) {
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
    if (Status s = CopyOne(api, items, i, stream, device); !s.ok()) return s;
  return OkStatus();
}

Status MemcpyBatch(const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream, int device) {
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
  attr.srcLocHint.type = cudaMemLocationTypeDevice;
  attr.srcLocHint.id = device;
  attr.dstLocHint.type = cudaMemLocationTypeDevice;
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

Status BatchedCopy(const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream, int device) {
  return BatchedCopyVia(CopyPath::kAuto, api, items, stream, device);
}

Status BatchedCopyVia(CopyPath path, const GpuApi& api, std::span<const CopyItem> items, cudaStream_t stream,
                      int device) {
  if (Status s = CheckItems(items); !s.ok()) return s;
  if (path == CopyPath::kMemcpyBatch) return MemcpyBatch(api, items, stream, device);
  const void* kernel = nullptr;
  if (path != CopyPath::kMemcpy) {
    const DeviceKernel& k = KernelFor(api, device);
    if (!k.kernel && path == CopyPath::kKernel)
      return FailedPreconditionError("the batched copy kernel is not available" + On(device) + ": " + k.what);
    kernel = k.kernel;
  }
  return Run(api, PlanBatchedCopy(items, kernel != nullptr), items, kernel, stream, device);
}

BatchedCopyKernelInfo BatchedCopyKernel(const GpuApi& api, int device) {
  const DeviceKernel& k = KernelFor(api, device);
  return {k.kernel != nullptr, k.what};
}

}  // namespace ringmaster::internal
