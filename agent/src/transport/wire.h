// The agent's own wire formats besides gRPC: the data-plane handshake
// (Hello/Ack, one per connection at formation) and the frames of the
// control connection (heartbeats, aborts, goodbyes, and the progress
// exchange of a diagnosis). Fixed-size headers; nothing a peer sends decides
// how much we allocate beyond kMaxControlText.
#pragma once

#include <cstdint>
#include <string>

#include "transport/auth.h"

namespace ringmaster::internal {

inline constexpr uint32_t kHelloMagic = 0x32484d52;      // "RMH2"
inline constexpr uint32_t kChallengeMagic = 0x324e4d52;  // "RMN2"
inline constexpr uint32_t kProofMagic = 0x32504d52;      // "RMP2"
inline constexpr uint32_t kAckMagic = 0x32414d52;        // "RMA2"
inline constexpr uint32_t kControlMagic = 0x31434d52;    // "RMC1"
// 3: formation ends with the link probe on the first data stream
// (link_model.h), which a version-2 member would never answer.
// 4: control connections between the overlay's fingers only, and the
// diagnosis's frames flooded with their origin (a version-3 member would
// wait for control connections that never come, and misread the frames).
inline constexpr uint32_t kProtocolVersion = 4;
inline constexpr uint32_t kMaxControlText = 4096;

// The data-plane handshake, once per connection at formation (handshake.h):
//   connector -> Hello (who it is, its nonce)
//   acceptor  -> Challenge (its nonce, its proof of the key)
//   connector -> Proof (its proof of the key)
//   acceptor  -> Ack
inline constexpr uint32_t kHelloHasKey = 1;  // Hello::flags: the connector holds a job key
struct Hello {
  uint32_t magic, version;
  uint64_t incarnation;
  uint32_t from_rank, to_rank, channel, group_size;
  uint32_t flags, reserved;
  Nonce client_nonce;
};
static_assert(sizeof(Hello) == 56);

enum ChallengeStatus : uint32_t { kChallengeOk = 0, kKeyRequired = 1, kKeyUnexpected = 2 };
struct Challenge {
  uint32_t magic, status;
  Nonce server_nonce;
  Mac proof;
};
static_assert(sizeof(Challenge) == 56);

struct Proof {
  uint32_t magic, reserved;
  Mac proof;
};
static_assert(sizeof(Proof) == 40);

struct Ack {
  uint32_t magic, code;
};
static_assert(sizeof(Ack) == 8);

enum ControlType : uint32_t {
  kHeartbeat = 1,
  kAbortFrame = 2,      // code: a StatusCode; body: the cause's message
  kGoodbye = 3,         // an orderly exit
  kProgressQuery = 4,   // body: ProgressQueryWire
  kProgressReport = 5,  // body: ProgressReportWire
  kReformFrame = 6,     // Reform() on the sender: stop, it is not a failure; body: its words
  kLastControlType = 6,
};
struct ControlHeader {
  uint32_t magic, type, code, length;
};
static_assert(sizeof(ControlHeader) == 16);

// Splits a control connection's byte stream into frames. Bounded: it holds
// at most one frame (header + kMaxControlText); a bad header is an error,
// after which it yields nothing more.
class ControlFrameParser {
 public:
  enum class Result { kNeedMore, kFrame, kError };
  void Feed(const char* data, size_t n) { buf_.append(data, n); }
  // The next whole frame, if any.
  Result Next(ControlHeader* header, std::string* body);
  // How many bytes Feed may take now without exceeding the bound.
  size_t Room() const;

 private:
  std::string buf_;
  bool broken_ = false;
};

// The diagnosis travels as a flood over the control overlay (group/overlay.h):
// `origin` asks, numbering its floods `id` = 1, 2, ...; every member passes
// the query on once and answers, the answer (to `origin`, from `from`) going
// back the way the query came, relayed hop by hop.
struct ProgressQueryWire {
  uint64_t seq;
  uint32_t id;
  int32_t origin;
};
static_assert(sizeof(ProgressQueryWire) == 16);
struct ProgressReportWire {
  uint64_t seq, last_finished, last_started, bytes;
  int32_t pack, packs;
  uint8_t progress, kind, dtype, reserved;
  uint32_t id;  // the query's
  double timeout_s;
  int32_t from, to;
};
static_assert(sizeof(ProgressReportWire) == 64);

}  // namespace ringmaster::internal
