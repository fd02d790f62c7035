// The data mesh's bookkeeping on one member, apart from its sockets
// (mesh.cc): the higher rank connects, so this member waits for one
// connection per higher rank and channel; a second one for the same member
// and channel is refused; at the deadline the members whose connections
// never came are named. Formation awaits the first `awaited` channels only
// (the others open when first needed, and one that comes early is kept),
// and, given `control_peers` (this member's fingers on the control overlay,
// group/overlay.h), only from those: a control connection from anyone else
// is refused. Pure: connections are plain fds, never touched here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ringmaster/status.h"

namespace ringmaster::internal {

class MeshLedger {
 public:
  // awaited < 0: every channel; control_peers empty: every member.
  MeshLedger(int rank, int size, int channels, int awaited = -1, const std::vector<int>& control_peers = {});
  // Whether formation connects to or awaits `peer` at all.
  bool Connects(int peer) const { return peers_[static_cast<size_t>(peer)]; }

  // A handshake from `from` on `channel` succeeded: nullopt to keep it, else
  // why it is refused.
  std::optional<std::string> Refusal(int from, int channel) const;
  void Connected(int peer, int channel, int fd);  // ours to a lower rank, or one accepted
  // Accepted connections still awaited from higher ranks.
  int expected() const { return expected_; }
  // The higher ranks with a channel still missing, "a, b".
  std::string Missing(const std::vector<std::string>& names) const;
  // The formation timed out waiting for them.
  Status TimedOut(const std::vector<std::string>& names, double timeout_s) const;

  // [peer][channel]; -1 for ourselves and for what never came.
  std::vector<std::vector<int>>& conns() { return conns_; }

 private:
  int rank_;
  int awaited_;
  int expected_;
  std::vector<bool> peers_;  // connected during formation
  std::vector<std::vector<int>> conns_;
};

}  // namespace ringmaster::internal
