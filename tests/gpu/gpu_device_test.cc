// The agent on a real GPU (label gpu). Without a device every test reports
// "skipped: no GPU". What runs with one:
//  - a one-rank NCCL all-reduce of every dtype and op, checked exactly;
//  - hundreds of tensors of mixed dtypes in many packs;
//  - the caller's stream is waited for (a non-blocking stream held back);
//  - three processes sharing the one GPU through RING (host staging);
//  - a timeout that aborts NCCL (and the staged path) cleanly, then Reform.
// NCCL refuses two ranks on one GPU, so multi-rank NCCL needs 2+ GPUs.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "collectives/kernels.h"
#include "free_ports.h"
#include "gpu/gpu_api.h"
#include "group_util.h"

extern char** environ;

namespace ringmaster {
namespace {

constexpr DataType kAllTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                  DataType::kFloat64, DataType::kInt32,    DataType::kInt64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kProduct};

bool HaveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define REQUIRE_GPU() \
  if (!HaveGpu()) GTEST_SKIP() << "skipped: no GPU"

void Put(DataType dt, std::vector<char>& buf, size_t i, double v) {
  internal::StoreElement(dt, buf.data(), i, v);
}
double Get(DataType dt, const std::vector<char>& buf, size_t i) {
  return internal::LoadElement(dt, buf.data(), i);
}

// A device tensor with a host mirror.
struct DevTensor {
  Tensor t;
  std::vector<char> host;
  DevTensor(int64_t count, DataType dt) : host(static_cast<size_t>(count) * DataTypeSize(dt)) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(host.size(), 1)), cudaSuccess);
    t = Tensor{p, count, dt, MemoryKind::kDevice};
  }
  ~DevTensor() { cudaFree(t.data); }
  DevTensor(const DevTensor&) = delete;
  void Up() { ASSERT_EQ(cudaMemcpy(t.data, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess); }
  void Down() {
    ASSERT_EQ(cudaMemcpy(host.data(), t.data, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  }
};

double Value(int rank, size_t i) {
  return static_cast<double>((rank + 1) * ((i % 3) + 1));
}

std::unique_ptr<Communicator> OneMember() {
  auto s = testing::LocalSettings(1);
  auto c = Communicator::Create(s[0]);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// These two run without a GPU too: the agent finds the real libraries by
// dlopen, and GPU memory without a device fails clearly instead of crashing.
TEST(GpuLibraries, TheAgentLoadsTheRealCudaRuntimeAndNccl) {
  auto api = internal::LoadGpuApi();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_TRUE((*api)->have_nccl) << (*api)->nccl_unavailable;
  if (std::getenv("RM_GPU_OTHER_NCCL")) {  // the machine's own NCCL on purpose (scripts/gpu-check --bundle)
    EXPECT_EQ((*api)->nccl_version / 10000, NCCL_VERSION_CODE / 10000) << "another major version of NCCL";
  } else {
    EXPECT_EQ((*api)->nccl_version, NCCL_VERSION_CODE) << "not the NCCL this build found";
  }
  int n = -1;
  cudaError_t e = (*api)->cuda.GetDeviceCount(&n);
  EXPECT_NE((*api)->cuda.GetErrorString(e), nullptr);
}

TEST(GpuLibraries, DeviceMemoryWithoutADeviceIsAClearError) {
  if (HaveGpu()) GTEST_SKIP() << "there is a GPU: nothing to refuse";
  auto comm = OneMember();
  ASSERT_TRUE(comm);
  std::vector<float> v(4);
  Tensor t{v.data(), 4, DataType::kFloat32, MemoryKind::kDevice};
  Status s = comm->AllReduce({&t, 1}, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("tensors[0]"), std::string::npos) << s.message();
  EXPECT_TRUE(comm->health().ok());
}

TEST(GpuDevice, OneRankNcclEveryDtypeAndOp) {
  REQUIRE_GPU();
  auto comm = OneMember();
  ASSERT_TRUE(comm);
  for (DataType dt : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      for (Implementation impl : {Implementation::kNccl, Implementation::kAuto}) {
        DevTensor d(1001, dt);
        for (size_t i = 0; i < 1001; ++i) Put(dt, d.host, i, Value(0, i));
        d.Up();
        CommunicationOptions o;
        o.implementation = impl;
        Status s = comm->AllReduce({&d.t, 1}, op, o);
        ASSERT_TRUE(s.ok()) << DataTypeName(dt) << " " << ReduceOpName(op) << ": " << s.ToString();
        d.Down();
        for (size_t i = 0; i < 1001; ++i) ASSERT_EQ(Get(dt, d.host, i), Value(0, i)) << i;
      }
    }
  }
}

TEST(GpuDevice, ManyTensorsInManyPacks) {
  REQUIRE_GPU();
  auto comm = OneMember();
  ASSERT_TRUE(comm);
  std::vector<std::unique_ptr<DevTensor>> ds;
  std::vector<Tensor> ts;
  for (int i = 0; i < 500; ++i) {
    DataType dt = kAllTypes[i % 6];
    ds.push_back(std::make_unique<DevTensor>(1 + (i * 37) % 3000, dt));
    for (int64_t j = 0; j < ds.back()->t.count; ++j)
      Put(dt, ds.back()->host, static_cast<size_t>(j), Value(0, j + i));
    ds.back()->Up();
    ts.push_back(ds.back()->t);
  }
  for (int64_t per_pack : {int64_t{0}, int64_t{4096}, int64_t{1} << 20}) {
    CommunicationOptions o;
    o.bytes_per_pack = per_pack;
    ASSERT_TRUE(comm->AllReduce(ts, ReduceOp::kMax, o).ok());
    for (int i = 0; i < 500; ++i) {
      ds[i]->Down();
      for (int64_t j = 0; j < ts[i].count; ++j)
        ASSERT_EQ(Get(ts[i].dtype, ds[i]->host, static_cast<size_t>(j)), Value(0, j + i)) << i << " " << j;
    }
  }
}

void CUDART_CB Sleep300ms(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

TEST(GpuDevice, TheCallersStreamIsWaitedFor) {
  REQUIRE_GPU();
  auto comm = OneMember();
  ASSERT_TRUE(comm);
  for (Implementation impl : {Implementation::kNccl, Implementation::kRing}) {
    DevTensor a(1000, DataType::kFloat32), b(1000, DataType::kFloat32);
    for (size_t i = 0; i < 1000; ++i)
      Put(DataType::kFloat32, a.host, i, 1), Put(DataType::kFloat32, b.host, i, 1);
    a.Up();
    b.Up();
    std::vector<float> later(1000, 7.f);
    cudaStream_t user, reader;
    ASSERT_EQ(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking), cudaSuccess);
    // The caller's stream is busy for 300 ms, then writes 7s.
    ASSERT_EQ(cudaLaunchHostFunc(user, Sleep300ms, nullptr), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(a.t.data, later.data(), 4000, cudaMemcpyHostToDevice, user), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(b.t.data, later.data(), 4000, cudaMemcpyHostToDevice, user), cudaSuccess);
    Tensor ts[2] = {a.t, b.t};
    ts[0].stream = ts[1].stream = user;
    CommunicationOptions o;
    o.implementation = impl;
    ASSERT_TRUE(comm->AllReduce(ts, ReduceOp::kSum, o).ok());
    std::vector<float> got(1000);
    ASSERT_EQ(cudaMemcpyAsync(got.data(), a.t.data, 4000, cudaMemcpyDeviceToHost, reader), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(reader), cudaSuccess);
    EXPECT_EQ(got[0], 7.f) << ImplementationName(impl)
                           << ": the all-reduce read the data before the caller's stream wrote it";
    cudaStreamSynchronize(user);
    cudaStreamDestroy(user);
    cudaStreamDestroy(reader);
  }
}

std::atomic<bool> g_release{false};
void CUDART_CB Hold(void*) {
  while (!g_release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

TEST(GpuDevice, ATimeoutAbortsCleanlyAndReformWorks) {
  REQUIRE_GPU();
  auto comm = OneMember();
  ASSERT_TRUE(comm);
  for (Implementation impl : {Implementation::kNccl, Implementation::kRing}) {
    DevTensor a(1 << 20, DataType::kFloat32), b(1000, DataType::kFloat32);
    Tensor ts[2] = {a.t, b.t};
    ASSERT_TRUE(comm->AllReduce(ts, ReduceOp::kSum).ok());  // NCCL formed
    cudaStream_t user;
    ASSERT_EQ(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking), cudaSuccess);
    g_release = false;
    ASSERT_EQ(cudaLaunchHostFunc(user, Hold, nullptr), cudaSuccess);  // held until released
    ts[0].stream = ts[1].stream = user;
    CommunicationOptions o;
    o.implementation = impl;
    o.timeout_seconds = 1;
    // The caller's stream is released 1.5 s in, after the deadline. The
    // agent queues nothing before the caller's work is done (CUDA cannot take
    // back queued work, and aborting NCCL waits for the device: an older
    // agent's call ended only once the caller's stream drained, seen on an
    // H200), so the call ends at its deadline, having started nothing.
    const auto start = std::chrono::steady_clock::now();
    std::thread releaser([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      g_release = true;
    });
    Status s = comm->AllReduce(ts, ReduceOp::kSum, o);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    releaser.join();
    std::printf("%s: DeadlineExceeded after %.2f s (timeout 1 s, caller's stream released at 1.5 s)\n",
                std::string(ImplementationName(impl)).c_str(), took);
    EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << ImplementationName(impl) << ": " << s.ToString();
    EXPECT_NE(s.message().find("callers' streams did not finish"), std::string::npos) << s.message();
    EXPECT_GE(took, 1.0);
    EXPECT_LT(took, 4.0);
    EXPECT_FALSE(comm->health().ok());
    ASSERT_EQ(cudaStreamSynchronize(user), cudaSuccess);
    cudaStreamDestroy(user);
    ASSERT_TRUE(comm->Reform().ok());
    ts[0].stream = ts[1].stream = nullptr;
    for (size_t i = 0; i < 1000; ++i) Put(DataType::kFloat32, b.host, i, 3);
    b.Up();
    ASSERT_TRUE(comm->AllReduce(ts, ReduceOp::kMean).ok()) << "after Reform";
    b.Down();
    EXPECT_EQ(Get(DataType::kFloat32, b.host, 10), 3.0);
  }
}

// ---------------------------------------------------------------- processes

int ChildMain() {
  const int rank = std::atoi(std::getenv("RM_GPU_CHILD"));
  const int n = std::atoi(std::getenv("RM_GPU_CHILD_N"));
  std::vector<int> ports;  // "p0,p1,p2"
  for (const char* p = std::getenv("RM_GPU_CHILD_PORTS"); p && *p;) {
    ports.push_back(std::atoi(p));
    p = std::strchr(p, ',');
    if (p) ++p;
  }
  if (static_cast<int>(ports.size()) != n) return 2;
  if (!HaveGpu()) return 77;
  CommunicatorSettings s;
  for (int r = 0; r < n; ++r) {
    s.group.members.push_back(
        {r == 0 ? "chief" : "worker", r == 0 ? 0 : r - 1, "127.0.0.1:" + std::to_string(ports[r])});
  }
  s.group.rank = rank;
  s.formation_timeout_seconds = 60;
  auto comm = Communicator::Create(s);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
    return 1;
  }
  int bad = 0;
  for (DataType dt : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMean}) {
      std::vector<std::unique_ptr<DevTensor>> ds;
      std::vector<Tensor> ts;
      for (int k = 0; k < 5; ++k) {
        ds.push_back(std::make_unique<DevTensor>(100000 + 17 * k, dt));
        for (int64_t j = 0; j < ds.back()->t.count; ++j)
          Put(dt, ds.back()->host, static_cast<size_t>(j), Value(rank, j));
        ds.back()->Up();
        ts.push_back(ds.back()->t);
      }
      CommunicationOptions o;
      o.implementation = Implementation::kRing;
      o.bytes_per_pack = 256 * 1024;
      Status st = (*comm)->AllReduce(ts, op, o);
      if (!st.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, st.ToString().c_str());
        return 1;
      }
      for (auto& d : ds) {
        d->Down();
        for (int64_t j = 0; j < d->t.count; ++j) {
          double sum = 0, mx = 0;
          for (int r = 0; r < n; ++r) sum += Value(r, j), mx = std::max(mx, Value(r, j));
          double want = op == ReduceOp::kSum ? sum : op == ReduceOp::kMax ? mx : sum / n;
          if (dt == DataType::kInt64 && op == ReduceOp::kMean) want = std::trunc(sum / n);
          double got = Get(dt, d->host, static_cast<size_t>(j));
          double tol = dt == DataType::kBFloat16 ? std::abs(want) / 64 : 0;
          if (std::abs(got - want) > tol && bad++ < 5) {
            std::fprintf(stderr, "rank %d %s %s: element %lld is %g, want %g\n", rank,
                         std::string(DataTypeName(dt)).c_str(), std::string(ReduceOpName(op)).c_str(),
                         static_cast<long long>(j), got, want);
          }
        }
      }
    }
  }
  return bad ? 3 : 0;
}

