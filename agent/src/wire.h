// The agent's own wire formats besides gRPC: the data-plane handshake
// (Hello/Ack, one per connection at formation) and the frames of the
// control connection (heartbeats, aborts, goodbyes, and the progress
// exchange of a diagnosis). Fixed-size headers; nothing a peer sends decides
// how much we allocate beyond kMaxControlText.
#pragma once

#include <cstdint>

namespace ringmaster::internal {

inline constexpr uint32_t kHelloMagic = 0x31484d52;    // "RMH1"
inline constexpr uint32_t kAckMagic = 0x31414d52;      // "RMA1"
inline constexpr uint32_t kControlMagic = 0x31434d52;  // "RMC1"
inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr uint32_t kMaxControlText = 4096;

struct Hello {
  uint32_t magic, version;
  uint64_t incarnation;
  uint32_t from_rank, to_rank, channel, group_size;
};
static_assert(sizeof(Hello) == 32);

enum ControlType : uint32_t {
  kHeartbeat = 1,
  kAbortFrame = 2,      // code: a StatusCode; body: the cause's message
  kGoodbye = 3,         // an orderly exit
  kProgressQuery = 4,   // body: ProgressQueryWire
  kProgressReport = 5,  // body: ProgressReportWire
  kLastControlType = 5,
};
struct ControlHeader {
  uint32_t magic, type, code, length;
};
static_assert(sizeof(ControlHeader) == 16);

struct ProgressQueryWire {
  uint64_t seq;
};
struct ProgressReportWire {
  uint64_t seq, last_finished, last_started, bytes;
  int32_t pack, packs;
  uint8_t progress, kind, dtype, reserved;
  uint32_t reserved2;
  double timeout_s;
};
static_assert(sizeof(ProgressReportWire) == 56);

}  // namespace ringmaster::internal
