// Memory copy bandwidth of this machine, one thread: the limit a reduction
// that reads two buffers and writes one cannot beat. Prints one JSON line.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  const size_t bytes = 256u << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::memcpy(dst.data(), src.data(), bytes);  // fault the pages in
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    auto t1 = std::chrono::steady_clock::now();
    double gbps = static_cast<double>(bytes) / std::chrono::duration<double>(t1 - t0).count() / 1e9;
    best = std::max(best, gbps);
    src[static_cast<size_t>(i)] = dst[bytes - 1 - static_cast<size_t>(i)];  // keep the copies observable
  }
  std::printf("{\"limit\":\"memcpy\",\"GBps\":%.3f}\n", best);
  return 0;
}
