// rm-bench-gpu: the GPU backend against the hardware it runs on, each
// number next to the bound it should be compared with, measured in the same
// run (docs/gpu.md, docs/benchmarks/gpu.md):
//   1. device packing throughput (the agent's pack layout, copies on one
//      stream) vs the device's own copy bandwidth (one large D2D copy);
//   2. NCCL one-rank all-reduce latency through the agent vs a bare
//      ncclAllReduce on a one-rank communicator;
//   3. host-staged RING busbw (n members sharing the GPU, threads in this
//      process, TCP on 127.0.0.1) vs pinned host<->device copy bandwidth.
// Needs a GPU; without one it says so and exits 77.
//
//   rm-bench-gpu [--members N] [--mib M] [--iters K]
//
// The agent through its public API only (ringmaster/communicator.h); the
// bounds through the CUDA runtime and NCCL, linked directly.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "free_ports.h"
#include "ringmaster/communicator.h"

using namespace ringmaster;
using Clock = std::chrono::steady_clock;

namespace {

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Median of `iters` timings of fn() (seconds), after two warm-ups.
template <typename F>
double Median(int iters, F fn) {
  fn();
  fn();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    auto a = Clock::now();
    fn();
    t.push_back(Seconds(a, Clock::now()));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// "2.27.3" from ncclGetVersion's code: MAJOR*10000 + MINOR*100 + PATCH
// since 2.9, MAJOR*1000 + MINOR*100 + PATCH before.
std::string NcclVersionText(int code) {
  const bool old = code < 10000;
  const int major = old ? code / 1000 : code / 10000;
  const int minor = old ? (code / 100) % 10 : (code / 100) % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// The agent's device pack layout (docs/gpu.md) for tensors of one dtype:
// tensors in order, a new pack once one exceeds bytes_per_pack, each tensor
// at an offset aligned to 16 bytes. Per pack, the copies packing makes.
struct PackCopy {
  size_t tensor, offset, bytes;
};
std::vector<std::vector<PackCopy>> PlanPackCopies(const std::vector<Tensor>& ts, size_t bytes_per_pack) {
  constexpr size_t kAlign = 16;
  std::vector<std::vector<PackCopy>> packs;
  size_t pack_bytes = 0, off = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].count <= 0) continue;
    if (packs.empty() || pack_bytes > bytes_per_pack) {
      packs.emplace_back();
      pack_bytes = off = 0;
    }
    off = (off + kAlign - 1) / kAlign * kAlign;
    packs.back().push_back({i, off, ts[i].bytes()});
    off += ts[i].bytes();
    pack_bytes += ts[i].bytes();
  }
  return packs;
}

