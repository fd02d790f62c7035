// The reduction loops alone: GB/s of ReduceInto (inout[i] = op(inout[i],
// in[i]); bytes = 3 x the buffer: two reads, one write) for the baseline
// x86-64 build and the AVX2 (+ F16C) build of agent/src/collectives/kernels.cc, side by
// side in one run, per dtype and buffer size (L1, L2, last-level cache,
// memory). `rm-bench-kernels [--ms MILLIS_PER_CELL]`; prints a markdown
// table. scripts/bench kernels runs it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/kernels.h"

namespace rmi = ringmaster::internal;
using ringmaster::DataType;
using ringmaster::ReduceOp;

namespace {

// Median GB/s of repeated ReduceInto calls over `bytes`, for about `ms`.
double Measure(rmi::KernelIsa isa, DataType dt, size_t bytes, double ms) {
  const size_t count = bytes / ringmaster::DataTypeSize(dt);
  std::vector<unsigned char> a(bytes), b(bytes);
  // Small values that stay finite under repeated sums in every dtype.
  for (size_t i = 0; i < count; ++i) {
    rmi::StoreElement(dt, a.data(), i, static_cast<double>(i % 7));
    rmi::StoreElement(dt, b.data(), i, 0);
  }
  using Clock = std::chrono::steady_clock;
  // Calls per sample: at least ~200 µs of work so the clock's cost vanishes.
  size_t reps = 1;
  for (;;) {
    auto t0 = Clock::now();
    for (size_t r = 0; r < reps; ++r) rmi::ReduceIntoWith(isa, dt, ReduceOp::kSum, a.data(), b.data(), count);
    if (std::chrono::duration<double>(Clock::now() - t0).count() > 200e-6 || reps > (1u << 20)) break;
    reps *= 2;
  }
  std::vector<double> rates;
  const auto end = Clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (Clock::now() < end || rates.size() < 5) {
    auto t0 = Clock::now();
    for (size_t r = 0; r < reps; ++r) rmi::ReduceIntoWith(isa, dt, ReduceOp::kSum, a.data(), b.data(), count);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    rates.push_back(3.0 * static_cast<double>(bytes) * static_cast<double>(reps) / s / 1e9);
  }
  std::nth_element(rates.begin(), rates.begin() + rates.size() / 2, rates.end());
  return rates[rates.size() / 2];
}

std::string Size(size_t b) {
  return b >= (1u << 20) ? std::to_string(b >> 20) + " MiB" : std::to_string(b >> 10) + " KiB";
}

}  // namespace

int main(int argc, char** argv) {
  double ms = 300;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
      ms = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: rm-bench-kernels [--ms MILLIS_PER_CELL]\n");
      return 2;
    }
  }
  if (!rmi::KernelIsaSupported(rmi::KernelIsa::kAvx2)) {
    std::fprintf(stderr,
                 "rm-bench-kernels: this CPU has no AVX2 + F16C; only the baseline build would run\n");
    return 1;
  }
  std::printf(
      "ReduceInto, SUM, GB/s (3 x the buffer moved per call: two reads, one write); median over %.0f ms per "
      "cell\n\n",
      ms);
  std::printf(
      "| dtype | buffer | baseline (SSE2) | AVX2 (+ F16C) | AVX2 / baseline |\n|---|---|---|---|---|\n");
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64,
                      DataType::kInt32, DataType::kInt64}) {
    for (size_t bytes : {size_t{16} << 10, size_t{256} << 10, size_t{4} << 20, size_t{64} << 20}) {
      // Interleaved, baseline first then AVX2, twice: drift hits both.
      double base = 0, avx = 0;
      for (int round = 0; round < 2; ++round) {
        base = std::max(base, Measure(rmi::KernelIsa::kBaseline, dt, bytes, ms / 2));
        avx = std::max(avx, Measure(rmi::KernelIsa::kAvx2, dt, bytes, ms / 2));
      }
      std::printf("| %s | %s | %.2f | %.2f | %.2f |\n", std::string(ringmaster::DataTypeName(dt)).c_str(),
                  Size(bytes).c_str(), base, avx, avx / base);
    }
  }
  return 0;
}
