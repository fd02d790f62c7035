// rm-bench-gpu's pure parts (bench_check.h): inputs, reference, byte check,
// ratios, table and CSV.
#include "bench_check.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "rmbench/bench_common.h"

namespace rmgpubench {

namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string Hex(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

std::string Number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::vector<float> RandomValues(size_t count, uint64_t seed) {
  std::vector<float> out(count);
  uint64_t state = seed;
  for (auto& v : out) {
    const int64_t m = static_cast<int64_t>(SplitMix64(state) >> 44) - (int64_t{1} << 19);  // [-2^19, 2^19)
    v = static_cast<float>(m) / 4096.0f;
  }
  return out;
}

std::vector<float> ReferenceSum(std::span<const std::vector<float>> members) {
  if (members.empty()) return {};
  std::vector<float> out(members[0].size());
  for (size_t i = 0; i < out.size(); ++i) {
    double acc = 0;  // exact: every partial sum of these values fits a double (and a float)
    for (const auto& m : members) acc += m.at(i);
    out[i] = static_cast<float>(acc);
  }
  return out;
}

std::string NameTensorByte(size_t offset, size_t tensor_bytes, size_t stride) {
  if (stride == 0 || tensor_bytes == 0) return "byte " + std::to_string(offset);
  const size_t t = offset / stride, in = offset % stride;
  if (in < tensor_bytes) return "tensors[" + std::to_string(t) + "] byte " + std::to_string(in);
  return "the gap after tensors[" + std::to_string(t) + "] (its byte " + std::to_string(in - tensor_bytes) +
         ")";
}

std::string CompareBytes(std::span<const unsigned char> got, std::span<const unsigned char> want,
                         const std::function<std::string(size_t)>& name) {
  if (got.size() != want.size())
    return "got " + std::to_string(got.size()) + " bytes, want " + std::to_string(want.size());
  size_t first = got.size(), differ = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      if (differ++ == 0) first = i;
    }
  }
  if (differ == 0) return "";
  const std::string where = name ? name(first) : "byte " + std::to_string(first);
  return std::to_string(differ) + " of " + std::to_string(got.size()) + " bytes differ; first: " + where +
         " is " + Hex(got[first]) + ", want " + Hex(want[first]);
}

double MedianSeconds(const std::vector<double>& seconds) {
  if (seconds.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> us;
  us.reserve(seconds.size());
  for (double s : seconds) us.push_back(s * 1e6);
  return rmbench::Summarise(std::move(us)).median_us / 1e6;
}

double SpeedRatio(double ringmaster, double bound, const std::string& unit) {
  if (!(ringmaster > 0) || !(bound > 0) || !std::isfinite(ringmaster) || !std::isfinite(bound))
    return std::numeric_limits<double>::quiet_NaN();
  return unit == kMicros ? bound / ringmaster : ringmaster / bound;
}

std::string CsvHeader() {
  return "kind,case,bytes,ringmaster,bound,unit,ratio,tensors,members,bound_what,check";
}

std::string CsvLine(const Row& r) {
  return CsvField(r.kind) + "," + CsvField(r.name) + "," + std::to_string(r.bytes) + "," +
         Number(r.ringmaster) + "," + Number(r.bound) + "," + CsvField(r.unit) + "," + Number(r.ratio) + "," +
         std::to_string(r.tensors) + "," + std::to_string(r.members) + "," + CsvField(r.bound_what) + "," +
         CsvField(r.check);
}

std::string SizeText(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char buf[32];
  if (v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string TableHeader() {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-36s %12s %12s %-5s %7s  %-38s %s", "case", "ringmaster", "bound", "unit",
                "ratio", "bound (same run)", "check");
  return buf;
}

std::string TableLine(const Row& r) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, "%-36s %12.4g %12.4g %-5s %7.3g  %-38s %s", r.name.c_str(), r.ringmaster,
                r.bound, r.unit.c_str(), r.ratio, r.bound_what.c_str(), r.check.c_str());
  return buf;
}

int ExitCode(const std::vector<Row>& rows) {
  for (const auto& r : rows)
    if (r.check != "ok") return 1;
  return 0;
}

}  // namespace rmgpubench
