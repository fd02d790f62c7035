#include "bootstrap/mesh_ledger.h"

#include <algorithm>
#include <vector>

#include "clock.h"
#include "ringmaster/join_list.h"

namespace ringmaster::internal {

MeshLedger::MeshLedger(int rank, int size, int channels, int awaited, const std::vector<int>& control_peers)
    : rank_(rank),
      awaited_(awaited < 0 ? channels : awaited),
      expected_(0),
      peers_(static_cast<size_t>(size), control_peers.empty()),
      conns_(size, std::vector<int>(channels, -1)) {
  for (int p : control_peers)
    if (p >= 0 && p < size) peers_[static_cast<size_t>(p)] = true;
  if (rank >= 0 && rank < size) peers_[static_cast<size_t>(rank)] = false;
  for (int p = rank + 1; p < size; ++p)
    if (peers_[static_cast<size_t>(p)]) expected_ += awaited_;
}

std::optional<std::string> MeshLedger::Refusal(int from, int channel) const {
  if (channel == 0 && !peers_[static_cast<size_t>(from)])
    return "a control connection from a member that is not one of our fingers";
  if (conns_[from][channel] >= 0) return "a second connection for the same member and channel";
  return std::nullopt;
}

void MeshLedger::Connected(int peer, int channel, int fd) {
  conns_[peer][channel] = fd;
  if (peer > rank_ && channel < awaited_ && peers_[static_cast<size_t>(peer)]) --expected_;
}

std::string MeshLedger::Missing(const std::vector<std::string>& names) const {
  std::vector<std::string> missing;
  for (int p = rank_ + 1; p < static_cast<int>(conns_.size()); ++p) {
    if (!peers_[static_cast<size_t>(p)]) continue;
    if (std::find(conns_[p].begin(), conns_[p].begin() + awaited_, -1) != conns_[p].begin() + awaited_)
      missing.push_back(names[p]);
  }
  return JoinList(missing);
}

Status MeshLedger::TimedOut(const std::vector<std::string>& names, double timeout_s) const {
  return DeadlineExceededError("group formation timed out after " + FormatSeconds(timeout_s) +
                               (awaited_ == 1 ? ": no control connection from " : ": no connection from ") +
                               Missing(names));
}

}  // namespace ringmaster::internal
