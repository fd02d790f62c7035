#include "rmbench/bench_common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace rmbench {

Args ParseArgs(int argc, char** argv) {
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

std::vector<int64_t> Sizes(const Args& a) {
  std::vector<int64_t> out;
  for (int64_t b = a.min_bytes; b <= a.max_bytes; b *= a.factor) out.push_back(b);
  return out;
}

int ItersPerBatch(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((16 << 20) / bytes, 1, 200));
}

Stats Summarise(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front(), us.back()};
}

void Measure(const Args& a, int64_t bytes, const std::function<void(bool pattern)>& reset,
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

}  // namespace rmbench
