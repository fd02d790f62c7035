#include "bootstrap/mesh_ledger.h"

#include <algorithm>

#include "clock.h"

namespace ringmaster::internal {

MeshLedger::MeshLedger(int rank, int size, int channels, int awaited)
    : rank_(rank),
      awaited_(awaited < 0 ? channels : awaited),
      expected_((size - 1 - rank) * awaited_),
      conns_(size, std::vector<int>(channels, -1)) {}

std::optional<std::string> MeshLedger::Refusal(int from, int channel) const {
  if (conns_[from][channel] >= 0) return "a second connection for the same member and channel";
  return std::nullopt;
}

void MeshLedger::Connected(int peer, int channel, int fd) {
  conns_[peer][channel] = fd;
  if (peer > rank_ && channel < awaited_) --expected_;
}

std::string MeshLedger::Missing(const std::vector<std::string>& names) const {
  std::string missing;
  for (int p = rank_ + 1; p < static_cast<int>(conns_.size()); ++p) {
    if (std::find(conns_[p].begin(), conns_[p].begin() + awaited_, -1) != conns_[p].begin() + awaited_)
      missing += (missing.empty() ? "" : ", ") + names[p];
  }
  return missing;
}

Status MeshLedger::TimedOut(const std::vector<std::string>& names, double timeout_s) const {
  return DeadlineExceededError("group formation timed out after " + FormatSeconds(timeout_s) +
                               ": no data connection from " + Missing(names));
}

}  // namespace ringmaster::internal
