#include "gpu/gpu_api.h"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace ringmaster::internal {

namespace {

std::atomic<bool> g_loaded{false};

// The library the variable names, alone (an explicit choice is not second-
// guessed), or else the defaults in order.
std::vector<std::string> Candidates(const char* env, std::initializer_list<const char*> defaults) {
  if (const char* v = std::getenv(env); v && *v) return {v};
  return {defaults.begin(), defaults.end()};
}

// dlopen the first candidate that loads; *errors collects why the others did not.
void* OpenFirst(const std::vector<std::string>& names, std::string* path, std::string* errors) {
  for (const auto& n : names) {
    // RTLD_LOCAL: our symbols do not leak into the application's namespace.
    if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *path = n;
      return h;
    }
    const char* e = ::dlerror();
    *errors += (errors->empty() ? "" : "; ") + std::string(e ? e : n.c_str());
  }
  return nullptr;
}

template <typename F>
bool Sym(void* lib, const char* name, F* out, std::string* missing) {
  void* p = ::dlsym(lib, name);
  if (!p) {
    *missing += (missing->empty() ? "" : ", ") + std::string(name);
    return false;
  }
  *out = reinterpret_cast<F>(p);
  return true;
}

// ---- The optional CUDA functions (gpu_api.h, CudaOptionalApi): a missing one stays nullptr. ----
void LoadOptionalCuda(void* cudart, CudaOptionalApi* o) {
  std::string absent;  // not an error: the batched copy falls back without them
  Sym(cudart, "cudaDeviceGetAttribute", &o->DeviceGetAttribute, &absent);
  Sym(cudart, "cudaRuntimeGetVersion", &o->RuntimeGetVersion, &absent);
  Sym(cudart, "cudaLaunchKernel", &o->LaunchKernel, &absent);
  Sym(cudart, "cudaFuncGetAttributes", &o->FuncGetAttributes, &absent);
#if CUDART_VERSION >= 12000
  Sym(cudart, "cudaLibraryLoadData", &o->LibraryLoadData, &absent);
  Sym(cudart, "cudaLibraryUnload", &o->LibraryUnload, &absent);
  Sym(cudart, "cudaLibraryGetKernel", &o->LibraryGetKernel, &absent);
#endif
#if CUDART_VERSION >= 12080
  Sym(cudart, "cudaMemcpyBatchAsync", &o->MemcpyBatchAsync, &absent);
#endif
}
// ---- end of the optional functions ----

struct Loaded {
  GpuApi api;
  Status status;
};

