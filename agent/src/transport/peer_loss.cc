#include "transport/peer_loss.h"

#include <cctype>
#include <cerrno>
#include <cstring>

#include "clock.h"

namespace ringmaster::internal {

std::string HowNoHeartbeat(double seconds) {
  return "no heartbeat for " + FormatSeconds(seconds);
}

std::string HowFromErrno(int err) {
  if (err == 0) return kHowClosed;
  if (err == ECONNRESET || err == EPIPE) return kHowReset;
  std::string text = std::strerror(err);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return "its connection failed: " + text;
}

Status UnreachableError(const std::string& task, const std::string& observer, const std::string& how) {
  return UnavailableError(task + " is unreachable from " + observer + ": " + how);
}

}  // namespace ringmaster::internal
