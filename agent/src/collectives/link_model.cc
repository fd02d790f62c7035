#include "collectives/link_model.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/kernels.h"

namespace ringmaster::internal {
namespace {

int FloorPow2(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int Log2(int p) {
  int l = 0;
  while ((1 << l) < p) ++l;
  return l;
}

// Tags of the probe: phase 3 is the broadcast's, whose chunk field is
// always 0; the probe uses chunk fields from 0x100 on, so it never meets it.
constexpr uint32_t kProbeTag = (3u << 30) | 0x100u;

}  // namespace

double ModelSeconds(const LinkModel& m, Algorithm algo, size_t bytes, int n) {
  if (n <= 1 || bytes == 0) return 0;
  const double s = static_cast<double>(bytes), a = m.alpha_s, b = m.beta_s_per_byte, g = m.gamma_s_per_byte;
  const int p = FloorPow2(n);
  const int steps = Log2(p);
  // A fold (n not a power of two): the whole vector over one link in (and
  // reduced), and back out.
  const double fold = p == n ? 0 : (a + s * b + s * g) + (a + s * b);
  switch (algo) {
    case Algorithm::kRecursiveDoubling:
      return fold + steps * (a + s * b + s * g);
    case Algorithm::kHalvingDoubling: {
      const double part = static_cast<double>(p - 1) / p * s;
      return fold + 2.0 * steps * a + part * (b + g) + part * b;
    }
    case Algorithm::kRing:
    case Algorithm::kAuto: {
      const double part = static_cast<double>(n - 1) / n * s;
      return 2.0 * (n - 1) * a + 2.0 * part * b + part * g;
    }
  }
  return 0;
}

Algorithm FallbackAlgorithm(size_t bytes, int n) {
  if (n <= 2) return bytes <= kSmallMessageBytes * 4 ? Algorithm::kRecursiveDoubling : Algorithm::kRing;
  if (bytes <= kLatencyBoundBytes) return Algorithm::kRecursiveDoubling;
  if ((n & (n - 1)) != 0) return Algorithm::kRing;  // a fold moves the whole vector twice more
  if (bytes <= kSmallMessageBytes) return Algorithm::kRecursiveDoubling;
  return bytes <= kMediumMessageBytes ? Algorithm::kHalvingDoubling : Algorithm::kRing;
}

Algorithm ChooseByModel(const LinkModel& m, size_t bytes, int n) {
  if (!m.known()) return FallbackAlgorithm(bytes, n);
  if (bytes <= kLatencyBoundBytes) return Algorithm::kRecursiveDoubling;
  const double ring = ModelSeconds(m, Algorithm::kRing, bytes, n);
  Algorithm best = Algorithm::kRing;
  double best_s = ring / kRingPreference;
  for (Algorithm a : {Algorithm::kHalvingDoubling, Algorithm::kRecursiveDoubling}) {
    const double t = ModelSeconds(m, a, bytes, n);
    if (t < best_s) {
      best = a;
      best_s = t;
    }
  }
  return best;
}

Algorithm ChooseAlgorithm(const CommunicationOptions& o, size_t bytes, int n, const LinkModel& link) {
  if (o.algorithm != Algorithm::kAuto) return o.algorithm;
  if (o.implementation == Implementation::kRing || o.implementation == Implementation::kNccl)
    return Algorithm::kRing;
  return ChooseByModel(link, bytes, n);
}

Status ProbeLinks(Transport& t, Deadline deadline, LinkModel* out) {
  *out = LinkModel{};
  const int n = t.size(), rank = t.rank();
  if (n <= 1) return OkStatus();
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  t.Begin(0, deadline);
  uint32_t round = 0;
  // One ring exchange of `bytes`: send right, receive from the left; the
  // slowest link of the ring sets the pace, as in the algorithms.
  auto exchange = [&](const char* send, char* recv, size_t bytes, double* seconds) -> Status {
    const auto start = std::chrono::steady_clock::now();
    const uint32_t tag = kProbeTag | (round++ & 0xffu);
    int rr = t.Irecv(left, tag, recv, bytes);
    int sr = t.Isend(right, tag, send, bytes);
    RM_RETURN_IF_ERROR(t.Wait(rr));
    RM_RETURN_IF_ERROR(t.Wait(sr));
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return OkStatus();
  };
  // Latency: the median of a few 8-byte rounds, after one to warm up.
  char small_out[8] = {}, small_in[8];
  std::vector<double> lat;
  for (int i = 0; i < kProbeLatencyRounds; ++i) {
    double s = 0;
    RM_RETURN_IF_ERROR(exchange(small_out, small_in, sizeof small_out, &s));
    if (i > 0) lat.push_back(s);
  }
  std::nth_element(lat.begin(), lat.begin() + lat.size() / 2, lat.end());
  const double alpha = lat[lat.size() / 2];
  // Bandwidth: the faster of two 512 KiB rounds (the first one may still
  // ramp up TCP's congestion window).
  std::unique_ptr<char[]> bulk_out(new char[kProbeBulkBytes]()), bulk_in(new char[kProbeBulkBytes]);
  double bulk = 0;
  for (int i = 0; i < kProbeBulkRounds; ++i) {
    double s = 0;
    RM_RETURN_IF_ERROR(exchange(bulk_out.get(), bulk_in.get(), kProbeBulkBytes, &s));
    bulk = i == 0 ? s : std::min(bulk, s);
  }
  const double beta = std::max(bulk - alpha, 1e-12) / static_cast<double>(kProbeBulkBytes);
  // The CPU: a float32 sum of the same buffer (no wire involved).
  const auto r0 = std::chrono::steady_clock::now();
  ReduceInto(DataType::kFloat32, ReduceOp::kSum, bulk_in.get(), bulk_out.get(),
             kProbeBulkBytes / sizeof(float));
  const double gamma = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count() /
                       static_cast<double>(kProbeBulkBytes);
  // Agree: every member takes the slowest figures, so all choose alike.
  double model[3] = {alpha, beta, gamma};
  RM_RETURN_IF_ERROR(RecursiveDoublingAllReduce(t, model, 3, DataType::kFloat64, ReduceOp::kMax));
  out->alpha_s = model[0];
  out->beta_s_per_byte = model[1];
  out->gamma_s_per_byte = model[2];
  return OkStatus();
}

}  // namespace ringmaster::internal
