#include "transport/handshake.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ringmaster::internal {

namespace {

template <class T>
std::string Bytes(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

// What both proofs cover: the connection's identity and both nonces.
Mac ProofOf(const JobKey& key, std::string_view purpose, const Hello& h, const Nonce& server_nonce) {
  return key.Sign(purpose, {U64(h.incarnation), U64(h.from_rank), U64(h.to_rank), U64(h.channel),
                            View(h.client_nonce), View(server_nonce)});
}

}  // namespace

HandshakeAcceptor::HandshakeAcceptor(const MeshView& view, const Nonce& server_nonce)
    : view_(view), server_nonce_(server_nonce) {}

size_t HandshakeAcceptor::Need() const {
  switch (state_) {
    case State::kHello:
      return sizeof(Hello) - got_;
    case State::kProof:
      return sizeof(Proof) - got_;
    case State::kDone:
      return 0;
  }
  return 0;
}

HandshakeAcceptor::Step HandshakeAcceptor::Feed(std::string_view bytes) {
  if (state_ == State::kDone) return {Kind::kRejected, "", "bytes after the handshake"};
  const size_t n = std::min(bytes.size(), Need());
  std::memcpy(buf_ + got_, bytes.data(), n);
  got_ += n;
  if (Need() > 0) return {};
  got_ = 0;
  return state_ == State::kHello ? OnHello() : OnProof();
}

HandshakeAcceptor::Step HandshakeAcceptor::OnHello() {
  std::memcpy(&hello_, buf_, sizeof hello_);
  const Hello& h = hello_;
  const auto rank = static_cast<uint32_t>(view_.rank), size = static_cast<uint32_t>(view_.size);
  if (h.magic != kHelloMagic) return {Kind::kRejected, "", "not a Ringmaster hello"};
  if (h.version != kProtocolVersion) {
    return {Kind::kRejected, "",
            "a hello of protocol version " + std::to_string(h.version) + " (this agent speaks " +
                std::to_string(kProtocolVersion) + "; every member must run the same Ringmaster release)"};
  }
  if (h.to_rank != rank || h.group_size != size || h.from_rank <= rank || h.from_rank >= size ||
      h.channel >= static_cast<uint32_t>(view_.channels)) {
    return {Kind::kRejected, "", "a hello for another member or group"};
  }
  if (h.incarnation != view_.incarnation) return {Kind::kRejected, "", "a hello for another formation"};
  Challenge c{kChallengeMagic, kChallengeOk, server_nonce_, {}};
  const bool has_key = h.flags & kHelloHasKey;
  if (!view_.key->empty() && !has_key) {
    c.status = kKeyRequired;
    return {Kind::kRejected, Bytes(c), "no job key"};
  }
  if (view_.key->empty() && has_key) {
    c.status = kKeyUnexpected;
    return {Kind::kRejected, Bytes(c), "a job key where this member has none"};
  }
  if (!view_.key->empty()) c.proof = ProofOf(*view_.key, "data-accept", h, server_nonce_);
  state_ = State::kProof;
  return {Kind::kReply, Bytes(c), ""};
}

HandshakeAcceptor::Step HandshakeAcceptor::OnProof() {
  Proof p;
  std::memcpy(&p, buf_, sizeof p);
  if (p.magic != kProofMagic) return {Kind::kRejected, "", "not a Ringmaster proof"};
  if (!view_.key->empty()) {
    if (!MacEquals(ProofOf(*view_.key, "data-connect", hello_, server_nonce_), View(p.proof))) {
      return {Kind::kRejected, "", "a wrong job key"};
    }
  }
  state_ = State::kDone;
  return {Kind::kAccepted, Bytes(Ack{kAckMagic, 0}), ""};
}

Hello MakeHello(const MeshView& view, int to, int channel, const Nonce& client_nonce) {
  Hello h{};
  h.magic = kHelloMagic;
  h.version = kProtocolVersion;
  h.incarnation = view.incarnation;
  h.from_rank = static_cast<uint32_t>(view.rank);
  h.to_rank = static_cast<uint32_t>(to);
  h.channel = static_cast<uint32_t>(channel);
  h.group_size = static_cast<uint32_t>(view.size);
  h.flags = view.key->empty() ? 0 : kHelloHasKey;
  h.client_nonce = client_nonce;
  return h;
}

Status CheckChallenge(const MeshView& view, const Hello& hello, const Challenge& c, const std::string& peer,
                      Proof* proof) {
  if (c.magic != kChallengeMagic)
    return UnavailableError(peer + " answered our data connection with garbage");
  if (c.status == kKeyRequired) {
    return UnauthenticatedError(peer +
                                " requires the job key and this member has none (RINGMASTER_JOB_KEY_FILE)");
  }
  if (c.status == kKeyUnexpected) {
    return UnauthenticatedError(peer +
                                " has no job key but this member has one (RINGMASTER_JOB_KEY_FILE): "
                                "the members were started with different keys");
  }
  if (c.status != kChallengeOk) return UnavailableError(peer + " refused our data connection");
  *proof = Proof{kProofMagic, 0, {}};
  if (view.key->empty()) return OkStatus();
  if (!MacEquals(ProofOf(*view.key, "data-accept", hello, c.server_nonce), View(c.proof))) {
    return UnauthenticatedError(peer +
                                " did not prove the job key on our data connection (a different key, or "
                                "not a member of this job)");
  }
  proof->proof = ProofOf(*view.key, "data-connect", hello, c.server_nonce);
  return OkStatus();
}

std::optional<HandshakeAcceptor::Step> ReadHandshake(int fd, HandshakeAcceptor& hs) {
  char buf[sizeof(Hello)];
  const ssize_t r = ::recv(fd, buf, std::min(sizeof buf, hs.Need()), 0);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    return HandshakeAcceptor::Step{HandshakeAcceptor::Kind::kRejected, "", kClosedDuringHandshake};
  if (r < 0) return std::nullopt;
  auto step = hs.Feed(std::string_view(buf, static_cast<size_t>(r)));
  if (step.kind == HandshakeAcceptor::Kind::kNeedMore) return std::nullopt;
  return step;
}

}  // namespace ringmaster::internal
