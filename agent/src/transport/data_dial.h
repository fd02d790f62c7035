// The connecting side of one data connection: the connector's half of the
// handshake (handshake.h) over a connected socket, used by formation
// (bootstrap/mesh.cc) and by a data connection opened when first needed
// (DialPeer, the transport's hook).
#pragma once

#include <string>

#include "clock.h"
#include "ringmaster/status.h"
#include "transport/handshake.h"

namespace ringmaster::internal {

// Hello, check the Challenge, Proof, Ack on `sock`, within `deadline`. A
// refusal (an Ack that says so) is Unauthenticated with an empty message,
// for the caller to word; a wrong key is Unauthenticated naming
// `peer_name`; a connection closed before the Ack is Unavailable.
Status ConnectorHandshake(int sock, const MeshView& view, int to, int channel, const std::string& peer_name,
                          Deadline deadline);

// How long a data connection opened at first use may take (the connection
// and its handshake), at most: a peer's listener is open for the life of its
// formation, so anything slower is a peer that cannot be reached.
inline constexpr double kFirstUseSeconds = 10.0;

// Where a peer's data listener is, and who it and we are, for DialPeer.
struct DialTarget {
  std::string host;
  int port = 0;
  int rank = 0;            // the peer's, in the group formed (lower than ours)
  std::string name, self;  // task names, for errors
};

// Connects to `t` on `channel` and authenticates, within `deadline` (and
// kFirstUseSeconds). The socket is non-blocking and tuned for data. Errors
// name the peer as a lost member is named (peer_loss.h): Unavailable
// "<peer> is unreachable from <self>: <how>"; a key mismatch is
// Unauthenticated. A handshake the peer closes before it answers (it was
// still finishing its formation, which drops half-done handshakes) is tried
// again within the same bounds.
StatusOr<int> DialPeer(const MeshView& view, const DialTarget& t, int channel, Deadline deadline);

}  // namespace ringmaster::internal
