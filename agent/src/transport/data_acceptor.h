// The accepting side of data connections opened at first use: after
// formation, one thread per formation serves the formation's data listener
// (the higher rank connects, as in the mesh), runs each stranger's handshake
// (handshake.h) concurrently, at most kMaxPending at a time and each for at
// most kHandshakeSeconds, and keeps each authenticated connection for the
// transport of its channel to take. It never waits on a collective, so a
// member dialing us never waits on what our collectives do (the reason
// connecting on first use cannot deadlock: see docs/engine.md).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/auth.h"
#include "transport/handshake.h"

namespace ringmaster::internal {

class DataAcceptor {
 public:
  static constexpr size_t kMaxPending = 128;
  static constexpr double kHandshakeSeconds = 2.0;

  // Takes `listen_fd` (closed by Stop). `view`: this member in the group
  // formed (its key is copied); `refusals` must outlive Stop().
  // `held[peer][channel]`: the connections this member already has (from
  // formation): a second one for those slots is refused.
  DataAcceptor(int listen_fd, const MeshView& view, RefusalLog* refusals,
               const std::vector<std::vector<int>>& held);
  ~DataAcceptor();  // Stop()
  // Stops accepting (the thread ends, the listener closes); what came and
  // was not taken yet can still be taken. Idempotent.
  void Stop();
  // This member in the group formed, its key the acceptor's copy (for the
  // connections this member dials).
  const MeshView& view() const { return view_; }
  DataAcceptor(const DataAcceptor&) = delete;
  DataAcceptor& operator=(const DataAcceptor&) = delete;

  // The connection `peer` opened to us on `channel`, once (-1: none yet).
  int Take(int peer, int channel);
  // Readable when a connection for `channel` came; its transport reads it
  // empty (Drain) before it looks again with Take.
  int ready_fd(int channel) const { return ready_[static_cast<size_t>(channel)]; }
  void Drain(int channel);

 private:
  void Loop();
  // Why a handshake that succeeded is refused (empty: kept). Under mu_.
  std::string RefusalLocked(int from, int channel) const;

  int listen_fd_;
  JobKey key_;
  MeshView view_;
  RefusalLog* refusals_;
  int stop_fd_ = -1;
  std::vector<int> ready_;  // per channel: an eventfd
  mutable std::mutex mu_;
  // [peer][channel]: -2 held since formation or taken, -1 none yet, else waiting to be taken.
  std::vector<std::vector<int>> slots_;
  std::thread thread_;
};

}  // namespace ringmaster::internal
