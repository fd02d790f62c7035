// Shared by the benchmark programs (the peers' and `ringmaster bench`) so
// every peer is measured the same way: same sizes, same batching, same
// statistics, same correctness check, one JSON line per size on rank 0.
// Library ringmaster_bench_common (common/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rmbench {

struct Args {
  int rank = 0, size = 1;
  int64_t min_bytes = 4, max_bytes = 256 << 20;
  int factor = 4;   // sizes min, min*factor, ... up to max
  int batches = 5;  // timed batches per size; median and spread across them
  std::string algo, store, peer;
};

// --rank R --size N --min B --max B --factor F --batches K --algo A --store DIR --peer NAME
// Exits with 2 on an unknown option or bad values.
Args ParseArgs(int argc, char** argv);

std::vector<int64_t> Sizes(const Args& a);

// Back-to-back iterations per timed batch: enough to see small messages
// above the clock's noise, one for the largest.
int ItersPerBatch(int64_t bytes);

// Values whose float sum over any group size up to 64 is exact: the check
// compares bit for bit.
inline float Pattern(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * (i % 13 + 1));
}
inline float Expected(int size, int64_t i) {
  return static_cast<float>(size * (size + 1) / 2 * (i % 13 + 1));
}

struct Stats {
  double median_us, min_us, max_us;
};

Stats Summarise(std::vector<double> us);

// Runs the measurement for one size: `reset(pattern)` fills the buffer
// (zeros for timing, so in-place sums never overflow; the pattern for the
// check), `run()` is one all-reduce, `barrier()` lines the ranks up.
void Measure(const Args& a, int64_t bytes, const std::function<void(bool pattern)>& reset,
             const std::function<void()>& run, const std::function<void()>& barrier,
             const std::function<bool()>& check);

template <typename T>
bool CheckAll(const T* data, int64_t count, int size) {
  for (int64_t i = 0; i < count; ++i) {
    if (data[i] != Expected(size, i)) return false;
  }
  return true;
}

}  // namespace rmbench