Loaded* LoadOnce() {
  static Loaded* loaded = [] {
    auto* l = new Loaded;  // never freed: the libraries stay loaded for the process's life
    GpuApi& a = l->api;
    std::string errors;
    void* cudart = OpenFirst(Candidates(kEnvCudartLibrary, {"libcudart.so.12", "libcudart.so"}),
                             &a.cudart_path, &errors);
    if (!cudart) {
      l->status = UnavailableError(
          "GPU memory needs the CUDA runtime, which could not be loaded (" + errors + "); " +
          (std::getenv(kEnvCudartLibrary) && *std::getenv(kEnvCudartLibrary)
               ? std::string(kEnvCudartLibrary) + " names it: correct or unset it"
               : "install it (libcudart.so.12) or set " + std::string(kEnvCudartLibrary) + " to its path"));
      return l;
    }
    std::string missing;
    auto& c = a.cuda;
    Sym(cudart, "cudaGetErrorString", &c.GetErrorString, &missing);
    Sym(cudart, "cudaGetDeviceCount", &c.GetDeviceCount, &missing);
    Sym(cudart, "cudaGetDevice", &c.GetDevice, &missing);
    Sym(cudart, "cudaSetDevice", &c.SetDevice, &missing);
    Sym(cudart, "cudaDeviceGetPCIBusId", &c.DeviceGetPCIBusId, &missing);
    Sym(cudart, "cudaPointerGetAttributes", &c.PointerGetAttributes, &missing);
    Sym(cudart, "cudaGetLastError", &c.GetLastError, &missing);
    Sym(cudart, "cudaStreamCreateWithFlags", &c.StreamCreateWithFlags, &missing);
    Sym(cudart, "cudaStreamDestroy", &c.StreamDestroy, &missing);
    Sym(cudart, "cudaStreamWaitEvent", &c.StreamWaitEvent, &missing);
    Sym(cudart, "cudaEventCreateWithFlags", &c.EventCreateWithFlags, &missing);
    Sym(cudart, "cudaEventDestroy", &c.EventDestroy, &missing);
    Sym(cudart, "cudaEventRecord", &c.EventRecord, &missing);
    Sym(cudart, "cudaEventQuery", &c.EventQuery, &missing);
    Sym(cudart, "cudaMemcpyAsync", &c.MemcpyAsync, &missing);
    Sym(cudart, "cudaMallocAsync", &c.MallocAsync, &missing);
    Sym(cudart, "cudaFreeAsync", &c.FreeAsync, &missing);
    Sym(cudart, "cudaHostAlloc", &c.HostAlloc, &missing);
    Sym(cudart, "cudaFreeHost", &c.FreeHost, &missing);
    Sym(cudart, "cudaStreamIsCapturing", &c.StreamIsCapturing, &missing);
    if (!missing.empty()) {
      l->status = UnavailableError("the CUDA runtime " + a.cudart_path + " lacks " + missing +
                                   " (the agent needs CUDA 11.2 or later)");
      return l;
    }

    // The driver is there wherever a GPU is; without it the saved device
    // is restored instead of the context (DeviceGuard).
    if (void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      std::string none;
      Sym(driver, "cuCtxGetCurrent", &a.driver.CtxGetCurrent, &none);
      Sym(driver, "cuCtxSetCurrent", &a.driver.CtxSetCurrent, &none);
      Sym(driver, "cuMemGetAddressRange_v2", &a.driver.MemGetAddressRange, &none);
    }
    LoadOptionalCuda(cudart, &a.cuda_optional);

    std::string nerrors;
    void* nccl =
        OpenFirst(Candidates(kEnvNcclLibrary, {"libnccl.so.2", "libnccl.so"}), &a.nccl_path, &nerrors);
    if (!nccl) {
      const char* named = std::getenv(kEnvNcclLibrary);
      a.nccl_unavailable = "NCCL could not be loaded (" + nerrors + "; " +
                           (named && *named ? "named by " : "set ") + kEnvNcclLibrary + ")";
      return l;
    }
    missing.clear();
    auto& n = a.nccl;
    Sym(nccl, "ncclGetVersion", &n.GetVersion, &missing);
    Sym(nccl, "ncclGetErrorString", &n.GetErrorString, &missing);
    Sym(nccl, "ncclGetUniqueId", &n.GetUniqueId, &missing);
    Sym(nccl, "ncclCommInitRankConfig", &n.CommInitRankConfig, &missing);
    Sym(nccl, "ncclCommGetAsyncError", &n.CommGetAsyncError, &missing);
    Sym(nccl, "ncclCommDestroy", &n.CommDestroy, &missing);
    Sym(nccl, "ncclCommAbort", &n.CommAbort, &missing);
    Sym(nccl, "ncclGroupStart", &n.GroupStart, &missing);
    Sym(nccl, "ncclGroupEnd", &n.GroupEnd, &missing);
    Sym(nccl, "ncclAllReduce", &n.AllReduce, &missing);
    std::string optional_missing;  // newer than what we need
    Sym(nccl, "ncclGetLastError", &n.GetLastError, &optional_missing);
    Sym(nccl, "ncclCommFinalize", &n.CommFinalize, &optional_missing);
    if (!missing.empty()) {
      a.nccl_unavailable = "NCCL " + a.nccl_path + " lacks " + missing +
                           " (non-blocking communicators need NCCL 2.14 or later)";
      return l;
    }
    n.GetVersion(&a.nccl_version);
    a.have_nccl = true;
    return l;
  }();
  return loaded;
}

}  // namespace

uint64_t TableId::Next() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

StatusOr<const GpuApi*> LoadGpuApi() {
  Loaded* l = LoadOnce();
  g_loaded.store(true, std::memory_order_release);
  if (!l->status.ok()) return l->status;
  return &l->api;
}

bool CudaMayBeInUse() {
  if (g_loaded.load(std::memory_order_acquire)) return true;
  // Device memory needs the driver; if no one loaded it, no pointer is a
  // device pointer. RTLD_NOLOAD loads nothing.
  static std::atomic<bool> seen{false};
  if (seen.load(std::memory_order_relaxed)) return true;
  // A "no" is kept for a second: the CPU engine's calls pay no dlopen each.
  static std::atomic<int64_t> recheck_at{0};
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (now < recheck_at.load(std::memory_order_relaxed)) return false;
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) {
    recheck_at.store(
        now +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::seconds(1)).count(),
        std::memory_order_relaxed);
    return false;
  }
  ::dlclose(h);  // drops only the reference NOLOAD took
  seen.store(true, std::memory_order_relaxed);
  return true;
}

std::string CudaErrorText(const GpuApi& api, cudaError_t e) {
  const char* s = api.cuda.GetErrorString ? api.cuda.GetErrorString(e) : nullptr;
  return std::string(s ? s : "unknown error") + " (cudaError " + std::to_string(static_cast<int>(e)) + ")";
}

std::string NcclErrorText(const GpuApi& api, ncclResult_t r, ncclComm_t comm) {
  const char* s = api.nccl.GetErrorString ? api.nccl.GetErrorString(r) : nullptr;
  std::string out =
      std::string(s ? s : "unknown error") + " (ncclResult " + std::to_string(static_cast<int>(r)) + ")";
  if (api.nccl.GetLastError) {
    const char* last = api.nccl.GetLastError(comm);
    if (last && *last) out += ": " + std::string(last);
  }
  return out;
}

std::string NcclVersionText(int code) {
  // Codes are MAJOR*10000 + MINOR*100 + PATCH since 2.9 (MAJOR*1000 + ... before).
  int major, minor, patch;
  if (code >= 10000) {
    major = code / 10000;
    minor = (code / 100) % 100;
    patch = code % 100;
  } else {
    major = code / 1000;
    minor = (code / 100) % 10;
    patch = code % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace ringmaster::internal