std::vector<CommunicatorSettings> Settings(int n) {
  CollectiveGroup group;
  const auto ports = internal::FreeLocalPorts(n);
  for (int r = 0; r < n; ++r)
    group.members.push_back(
        {r == 0 ? "chief" : "worker", r == 0 ? 0 : r - 1, "127.0.0.1:" + std::to_string(ports[r])});
  std::vector<CommunicatorSettings> out(n);
  for (int r = 0; r < n; ++r) {
    out[r].group = group;
    out[r].group.rank = r;
    out[r].formation_timeout_seconds = 60;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int members = 4, iters = 20;
  size_t mib = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--members") members = std::atoi(argv[i + 1]);
    if (a == "--mib") mib = static_cast<size_t>(std::atoll(argv[i + 1]));
    if (a == "--iters") iters = std::atoi(argv[i + 1]);
  }
  // What the agent dlopens (docs/agent.md): the very libraries this links.
  ::setenv("RINGMASTER_CUDART_LIBRARY", RINGMASTER_BENCH_CUDART, 0);
  ::setenv("RINGMASTER_NCCL_LIBRARY", RINGMASTER_BENCH_NCCL, 0);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("rm-bench-gpu: skipped: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  int nccl_version = 0;
  ncclGetVersion(&nccl_version);
  std::printf("device: %s (%d SMs, %.1f GiB), NCCL %s, %d iterations, median\n", prop.name,
              prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0,
              NcclVersionText(nccl_version).c_str(), iters);
  const size_t bytes = mib << 20;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char *src = nullptr, *dst = nullptr;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMalloc(&dst, bytes));
  CK(cudaMemset(src, 1, bytes));

  // 1. Packing vs copy bandwidth. GB/s counts the bytes copied once.
  double copy = Median(iters, [&] {
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    CK(cudaStreamSynchronize(s));
  });
  std::printf("\n1. device packing (%zu MiB per call)\n", mib);
  std::printf("   %-44s %9.1f GB/s\n", "one D2D copy (the device's copy bandwidth)", bytes / copy / 1e9);
  for (size_t tensor_kib : {4, 64, 1024}) {
    const size_t tb = tensor_kib << 10;
    const size_t n = bytes / tb;
    std::vector<Tensor> ts;
    for (size_t i = 0; i < n; ++i)
      ts.push_back(
          Tensor{src + i * tb, static_cast<int64_t>(tb / 4), DataType::kFloat32, MemoryKind::kDevice});
    const auto packs = PlanPackCopies(ts, bytes);
    double t = Median(iters, [&] {
      for (const auto& p : packs)
        for (const auto& it : p)
          CK(cudaMemcpyAsync(dst + it.offset, ts[it.tensor].data, it.bytes, cudaMemcpyDeviceToDevice, s));
      CK(cudaStreamSynchronize(s));
    });
    std::printf(
        "   pack %6zu tensors of %4zu KiB                  %9.1f GB/s (%.0f%% of the copy bandwidth)\n", n,
        tensor_kib, bytes / t / 1e9, 100.0 * copy / t);
  }

  // 2. NCCL one-rank latency.
  std::printf("\n2. NCCL one-rank all-reduce latency\n");
  ncclComm_t raw;
  int dev0 = 0;
  if (ncclCommInitAll(&raw, 1, &dev0) != ncclSuccess) {
    std::fprintf(stderr, "ncclCommInitAll failed\n");
    return 1;
  }
  auto comm = Communicator::Create(Settings(1)[0]);
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
    return 1;
  }
  for (size_t b : {size_t{4}, size_t{4096}, size_t{1} << 20, size_t{16} << 20}) {
    if (b > bytes) break;
    double bare = Median(iters * 10, [&] {
      ncclAllReduce(src, src, b / 4, ncclFloat32, ncclSum, raw, s);
      CK(cudaStreamSynchronize(s));
    });
    Tensor t{src, static_cast<int64_t>(b / 4), DataType::kFloat32, MemoryKind::kDevice};
    CommunicationOptions o;
    o.implementation = Implementation::kNccl;
    double agent = Median(iters * 10, [&] {
      Status st = (*comm)->AllReduce({&t, 1}, ReduceOp::kSum, o);
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        std::exit(1);
      }
    });
    std::printf("   %9zu bytes: agent %8.1f us, bare ncclAllReduce %8.1f us\n", b, agent * 1e6, bare * 1e6);
  }
  ncclCommDestroy(raw);
  comm->reset();

  // 3. Host-staged RING vs host<->device copy bandwidth.
  std::printf("\n3. host-staged RING, %d members sharing GPU 0 (threads, TCP on 127.0.0.1)\n", members);
  char* pinned = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&pinned), bytes, cudaHostAllocPortable));
  double d2h = Median(iters, [&] {
    CK(cudaMemcpyAsync(pinned, src, bytes, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
  });
  double h2d = Median(iters, [&] {
    CK(cudaMemcpyAsync(src, pinned, bytes, cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));
  });
  std::printf("   pinned D2H %.1f GB/s, H2D %.1f GB/s\n", bytes / d2h / 1e9, bytes / h2d / 1e9);
  auto settings = Settings(members);
  std::vector<std::unique_ptr<Communicator>> group(members);
  std::vector<char*> bufs(members);
  {
    std::vector<std::thread> th;
    for (int r = 0; r < members; ++r) {
      CK(cudaMalloc(&bufs[r], bytes));
      th.emplace_back([&, r] {
        auto c = Communicator::Create(settings[r]);
        if (c.ok()) group[r] = std::move(*c);
      });
    }
    for (auto& t : th) t.join();
  }
  for (auto& c : group) {
    if (!c) {
      std::fprintf(stderr, "group formation failed\n");
      return 1;
    }
  }
  for (size_t b : {size_t{1} << 20, size_t{16} << 20, bytes}) {
    if (b > bytes) break;
    std::vector<double> times(members);
    std::vector<std::thread> th;
    for (int r = 0; r < members; ++r) {
      th.emplace_back([&, r] {
        CK(cudaSetDevice(0));
        Tensor t{bufs[r], static_cast<int64_t>(b / 4), DataType::kFloat32, MemoryKind::kDevice};
        CommunicationOptions o;
        o.implementation = Implementation::kRing;
        times[r] = Median(iters, [&] {
          Status st = group[r]->AllReduce({&t, 1}, ReduceOp::kSum, o);
          if (!st.ok()) {
            std::fprintf(stderr, "%s\n", st.ToString().c_str());
            std::exit(1);
          }
        });
      });
    }
    for (auto& t : th) t.join();
    double t = *std::max_element(times.begin(), times.end());
    double algbw = b / t / 1e9;
    double busbw = algbw * 2.0 * (members - 1) / members;
    std::printf(
        "   %9zu bytes: %8.2f ms, algbw %6.2f GB/s, busbw %6.2f GB/s (each member copies %zu bytes down and "
        "up)\n",
        b, t * 1e3, algbw, busbw, b);
  }
  group.clear();
  for (char* b : bufs) cudaFree(b);
  cudaFreeHost(pinned);
  cudaFree(src);
  cudaFree(dst);
  cudaStreamDestroy(s);
  return 0;
}
