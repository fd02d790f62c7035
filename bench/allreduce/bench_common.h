// Shared by the peer benchmark programs so every peer is measured the same
// way: same sizes, same batching, same statistics, same correctness check,
// one JSON line per size on rank 0.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
inline Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--rank")
      a.rank = std::atoi(v.c_str());
    else if (k == "--size")
      a.size = std::atoi(v.c_str());
    else if (k == "--min")
      a.min_bytes = std::atoll(v.c_str());
    else if (k == "--max")
      a.max_bytes = std::atoll(v.c_str());
    else if (k == "--factor")
      a.factor = std::atoi(v.c_str());
    else if (k == "--batches")
      a.batches = std::atoi(v.c_str());
    else if (k == "--algo")
      a.algo = v;
    else if (k == "--store")
      a.store = v;
    else if (k == "--peer")
      a.peer = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (a.factor < 2 || a.min_bytes < 4 || a.batches < 1) {
    std::fprintf(stderr, "bad options\n");
    std::exit(2);
  }
  return a;
}

inline std::vector<int64_t> Sizes(const Args& a) {
  std::vector<int64_t> out;
  for (int64_t b = a.min_bytes; b <= a.max_bytes; b *= a.factor) out.push_back(b);
  return out;
}

// Back-to-back iterations per timed batch: enough to see small messages
// above the clock's noise, one for the largest.
inline int ItersPerBatch(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((16 << 20) / bytes, 1, 200));
}

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

inline Stats Summarise(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front(), us.back()};
}

// Runs the measurement for one size: `reset(pattern)` fills the buffer
// (zeros for timing, so in-place sums never overflow; the pattern for the
// check), `run()` is one all-reduce, `barrier()` lines the ranks up.
inline void Measure(const Args& a, int64_t bytes, const std::function<void(bool pattern)>& reset,
                    const std::function<void()>& run, const std::function<void()>& barrier,
                    const std::function<bool()>& check) {
  const int iters = ItersPerBatch(bytes);
  reset(false);
  run();  // warm-up: connections, buffers, caches
  run();
  std::vector<double> per_iter_us;
  for (int b = 0; b < a.batches; ++b) {
    reset(false);
    barrier();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) run();
    auto t1 = std::chrono::steady_clock::now();
    per_iter_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
  }
  reset(true);
  barrier();
  run();
  bool ok = check();
  Stats s = Summarise(per_iter_us);
  if (a.rank == 0) {
    std::printf(
        "{\"peer\":\"%s\",\"algo\":\"%s\",\"n\":%d,\"bytes\":%lld,\"median_us\":%.3f,\"min_us\":%.3f,"
        "\"max_us\":%.3f,\"iters\":%d,\"batches\":%d,\"correct\":%s}\n",
        a.peer.c_str(), a.algo.c_str(), a.size, static_cast<long long>(bytes), s.median_us, s.min_us,
        s.max_us, iters, a.batches, ok ? "true" : "false");
    std::fflush(stdout);
  }
  if (!ok)
    std::fprintf(stderr, "%s/%s rank %d: WRONG RESULT at %lld bytes\n", a.peer.c_str(), a.algo.c_str(),
                 a.rank, static_cast<long long>(bytes));
}

template <typename T>
bool CheckAll(const T* data, int64_t count, int size) {
  for (int64_t i = 0; i < count; ++i) {
    if (data[i] != Expected(size, i)) return false;
  }
  return true;
}

}  // namespace rmbench
