// Internal: the CUDA runtime and NCCL functions the GPU backend calls, as a
// table filled by dlopen at the first use of GPU memory. The agent is
// compiled against the real headers (so every build checks the backend) but
// links neither library: CPU-only training containers need no CUDA at all.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <string>

#include "ringmaster/env_vars.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

struct CudaApi {
  decltype(&::cudaGetErrorString) GetErrorString = nullptr;
  decltype(&::cudaGetDeviceCount) GetDeviceCount = nullptr;
  decltype(&::cudaGetDevice) GetDevice = nullptr;
  decltype(&::cudaSetDevice) SetDevice = nullptr;
  decltype(&::cudaDeviceGetPCIBusId) DeviceGetPCIBusId = nullptr;
  decltype(&::cudaPointerGetAttributes) PointerGetAttributes = nullptr;
  decltype(&::cudaGetLastError) GetLastError = nullptr;
  decltype(&::cudaStreamCreateWithFlags) StreamCreateWithFlags = nullptr;
  decltype(&::cudaStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cudaStreamWaitEvent) StreamWaitEvent = nullptr;
  decltype(&::cudaEventCreateWithFlags) EventCreateWithFlags = nullptr;
  decltype(&::cudaEventDestroy) EventDestroy = nullptr;
  decltype(&::cudaEventRecord) EventRecord = nullptr;
  decltype(&::cudaEventQuery) EventQuery = nullptr;
  decltype(&::cudaMemcpyAsync) MemcpyAsync = nullptr;
  // Overloaded by cuda_runtime.h's C++ templates: the C signatures spelled out.
  cudaError_t (*MallocAsync)(void** ptr, size_t size, cudaStream_t stream) = nullptr;
  decltype(&::cudaFreeAsync) FreeAsync = nullptr;
  cudaError_t (*HostAlloc)(void** ptr, size_t size, unsigned int flags) = nullptr;
  decltype(&::cudaFreeHost) FreeHost = nullptr;
  decltype(&::cudaStreamIsCapturing) StreamIsCapturing = nullptr;
};

// The driver's context calls (libcuda.so.1), optional: with them a thread's
// current context is saved and restored exactly (no context is made on a
// device the process does not use); CUcontext is a pointer, CUresult an int.
struct DriverApi {
  int (*CtxGetCurrent)(void** ctx) = nullptr;
  int (*CtxSetCurrent)(void* ctx) = nullptr;
  // cuMemGetAddressRange_v2 (CUdeviceptr is an unsigned 64-bit integer):
  // the mapped allocation a device pointer lies in, so that one query places
  // every tensor carved from it (cuda_backend.cc's PointerPlaces).
  int (*MemGetAddressRange)(unsigned long long* base, size_t* size, unsigned long long ptr) = nullptr;
};

// ---- Optional CUDA runtime functions: the batched copy (batched_copy.cc). ----
// Each is nullptr where the loaded runtime lacks it; nothing else needs them.
// The C signatures are spelled out (cuda_runtime.h overloads some of them).
struct CudaOptionalApi {
  cudaError_t (*DeviceGetAttribute)(int* value, cudaDeviceAttr attr, int device) = nullptr;
  cudaError_t (*RuntimeGetVersion)(int* version) = nullptr;
  cudaError_t (*LaunchKernel)(const void* func, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                              cudaStream_t stream) = nullptr;
  cudaError_t (*FuncGetAttributes)(cudaFuncAttributes* attr, const void* func) = nullptr;
#if CUDART_VERSION >= 12000
  // CUDA 12.0+: context-independent loading of an image (PTX or cubin).
  cudaError_t (*LibraryLoadData)(cudaLibrary_t* library, const void* code, cudaJitOption* jit_options,
                                 void** jit_option_values, unsigned int num_jit_options,
                                 cudaLibraryOption* library_options, void** library_option_values,
                                 unsigned int num_library_options) = nullptr;
  cudaError_t (*LibraryUnload)(cudaLibrary_t library) = nullptr;
  cudaError_t (*LibraryGetKernel)(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) = nullptr;
#endif
#if CUDART_VERSION >= 12080
  // CUDA 12.8+ (its 12.x signature; 13.0 dropped failIdx).
  cudaError_t (*MemcpyBatchAsync)(void** dsts, void** srcs, size_t* sizes, size_t count,
                                  cudaMemcpyAttributes* attrs, size_t* attrs_idxs, size_t num_attrs,
                                  size_t* fail_idx, cudaStream_t stream) = nullptr;
#endif
};
// ---- end of the optional functions ----

struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommFinalize) CommFinalize = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
};

// Tells tables apart for what is kept per table (the batched copy's loaded
// kernels, batched_copy.cc): every table has its own number, and a copy or
// an assignment gets a new one, so a table made anew loads anew.
class TableId {
 public:
  TableId() : value_(Next()) {}
  TableId(const TableId&) : value_(Next()) {}
  TableId& operator=(const TableId&) {
    value_ = Next();
    return *this;
  }
  uint64_t value() const { return value_; }

 private:
  static uint64_t Next();
  uint64_t value_;
};

struct GpuApi {
  TableId id;
  CudaApi cuda;
  DriverApi driver;
  CudaOptionalApi cuda_optional;  // the batched copy's; each may be nullptr
  // NCCL is optional: without it GPU memory is staged through the host.
  bool have_nccl = false;
  NcclApi nccl;
  int nccl_version = 0;          // ncclGetVersion's code, e.g. 22703
  std::string nccl_unavailable;  // why have_nccl is false
  std::string cudart_path, nccl_path;
};

// The libraries are named by kEnvCudartLibrary and kEnvNcclLibrary
// (env_vars.h: full paths or sonames), and only they are tried when set;
// unset, the defaults are libcudart.so.12 then libcudart.so, libnccl.so.2
// then libnccl.so.

// Loads the table once (thread-safe) and returns it; Unavailable naming the
// library and dlerror() when the CUDA runtime cannot be loaded. A missing
// NCCL is not an error here (have_nccl says so).
StatusOr<const GpuApi*> LoadGpuApi();
// Whether device memory can exist in this process at all: the CUDA driver
// (libcuda.so.1) is already loaded, or the table is. Cheap; loads nothing.
bool CudaMayBeInUse();

// "cudaMemcpyAsync: invalid argument (cudaErrorInvalidValue)"
std::string CudaErrorText(const GpuApi& api, cudaError_t e);
std::string NcclErrorText(const GpuApi& api, ncclResult_t r, ncclComm_t comm = nullptr);
// "2.27.3"
std::string NcclVersionText(int code);

}  // namespace ringmaster::internal
