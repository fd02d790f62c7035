// The data mesh: one TCP connection per pair and channel (or, with
// MeshConfig::control_peers and first_use, the control channel to a member's
// fingers only), the higher rank
// connecting and saying Hello (handshake.h), built from the table a
// bootstrap (bootstrap.h) hands out. Its bookkeeping (who is still awaited,
// duplicates, who is missing at the deadline) is mesh_ledger.h's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/auth.h"

namespace ringmaster::internal {

struct MeshConfig {
  int rank = 0;
  std::vector<std::string> names, hosts;  // per member, rank order
  uint64_t process_id = 0;
  int channels = 1;  // connections per pair: 0 control, 1.. data
  // Data channels on first use: formation connects the control channel (0)
  // only, and hands its data listener over (Mesh::listen_fd) for the data
  // connections opened later (transport/data_acceptor.h, data_dial.h).
  bool first_use = false;
  // The control channel (0) only between these peers of ours (the control
  // overlay's fingers, group/overlay.h), given our rank and the size of the
  // group the table forms; null: between every pair. A round that a member
  // leaves is still left by everyone: each member that gives it up closes
  // its connections, so the news travels over the fingers.
  std::function<std::vector<int>(int rank, int size)> control_peers;
  double timeout_s = 300;
  std::optional<Deadline> deadline;  // else timeout_s from the call (a caller that retries keeps one)
  int min_size = 0;                  // elastic size (formation_state.h); 0: every member
  const JobKey* key = nullptr;       // never null; empty: no key
  RefusalLog* refusals = nullptr;    // never null
};
// The group formed: `members` (ranks in MeshConfig, ascending: all of them
// unless an elastic size left some out) numbered 0.. in that order.
struct Mesh {
  uint64_t incarnation = 0;
  std::vector<int> members;
  int rank = 0;                         // ours in the group formed
  std::vector<std::vector<int>> conns;  // [peer in the group][channel]; -1 for ourselves
  // MeshConfig::first_use: the data listener (ours to close) and where each
  // member's is, per member of the group; else -1 and empty.
  int listen_fd = -1;
  std::vector<std::string> data_hosts;
  std::vector<int> data_ports;
};
// Gets the table through `bootstrap` and connects the mesh, all within the
// formation timeout. A round that a member leaves meanwhile (it died, or
// restarted and joined the next round) is left by everyone in it, and the
// next round is formed, so a dead entry never holds the group until the
// deadline. Every connection is authenticated (handshake.h);
// strangers' connections are handled concurrently, at most
// kMaxPendingHandshakes at a time, each dropped after kHandshakeSeconds, so
// a flood cannot hold formation up past its timeout.
inline constexpr size_t kMaxPendingHandshakes = 128;
inline constexpr double kHandshakeSeconds = 2.0;
StatusOr<Mesh> FormMesh(const MeshConfig& config, Bootstrap& bootstrap);
// How a communicator builds its mesh: FormMesh, unless it is given another.
using MeshFactory = std::function<StatusOr<Mesh>(const MeshConfig&, Bootstrap&)>;

}  // namespace ringmaster::internal
