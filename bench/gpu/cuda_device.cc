// rm-bench-gpu's BenchDevice on a real GPU (cuda_device.h).
#include "cuda_device.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace rmgpubench {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const char* what, const std::string& why) {
  std::fprintf(stderr, "rm-bench-gpu: %s: %s\n", what, why.c_str());
  std::exit(1);
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Die(what, std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
}

cudaStream_t S(void* s) {
  return static_cast<cudaStream_t>(s);
}

// "2.28.9" from ncclGetVersion's code (MAJOR*10000 + MINOR*100 + PATCH
// since 2.9, MAJOR*1000 + MINOR*100 + PATCH before).
std::string NcclVersionText(int code) {
  const bool old = code < 10000;
  const int major = old ? code / 1000 : code / 10000;
  const int minor = old ? (code / 100) % 10 : (code / 100) % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

class CudaDevice : public BenchDevice {
 public:
  CudaDevice() {
    Check(cudaSetDevice(0), "cudaSetDevice(0)");
    Check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }
  ~CudaDevice() override {
    if (comm_) nccl_.CommDestroy(comm_);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
    cudaEventDestroy(event_);
  }

  void* Alloc(size_t bytes) override {
    void* p = nullptr;
    Check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
  void Free(void* p) override { Check(cudaFree(p), "cudaFree"); }
  void* NewStream() override {
    cudaStream_t s;
    Check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back(s);
    return s;
  }
  void CopyToDevice(void* dst, const void* src, size_t bytes, void* s) override {
    Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, S(s)), "cudaMemcpyAsync (to the device)");
    Check(cudaStreamSynchronize(S(s)), "cudaStreamSynchronize");
  }
  void CopyToHost(void* dst, const void* src, size_t bytes, void* s) override {
    Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, S(s)), "cudaMemcpyAsync (to the host)");
    Check(cudaStreamSynchronize(S(s)), "cudaStreamSynchronize");
  }
  void CopyOnDevice(void* dst, const void* src, size_t bytes, void* s) override {
    Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S(s)),
          "cudaMemcpyAsync (on the device)");
    Check(cudaStreamSynchronize(S(s)), "cudaStreamSynchronize");
  }
  void Fill(void* dst, unsigned char byte, size_t bytes, void* s) override {
    Check(cudaMemsetAsync(dst, byte, bytes, S(s)), "cudaMemsetAsync");
    Check(cudaStreamSynchronize(S(s)), "cudaStreamSynchronize");
  }

  // Called from one thread at a time (the bounds are not run by members).
  double TimedCopy(void* dst, const void* src, size_t bytes, void* s) override {
    const auto t0 = Clock::now();
    Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S(s)), "cudaMemcpyAsync (the bound)");
    Check(cudaEventRecord(event_, S(s)), "cudaEventRecord");
    Check(cudaEventSynchronize(event_), "cudaEventSynchronize");
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  std::string StartAllReduceBound() override {
    const char* path = std::getenv("RINGMASTER_NCCL_LIBRARY");
    if (!path || !*path) return "RINGMASTER_NCCL_LIBRARY is not set";
    void* h = ::dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
      return std::string("the agent has not loaded ") + path +
             " (RINGMASTER_NCCL_LIBRARY) after an NCCL call: it staged instead, or loaded another NCCL";
    auto sym = [&](const char* name) {
      void* f = ::dlsym(h, name);
      if (!f) Die("dlsym", std::string(name) + " in " + path);
      return f;
    };
    nccl_.GetVersion = reinterpret_cast<decltype(&::ncclGetVersion)>(sym("ncclGetVersion"));
    nccl_.GetErrorString = reinterpret_cast<decltype(&::ncclGetErrorString)>(sym("ncclGetErrorString"));
    nccl_.CommInitAll = reinterpret_cast<decltype(&::ncclCommInitAll)>(sym("ncclCommInitAll"));
    nccl_.CommDestroy = reinterpret_cast<decltype(&::ncclCommDestroy)>(sym("ncclCommDestroy"));
    nccl_.AllReduce = reinterpret_cast<decltype(&::ncclAllReduce)>(sym("ncclAllReduce"));
    int version = 0;
    if (nccl_.GetVersion(&version) != ncclSuccess) return "ncclGetVersion failed";
    if (version < 21000) return "NCCL " + NcclVersionText(version) + " has no ncclAvg (2.10+)";
    int dev0 = 0;
    if (ncclResult_t e = nccl_.CommInitAll(&comm_, 1, &dev0); e != ncclSuccess) {
      comm_ = nullptr;
      return std::string("ncclCommInitAll: ") + nccl_.GetErrorString(e);
    }
    library_ = "NCCL " + NcclVersionText(version) + " (" + path + ")";
    // A second one-rank communicator, non-blocking, for what that mode costs.
    auto get_id = reinterpret_cast<decltype(&::ncclGetUniqueId)>(::dlsym(h, "ncclGetUniqueId"));
    nccl_.InitConfig =
        reinterpret_cast<decltype(&::ncclCommInitRankConfig)>(::dlsym(h, "ncclCommInitRankConfig"));
    nccl_.AsyncError =
        reinterpret_cast<decltype(&::ncclCommGetAsyncError)>(::dlsym(h, "ncclCommGetAsyncError"));
    ncclUniqueId id{};
    if (get_id && nccl_.InitConfig && nccl_.AsyncError && get_id(&id) == ncclSuccess) {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      ncclResult_t r = nccl_.InitConfig(&nb_comm_, 1, id, 0, &config);
      if (r == ncclSuccess || r == ncclInProgress) r = Settle(nb_comm_);
      if (r != ncclSuccess) nb_comm_ = nullptr;
    }
    return "";
  }

  // Polls a non-blocking communicator until its calls are enqueued.
  ncclResult_t Settle(ncclComm_t c) {
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      if (ncclResult_t e = nccl_.AsyncError(c, &state); e != ncclSuccess) return e;
    }
    return state;
  }

  double TimedAllReduceNonBlocking(const void* src, void* dst, size_t count, void* s) override {
    if (!nb_comm_) return -1;
    const auto t0 = Clock::now();
    ncclResult_t e = nccl_.AllReduce(src, dst, count, ncclFloat32, ncclAvg, nb_comm_, S(s));
    if (e == ncclSuccess || e == ncclInProgress) e = Settle(nb_comm_);
    if (e != ncclSuccess) Die("ncclAllReduce (non-blocking communicator)", nccl_.GetErrorString(e));
    Check(cudaEventRecord(event_, S(s)), "cudaEventRecord");
    Check(cudaEventSynchronize(event_), "cudaEventSynchronize");
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  double TimedAllReduce(const void* src, void* dst, size_t count, void* s) override {
    const auto t0 = Clock::now();
    if (ncclResult_t e = nccl_.AllReduce(src, dst, count, ncclFloat32, ncclAvg, comm_, S(s));
        e != ncclSuccess)
      Die("ncclAllReduce (the bound)", nccl_.GetErrorString(e));
    Check(cudaEventRecord(event_, S(s)), "cudaEventRecord");
    Check(cudaEventSynchronize(event_), "cudaEventSynchronize");
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  std::string BoundLibrary() override { return library_; }

 private:
  struct Nccl {
    decltype(&::ncclGetVersion) GetVersion = nullptr;
    decltype(&::ncclGetErrorString) GetErrorString = nullptr;
    decltype(&::ncclCommInitAll) CommInitAll = nullptr;
    decltype(&::ncclCommDestroy) CommDestroy = nullptr;
    decltype(&::ncclAllReduce) AllReduce = nullptr;
    decltype(&::ncclCommInitRankConfig) InitConfig = nullptr;
    decltype(&::ncclCommGetAsyncError) AsyncError = nullptr;
  } nccl_;
  ncclComm_t comm_ = nullptr;
  ncclComm_t nb_comm_ = nullptr;
  std::string library_;
  cudaEvent_t event_ = nullptr;
  std::mutex mu_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace

int CountGpus(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount found none";
  return n;
}

std::string DescribeGpu0() {
  cudaDeviceProp p{};
  Check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (%d SMs, %.1f GiB), driver CUDA %d.%d, runtime %d.%d", p.name,
                p.multiProcessorCount, static_cast<double>(p.totalGlobalMem) / (1 << 30), driver / 1000,
                (driver % 1000) / 10, runtime / 1000, (runtime % 1000) / 10);
  return buf;
}

std::unique_ptr<BenchDevice> MakeCudaDevice() {
  return std::make_unique<CudaDevice>();
}

}  // namespace rmgpubench
