// MPI_Allreduce (float, MPI_SUM) under mpirun: Open MPI picks its own
// algorithm; the transport (TCP or shared memory) is chosen on mpirun's
// command line by bench/allreduce/run.py.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "rmbench/bench_common.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto a = rmbench::ParseArgs(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &a.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &a.size);
  a.peer = "mpi";
  for (int64_t bytes : rmbench::Sizes(a)) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    std::vector<float> data(static_cast<size_t>(count));
    rmbench::Measure(
        a, bytes,
        [&](bool pattern) {
          for (int64_t i = 0; i < count; ++i) data[i] = pattern ? rmbench::Pattern(a.rank, i) : 0.f;
        },
        [&] {
          MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        },
        [&] { MPI_Barrier(MPI_COMM_WORLD); }, [&] { return rmbench::CheckAll(data.data(), count, a.size); });
  }
  MPI_Finalize();
  return 0;
}
