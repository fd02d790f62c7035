// The CUDA runtime and NCCL as the NCCL backend uses them: built and linked
// everywhere; the device parts run only where a GPU is present.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdlib>
#include <vector>

namespace {

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(Nccl, LibraryMatchesHeader) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  if (std::getenv("RM_GPU_OTHER_NCCL")) {  // the machine's own NCCL on purpose (scripts/gpu-check --bundle)
    EXPECT_EQ(version / 10000, NCCL_VERSION_CODE / 10000) << "another major version of NCCL";
  } else {
    EXPECT_EQ(version, NCCL_VERSION_CODE) << "nccl.h and libnccl come from different releases";
  }
}

TEST(CudaRuntime, AnswersWithOrWithoutADriver) {
  int count = -1;
  cudaError_t err = cudaGetDeviceCount(&count);
  // Without a driver the runtime must say so, not crash.
  if (err != cudaSuccess) {
    EXPECT_NE(cudaGetErrorString(err), nullptr);
  } else {
    EXPECT_GE(count, 0);
  }
}

TEST(Nccl, OneRankAllReduceOnTheDevice) {
  if (!HaveGpu()) GTEST_SKIP() << "skipped: no GPU";
  ncclComm_t comm;
  int dev = 0;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, &dev), ncclSuccess);
  const size_t n = 1 << 20;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 13);
  float* buf = nullptr;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&buf, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(buf, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(ncclAllReduce(buf, buf, n, ncclFloat, ncclAvg, comm, stream), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> out(n);
  ASSERT_EQ(cudaMemcpy(out.data(), buf, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out, host);  // one rank: the average is the input
  cudaFree(buf);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
}

}  // namespace
