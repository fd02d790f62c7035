// How a member found lost is worded. The transport finds a peer's
// connection closed or reset, the group (above it) finds a peer silent; both
// say it alike, and every member reports the first cause in its words.
#pragma once

#include <string>

#include "ringmaster/status.h"

namespace ringmaster::internal {

// How a member was found dead or unreachable.
inline constexpr char kHowClosed[] = "its connection closed (the process exited or was killed)";
inline constexpr char kHowReset[] = "its connection was reset (the process or its host died)";
std::string HowNoHeartbeat(double seconds);  // "no heartbeat for 15 s"
// kHowReset for ECONNRESET/EPIPE, kHowClosed for 0 (EOF), else the error text.
std::string HowFromErrno(int err);
// Unavailable "<task> is unreachable from <observer>: <how>". Every member
// reports the first cause in its words, the unreachable one too (when it is
// alive, its peers could not hear it): the observer says who could not.
Status UnreachableError(const std::string& task, const std::string& observer, const std::string& how);

}  // namespace ringmaster::internal
