// The smallest training-side use of the agent: form the group from TF_CONFIG
// and RINGMASTER_*, average a gradient, check it.
#include <cstdio>
#include <vector>

#include "ringmaster/communicator.h"

int main() {
  auto comm = ringmaster::Communicator::FromEnvironment();
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = (*comm)->rank(), n = (*comm)->size();
  std::vector<float> grad(1000, static_cast<float>(rank + 1));
  ringmaster::Tensor t{grad.data(), static_cast<int64_t>(grad.size()), ringmaster::DataType::kFloat32};
  ringmaster::Status s = (*comm)->AllReduce({&t, 1}, ringmaster::ReduceOp::kMean);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  const float want = static_cast<float>(n * (n + 1) / 2) / static_cast<float>(n);
  for (float g : grad) {
    if (g != want) {
      std::fprintf(stderr, "wrong mean: %f != %f\n", g, want);
      return 1;
    }
  }
  std::printf("rank %d of %d: mean all-reduce ok (%g)\n", rank, n, want);
  return 0;
}