TEST(GpuDevice, ThreeProcessesShareOneGpuThroughRingStaging) {
  REQUIRE_GPU();
  const int n = 3;
  const auto ports = internal::FreeLocalPorts(n);
  std::vector<pid_t> pids;
  char self[4096];
  ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(len, 0);
  self[len] = 0;
  std::string port_list;
  for (int p : ports) port_list += (port_list.empty() ? "" : ",") + std::to_string(p);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    env.push_back("RM_GPU_CHILD=" + std::to_string(r));
    env.push_back("RM_GPU_CHILD_N=" + std::to_string(n));
    env.push_back("RM_GPU_CHILD_PORTS=" + port_list);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char* argv[] = {self, nullptr};
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, self, nullptr, nullptr, argv, envp.data()), 0);
    pids.push_back(pid);
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    ASSERT_EQ(::waitpid(pids[r], &status, 0), pids[r]);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << r << " (77: no GPU in the child; 3: wrong result)";
  }
}

}  // namespace
}  // namespace ringmaster

int main(int argc, char** argv) {
  // The agent dlopens the libraries this build linked (the wheels' copies
  // are on no loader path); an explicit setting wins.
  ::setenv(ringmaster::kEnvCudartLibrary, RINGMASTER_TEST_CUDART, 0);
  ::setenv(ringmaster::kEnvNcclLibrary, RINGMASTER_TEST_NCCL, 0);
  if (std::getenv("RM_GPU_CHILD")) return ringmaster::ChildMain();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
