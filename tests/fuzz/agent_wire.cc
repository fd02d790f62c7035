// The agent's data plane, byte by byte: the control connection's frames
// (ControlFrameParser) and the per-connection handshake (HandshakeAcceptor
// on the accepting side, MakeHello/CheckChallenge on the connecting side).
//
// Input: one mode byte, then the bytes of that mode. Modes (byte % 4):
//   0  frames: the rest is a control connection's stream, fed in chunks of
//      1 + (byte >> 2) bytes and never more than Room(); every frame must be
//      well formed and the frames, written back, must be the stream's prefix;
//   1  acceptor: 4 bytes of its view (rank, size, channels, key?), then what
//      a connector sends, Need() bytes at most per Feed. Nothing without the
//      key's proof is accepted into a keyed group;
//   2  round trip: 8 bytes of both views (connector's rank, size, to,
//      channel, incarnation; acceptor's rank, size, channels, and which keys),
//      then an honest connector (MakeHello, CheckChallenge) talks to the
//      acceptor: accepted exactly when the views agree and the keys match;
//   3  connector: 4 bytes of its view, then the acceptor's Challenge
//      (CheckChallenge): a keyed connector never takes a forged one.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "transport/auth.h"
#include "transport/handshake.h"
#include "transport/wire.h"

namespace {

using namespace ringmaster;
using namespace ringmaster::internal;
using fuzz::CheckError;

const JobKey kNoKey;
const JobKey kKey(std::string(32, 'k'));
const JobKey kOtherKey(std::string(32, 'o'));

template <class T>
std::string Bytes(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

Nonce MakeNonce(char c) {
  Nonce n;
  n.fill(c);
  return n;
}

void Frames(uint8_t mode, std::string_view in) {
  const size_t chunk = 1 + (mode >> 2);
  ControlFrameParser parser;
  std::string written;  // the frames parsed, serialized again
  size_t fed = 0;
  ControlFrameParser::Result r;
  while (true) {
    ControlHeader h;
    std::string body;
    while ((r = parser.Next(&h, &body)) == ControlFrameParser::Result::kFrame) {
      FUZZ_CHECK(h.magic == kControlMagic);
      FUZZ_CHECK(h.type >= kHeartbeat && h.type <= kLastControlType);
      FUZZ_CHECK(h.length <= kMaxControlText && body.size() == h.length);
      written += Bytes(h) + body;
    }
    if (r == ControlFrameParser::Result::kError || fed == in.size()) break;
    // Waiting for more with no room to take it would stall the connection:
    // the bound always leaves room for one whole frame.
    const size_t room = parser.Room();
    FUZZ_CHECK(room > 0 && room <= sizeof(ControlHeader) + kMaxControlText);
    const size_t n = std::min<size_t>({chunk, room, in.size() - fed});
    parser.Feed(in.data() + fed, n);
    fed += n;
  }
  FUZZ_CHECK(written.size() <= fed);
  FUZZ_CHECK(in.substr(0, written.size()) == written);
  if (r == ControlFrameParser::Result::kError) {
    // Once broken, nothing more: no room, no frames.
    FUZZ_CHECK(parser.Room() == 0);
    ControlHeader h;
    std::string body;
    FUZZ_CHECK(parser.Next(&h, &body) == ControlFrameParser::Result::kError);
  }
}

// What the acceptor said, checked for its shape.
void CheckStep(const HandshakeAcceptor::Step& step) {
  using Kind = HandshakeAcceptor::Kind;
  switch (step.kind) {
    case Kind::kNeedMore:
      FUZZ_CHECK(step.reply.empty());
      break;
    case Kind::kReply:
      FUZZ_CHECK(step.reply.size() == sizeof(Challenge));
      break;
    case Kind::kAccepted:
      FUZZ_CHECK(step.reply == Bytes(Ack{kAckMagic, 0}));
      break;
    case Kind::kRejected:
      FUZZ_CHECK(!step.why.empty());
      FUZZ_CHECK(step.reply.empty() || step.reply.size() == sizeof(Challenge));
      break;
  }
  if (step.reply.size() == sizeof(Challenge)) {
    Challenge c;
    std::memcpy(&c, step.reply.data(), sizeof c);
    FUZZ_CHECK(c.magic == kChallengeMagic);
    FUZZ_CHECK((step.kind == Kind::kReply) == (c.status == kChallengeOk));
  }
}

void Acceptor(std::string_view in) {
  if (in.size() < 4) return;
  MeshView view;
  view.rank = static_cast<uint8_t>(in[0]) % 4;
  view.size = view.rank + 1 + static_cast<uint8_t>(in[1]) % 4;
  view.channels = 1 + static_cast<uint8_t>(in[2]) % 4;
  view.key = (in[3] & 1) ? &kKey : &kNoKey;
  view.incarnation = 7;
  in.remove_prefix(4);
  HandshakeAcceptor acceptor(view, MakeNonce('s'));
  size_t pos = 0;
  while (acceptor.Need() > 0 && pos < in.size()) {
    const size_t need = acceptor.Need();
    FUZZ_CHECK(need <= sizeof(Hello));
    // Half of what is needed, then the rest: a message split across reads.
    const size_t n = std::min(in.size() - pos, need > 1 && (pos & 1) ? need / 2 : need);
    auto step = acceptor.Feed(in.substr(pos, n));
    pos += n;
    CheckStep(step);
    if (step.kind == HandshakeAcceptor::Kind::kAccepted) {
      // Into a keyed group only with the key's proof, which these bytes cannot forge.
      FUZZ_CHECK(view.key->empty());
      FUZZ_CHECK(acceptor.Need() == 0);
      FUZZ_CHECK(acceptor.from() > view.rank && acceptor.from() < view.size);
      FUZZ_CHECK(acceptor.channel() < view.channels);
      auto after = acceptor.Feed("x");
      FUZZ_CHECK(after.kind == HandshakeAcceptor::Kind::kRejected);
      break;
    }
    if (step.kind == HandshakeAcceptor::Kind::kRejected) break;
  }
}

void RoundTrip(std::string_view in) {
  if (in.size() < 8) return;
  auto b = [&](int i) { return static_cast<uint8_t>(in[i]); };
  const JobKey* keys[] = {&kNoKey, &kKey, &kOtherKey};
  MeshView conn, acc;
  conn.rank = b(0) % 6;
  conn.size = 1 + b(1) % 6;
  const int to = b(2) % 6, channel = b(3) % 4;
  conn.incarnation = 7 + b(4) % 2;
  acc.rank = b(5) % 6;
  acc.size = 1 + b(6) % 6;
  acc.channels = 1 + b(7) % 4;
  acc.incarnation = 7;
  conn.key = keys[(b(7) >> 2) % 3];
  acc.key = keys[(b(7) >> 4) % 3];

  const Hello hello = MakeHello(conn, to, channel, MakeNonce('c'));
  HandshakeAcceptor acceptor(acc, MakeNonce('s'));
  FUZZ_CHECK(acceptor.Need() == sizeof(Hello));
  auto step = acceptor.Feed(Bytes(hello));
  CheckStep(step);
  const bool agree = to == acc.rank && conn.size == acc.size && conn.rank > acc.rank &&
                     conn.rank < acc.size && channel < acc.channels && conn.incarnation == acc.incarnation;
  if (!agree) {
    FUZZ_CHECK(step.kind == HandshakeAcceptor::Kind::kRejected);
    return;
  }
  // The views agree: only the key may be refused, and then with a Challenge saying so.
  FUZZ_CHECK(step.reply.size() == sizeof(Challenge));
  Challenge c;
  std::memcpy(&c, step.reply.data(), sizeof c);
  Proof proof{};
  Status st = CheckChallenge(conn, hello, c, "/job:worker/task:0", &proof);
  const bool same_key = conn.key == acc.key;
  if (conn.key->empty() != acc.key->empty()) {
    FUZZ_CHECK(step.kind == HandshakeAcceptor::Kind::kRejected);
    FUZZ_CHECK(st.code() == StatusCode::kUnauthenticated);
    return;
  }
  FUZZ_CHECK(step.kind == HandshakeAcceptor::Kind::kReply);
  if (!same_key) {
    // Two different keys: the connector sees the acceptor cannot prove its key.
    FUZZ_CHECK(st.code() == StatusCode::kUnauthenticated);
    CheckError(st);
    // Nor does the acceptor take a Proof without the key's MAC.
    auto last = acceptor.Feed(Bytes(Proof{kProofMagic, 0, {}}));
    FUZZ_CHECK(last.kind == HandshakeAcceptor::Kind::kRejected);
    return;
  }
  FUZZ_CHECK(st.ok());
  auto last = acceptor.Feed(Bytes(proof));
  CheckStep(last);
  FUZZ_CHECK(last.kind == HandshakeAcceptor::Kind::kAccepted);
  FUZZ_CHECK(acceptor.from() == conn.rank && acceptor.channel() == channel);
}

void Connector(std::string_view in) {
  if (in.size() < 4 + sizeof(Challenge)) return;
  MeshView view;
  view.size = 2 + static_cast<uint8_t>(in[0]) % 4;
  view.rank = 1 + static_cast<uint8_t>(in[1]) % (view.size - 1);
  view.incarnation = static_cast<uint8_t>(in[2]);
  view.key = (in[3] & 1) ? &kKey : &kNoKey;
  const Hello hello = MakeHello(view, 0, 0, MakeNonce('c'));
  Challenge c;
  std::memcpy(&c, in.data() + 4, sizeof c);
  Proof proof{};
  Status st = CheckChallenge(view, hello, c, "/job:chief/task:0", &proof);
  if (!st.ok()) {
    CheckError(st);
    FUZZ_CHECK(st.message().find("/job:chief/task:0") != std::string::npos);
    return;
  }
  FUZZ_CHECK(c.magic == kChallengeMagic && c.status == kChallengeOk);
  FUZZ_CHECK(proof.magic == kProofMagic);
  // A keyed connector only answers an acceptor that proved the key, which
  // these bytes cannot do.
  FUZZ_CHECK(view.key->empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      Frames(data[0], in);
      break;
    case 1:
      Acceptor(in);
      break;
    case 2:
      RoundTrip(in);
      break;
    case 3:
      Connector(in);
      break;
  }
  return 0;
}
