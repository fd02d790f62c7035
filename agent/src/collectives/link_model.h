// What a formation learns of its links, and AUTO's choice of algorithm from
// it. Byte thresholds tuned on loopback are wrong on real links (a 1 Gbit/s
// link makes the bytes dominate from a few KiB on, where 127.0.0.1 stays
// latency-bound up to hundreds of KiB; docs/benchmarks/network.md,
// "All-reduce across emulated hosts"), so every formation measures its links once
// (ProbeLinks) and AUTO picks the algorithm with the least modelled time.
// All members agree on one model (the slowest link's figures), so they all
// pick the same algorithm for the same call.
#pragma once

#include <cstddef>

#include "ringmaster/comm_options.h"
#include "ringmaster/communicator.h"
#include "transport/transport.h"

namespace ringmaster::internal {

// The alpha-beta(-gamma) model: a step that sends `b` bytes over a link and
// reduces `r` bytes costs alpha + b * beta + r * gamma.
struct LinkModel {
  double alpha_s = 0;           // one step's latency (a round of the ring exchange)
  double beta_s_per_byte = 0;   // the link: seconds per byte on the wire
  double gamma_s_per_byte = 0;  // the CPU: seconds per byte reduced (float32 sum)
  bool known() const { return alpha_s > 0 && beta_s_per_byte > 0; }
};

// At or below this size AUTO always takes recursive doubling: the fewest
// rounds, and on every link measured (loopback, 1 Gbit/s veths) the fastest.
inline constexpr size_t kLatencyBoundBytes = 4 * 1024;
// A challenger must beat the ring's modelled time by this factor: the ring
// pipelines reduction with transfer, which the model does not credit it for.
inline constexpr double kRingPreference = 1.05;

// The modelled time of one all-reduce of `bytes` over `n` members.
double ModelSeconds(const LinkModel& m, Algorithm algo, size_t bytes, int n);

// AUTO's choice: recursive doubling up to kLatencyBoundBytes, then the least
// modelled time (ties to the ring). Without a model (a single member, or a
// caller that has none) the byte thresholds of FallbackAlgorithm.
Algorithm ChooseByModel(const LinkModel& m, size_t bytes, int n);
// The options' choice: a forced algorithm if set, the ring for the RING and
// NCCL hints, else ChooseByModel.
Algorithm ChooseAlgorithm(const CommunicationOptions& o, size_t bytes, int n, const LinkModel& link);
// Byte thresholds that are safe on links and loopback alike: never a fold
// (halving-doubling or recursive doubling past small sizes) when n is not a
// power of two.
Algorithm FallbackAlgorithm(size_t bytes, int n);

// The probe's rounds (the first latency round warms up). A hand-written peer
// (a test's) answers each of the probe's messages, and then the agreeing
// all-reduce's, with one of its own of the same tag and size.
inline constexpr int kProbeLatencyRounds = 10;
inline constexpr int kProbeBulkRounds = 2;
inline constexpr size_t kProbeBulkBytes = 512 << 10;

// Measures the links of transport `t` (every member calls it, in the same
// collective slot, before any collective): a few rounds of an 8-byte ring
// exchange (alpha), of a 512 KiB one (beta) and a local reduction (gamma), then
// a max-all-reduce of the three so every member holds the same model. Fails
// with the transport's error (a lost peer, `deadline`).
Status ProbeLinks(Transport& t, Deadline deadline, LinkModel* out);

}  // namespace ringmaster::internal
