// The fake GPU's shared library (built as fake-cuda/libcuda.so.1): it
// exports the C functions of the CUDA runtime, the driver and NCCL that the
// agent's loader looks up (agent/src/gpu/gpu_api.cc), and passes each call
// to the fake in the test executable (fake_gpu.cc), which hands its
// functions in once with ringmaster_fake_gpu_connect(). The agent finds it
// through the seams it has for the real libraries, and nothing else:
// RINGMASTER_CUDART_LIBRARY and RINGMASTER_NCCL_LIBRARY name its path, and
// its soname answers the agent's dlopen("libcuda.so.1"), since the test
// executable links it. It links nothing of the agent (the executable has the
// one copy).
#include "gpu/gpu_api.h"

#define RM_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

using ringmaster::internal::CudaApi;
using ringmaster::internal::CudaOptionalApi;
using ringmaster::internal::DriverApi;
using ringmaster::internal::NcclApi;

namespace {
const CudaApi* g_cuda = nullptr;
const CudaOptionalApi* g_optional = nullptr;
const DriverApi* g_driver = nullptr;
const NcclApi* g_nccl = nullptr;
}  // namespace

RM_FAKE_EXPORT void ringmaster_fake_gpu_connect(const CudaApi* cuda, const CudaOptionalApi* optional,
                                                const DriverApi* driver, const NcclApi* nccl) {
  g_cuda = cuda;
  g_optional = optional;
  g_driver = driver;
  g_nccl = nccl;
}

// A call before the fake connected: the runtime is not initialised.
#define RM_CUDA(call) return g_cuda ? g_cuda->call : cudaErrorInitializationError
#define RM_OPTIONAL(call) return g_optional ? g_optional->call : cudaErrorInitializationError
#define RM_NCCL(call) return g_nccl ? g_nccl->call : ncclInternalError

// ---- The CUDA runtime (gpu_api.h, CudaApi and CudaOptionalApi). ----
RM_FAKE_EXPORT const char* cudaGetErrorString(cudaError_t e) {
  return g_cuda ? g_cuda->GetErrorString(e) : "the fake GPU is not connected";
}
RM_FAKE_EXPORT cudaError_t cudaGetDeviceCount(int* n) {
  RM_CUDA(GetDeviceCount(n));
}
RM_FAKE_EXPORT cudaError_t cudaGetDevice(int* d) {
  RM_CUDA(GetDevice(d));
}
RM_FAKE_EXPORT cudaError_t cudaSetDevice(int d) {
  RM_CUDA(SetDevice(d));
}
RM_FAKE_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* out, int len, int d) {
  RM_CUDA(DeviceGetPCIBusId(out, len, d));
}
RM_FAKE_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  RM_CUDA(PointerGetAttributes(a, p));
}
RM_FAKE_EXPORT cudaError_t cudaGetLastError() {
  RM_CUDA(GetLastError());
}
RM_FAKE_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  RM_CUDA(StreamCreateWithFlags(s, flags));
}
RM_FAKE_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s) {
  RM_CUDA(StreamDestroy(s));
}
RM_FAKE_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  RM_CUDA(StreamWaitEvent(s, e, flags));
}
RM_FAKE_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  RM_CUDA(EventCreateWithFlags(e, flags));
}
RM_FAKE_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  RM_CUDA(EventDestroy(e));
}
RM_FAKE_EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  RM_CUDA(EventRecord(e, s));
}
RM_FAKE_EXPORT cudaError_t cudaEventQuery(cudaEvent_t e) {
  RM_CUDA(EventQuery(e));
}
RM_FAKE_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                           cudaStream_t s) {
  RM_CUDA(MemcpyAsync(dst, src, n, kind, s));
}
RM_FAKE_EXPORT cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  RM_CUDA(MallocAsync(p, n, s));
}
RM_FAKE_EXPORT cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  RM_CUDA(FreeAsync(p, s));
}
RM_FAKE_EXPORT cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int flags) {
  RM_CUDA(HostAlloc(p, n, flags));
}
RM_FAKE_EXPORT cudaError_t cudaFreeHost(void* p) {
  RM_CUDA(FreeHost(p));
}
RM_FAKE_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  RM_CUDA(StreamIsCapturing(s, status));
}
RM_FAKE_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  RM_OPTIONAL(DeviceGetAttribute(value, attr, device));
}
RM_FAKE_EXPORT cudaError_t cudaRuntimeGetVersion(int* version) {
  RM_OPTIONAL(RuntimeGetVersion(version));
}
RM_FAKE_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                                            size_t shared_bytes, cudaStream_t stream) {
  RM_OPTIONAL(LaunchKernel(func, grid, block, args, shared_bytes, stream));
}
RM_FAKE_EXPORT cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  RM_OPTIONAL(FuncGetAttributes(attr, func));
}
#if CUDART_VERSION >= 12000
RM_FAKE_EXPORT cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code,
                                               cudaJitOption* jit_options, void** jit_option_values,
                                               unsigned int num_jit_options,
                                               cudaLibraryOption* library_options,
                                               void** library_option_values,
                                               unsigned int num_library_options) {
  RM_OPTIONAL(LibraryLoadData(library, code, jit_options, jit_option_values, num_jit_options, library_options,
                              library_option_values, num_library_options));
}
RM_FAKE_EXPORT cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  RM_OPTIONAL(LibraryUnload(library));
}
RM_FAKE_EXPORT cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library,
                                                const char* name) {
  RM_OPTIONAL(LibraryGetKernel(kernel, library, name));
}
#endif

// ---- The driver's context calls (DriverApi); CUresult is an int. ----
RM_FAKE_EXPORT int cuCtxGetCurrent(void** ctx) {
  return g_driver ? g_driver->CtxGetCurrent(ctx) : 3;  // CUDA_ERROR_NOT_INITIALIZED
}
RM_FAKE_EXPORT int cuCtxSetCurrent(void* ctx) {
  return g_driver ? g_driver->CtxSetCurrent(ctx) : 3;
}
RM_FAKE_EXPORT int cuMemGetAddressRange_v2(unsigned long long* base, size_t* size, unsigned long long ptr) {
  return g_driver ? g_driver->MemGetAddressRange(base, size, ptr) : 3;
}

// ---- NCCL (NcclApi). ----
RM_FAKE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  RM_NCCL(GetVersion(version));
}
RM_FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  return g_nccl ? g_nccl->GetErrorString(r) : "the fake GPU is not connected";
}
RM_FAKE_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  return g_nccl ? g_nccl->GetLastError(comm) : "";
}
RM_FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  RM_NCCL(GetUniqueId(id));
}
RM_FAKE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                                   ncclConfig_t* config) {
  RM_NCCL(CommInitRankConfig(comm, nranks, id, rank, config));
}
RM_FAKE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  RM_NCCL(CommGetAsyncError(comm, state));
}
RM_FAKE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  RM_NCCL(CommFinalize(comm));
}
RM_FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  RM_NCCL(CommDestroy(comm));
}
RM_FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  RM_NCCL(CommAbort(comm));
}
RM_FAKE_EXPORT ncclResult_t ncclGroupStart() {
  RM_NCCL(GroupStart());
}
RM_FAKE_EXPORT ncclResult_t ncclGroupEnd() {
  RM_NCCL(GroupEnd());
}
RM_FAKE_EXPORT ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  RM_NCCL(AllReduce(send, recv, count, type, op, comm, stream));
}
