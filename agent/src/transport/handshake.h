// The data-plane handshake of one connection (wire.h), both sides as pure
// functions of the bytes: the acceptor's state machine takes what the
// connector sent and says what to answer, and whether to keep or drop the
// connection; the connector's side builds its messages and checks the
// acceptor's. Each side proves the job key over both nonces, the
// incarnation, both ranks and the channel, so a connection is neither
// replayable nor movable to another slot. Without a key on both sides the
// same messages flow with empty proofs (a group without a key).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ringmaster/status.h"
#include "transport/auth.h"
#include "transport/wire.h"

namespace ringmaster::internal {

// What a member knows of the mesh it is forming.
struct MeshView {
  const JobKey* key = nullptr;  // never null; empty: no key
  uint64_t incarnation = 0;
  int rank = 0, size = 1, channels = 1;
};

class HandshakeAcceptor {
 public:
  enum class Kind { kNeedMore, kReply, kAccepted, kRejected };
  struct Step {
    Kind kind = Kind::kNeedMore;
    std::string reply;  // to send now (also before closing a rejected one)
    std::string why;    // kRejected: for the refusal log
  };
  HandshakeAcceptor(const MeshView& view, const Nonce& server_nonce);
  // How many more bytes the current message needs (0 once done).
  size_t Need() const;
  // At most Need() bytes of what the connector sent.
  Step Feed(std::string_view bytes);
  int from() const { return static_cast<int>(hello_.from_rank); }
  int channel() const { return static_cast<int>(hello_.channel); }

 private:
  Step OnHello();
  Step OnProof();
  enum class State { kHello, kProof, kDone } state_ = State::kHello;
  MeshView view_;
  Nonce server_nonce_;
  char buf_[sizeof(Hello)];
  size_t got_ = 0;
  Hello hello_{};
};

// The acceptor's side over one non-blocking connection (formation's mesh and
// the data acceptor share it): reads at most what `hs` needs from `fd` and
// feeds it. nullopt: nothing complete yet (poll again); else the step. A
// connection closed or broken meanwhile is a kRejected step without reply,
// "closed during the handshake".
inline constexpr const char* kClosedDuringHandshake = "closed during the handshake";
std::optional<HandshakeAcceptor::Step> ReadHandshake(int fd, HandshakeAcceptor& hs);

// The connector's Hello to `to` on `channel`.
Hello MakeHello(const MeshView& view, int to, int channel, const Nonce& client_nonce);
// Checks the acceptor's Challenge; on success fills the Proof to send.
// Errors say what is wrong in the words a user needs (who lacks a key).
Status CheckChallenge(const MeshView& view, const Hello& hello, const Challenge& challenge,
                      const std::string& peer_name, Proof* proof);

}  // namespace ringmaster::internal
