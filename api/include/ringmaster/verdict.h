// Which failed replica's last words to show the user. When a collective group
// aborts, each member's agent writes one line naming the culprit (the pod's
// termination message, or the file RINGMASTER_TERMINATION_LOG names for
// `ringmaster run`); the operator puts one of them into the job's condition
// and an Event, and `ringmaster run` prints one in its summary. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringmaster {

// The kubelet keeps at most 4096 bytes of a termination message.
inline constexpr size_t kMaxTerminationMessage = 4096;
// How much of it goes into a condition or an Event message.
inline constexpr size_t kMaxVerdictMessage = 1024;

// One replica's exit as the caller saw it.
struct ReplicaExit {
  std::string replica;   // "worker-1"
  int exit_code = 0;     // 128+N for a signal N
  std::string message;   // its termination message; "" when none
  int64_t finished = 0;  // when it ended, in any unit that orders exits; 0 = unknown (last)
};

// The exit to show: among failed exits (code != 0) with a non-empty message,
// the earliest finished (unknown times last); ties keep the given order (the
// callers list replicas in rank order). nullopt when there is none.
std::optional<size_t> ChooseVerdict(const std::vector<ReplicaExit>& exits);

// `text` on one line (line breaks become "; ", surrounding whitespace
// dropped) and at most `max_bytes` bytes, cut at a UTF-8 character boundary
// and ending in "..." when cut.
std::string OneLine(std::string_view text, size_t max_bytes);

// "worker-1 failed (exit code 1): <message on one line, bounded>".
std::string FormatVerdict(const ReplicaExit& exit, size_t max_bytes = kMaxVerdictMessage);

}  // namespace ringmaster
