// rm-bench-gpu's pure parts: the inputs, the host reference, the byte check,
// the ratios, the table and the CSV (docs/benchmarks/gpu.md). No CUDA, no
// agent: tests/gpu/gpu_bench_test.cc checks them on any machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace rmgpubench {

// `count` float32 values m / 4096, m uniform in [-2^19, 2^19), from `seed`:
// fractions, signs and zeros, yet any sum of up to 16 of them is exact in
// float32 whatever the order, so the check can compare bytes.
std::vector<float> RandomValues(size_t count, uint64_t seed);

// The element-wise sum of every member's input (all the same length),
// computed on the host: the all-reduce's result for SUM.
std::vector<float> ReferenceSum(std::span<const std::vector<float>> members);

// Names byte `offset` of a buffer holding tensors of `tensor_bytes` every
// `stride` bytes: "tensors[3] byte 57", or "the gap after tensors[3] (its
// byte 4)" for a byte the all-reduce must not touch.
std::string NameTensorByte(size_t offset, size_t tensor_bytes, size_t stride);

// "" when `got` and `want` are the same bytes; else how many bytes differ
// and the first one, named by `name` ("byte 12" when not given), with its
// value and the wanted one. A size difference is a mismatch too.
std::string CompareBytes(std::span<const unsigned char> got, std::span<const unsigned char> want,
                         const std::function<std::string(size_t)>& name = {});
template <typename T>
std::span<const unsigned char> Bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const unsigned char*>(v.data()), v.size() * sizeof(T)};
}

// The median of timings in seconds, through bench/common's statistics.
double MedianSeconds(const std::vector<double>& seconds);

// Units of a figure: a throughput (higher is better) or a time.
inline constexpr char kGBps[] = "GB/s";
inline constexpr char kMicros[] = "us";
// Ringmaster's speed as a fraction of the bound's: ringmaster / bound for a
// throughput, bound / ringmaster for a time. 1 = as fast as the bound;
// 0.5 = half as fast (twice the time). NaN when either is not a positive
// number.
double SpeedRatio(double ringmaster, double bound, const std::string& unit);

// One figure of the run beside its bound.
struct Row {
  std::string kind;  // "pack", "latency", "staging"
  std::string name;  // "pack 16384 x 4 KiB (64 MiB)"
  size_t bytes = 0;  // per tensor (pack) or per member (latency, staging)
  int64_t tensors = 1;
  int members = 1;
  double ringmaster = 0, bound = 0;  // in `unit`
  std::string unit;
  double ratio = 0;          // SpeedRatio
  std::string bound_what;    // "one 64 MiB device-to-device copy"
  std::string check = "ok";  // "ok", or what was wrong (a wrong byte, an error)
};

// Columns: kind,case,bytes,ringmaster,bound,unit,ratio,tensors,members,bound_what,check.
std::string CsvHeader();
std::string CsvLine(const Row& r);  // fields with a comma or quote are quoted
// "1.5 KiB", "64 MiB", "4 B"
std::string SizeText(size_t bytes);

// The printed table: a header and one line per row.
std::string TableHeader();
std::string TableLine(const Row& r);

// 0 when every row's check is "ok", else 1.
int ExitCode(const std::vector<Row>& rows);

}  // namespace rmgpubench
