// How the agent words a failure: one wording per cause, durations in plain
// units, and the culprit named (docs/agent.md, "Messages"). Pure functions:
// the diagnosis gathers ProgressReports, these turn them into the message
// every caller on every member gets.
#pragma once

#include <string>
#include <vector>

#include "group/flight_recorder_ring.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

// "200 ms", "5 s", "1.5 s", "2 min 30 s".
std::string FormatSeconds(double seconds);

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

// "all-reduce collective #3 (pack 0 of 1)".
std::string DescribeCollective(uint64_t seq, const OpInfo& info);

// The verdict on a collective that timed out here. `reports[r]` is member
// r's answer (ours included, as running); kUnknown means it did not answer.
// "all-reduce collective #3 (pack 0 of 1) timed out after 5 s:
//  /job:worker/task:1 never entered it (its last finished collective is #2);
//  /job:chief/task:0 and /job:worker/task:0 waited"
std::string DescribeTimeout(uint64_t seq, const OpInfo& mine, const std::vector<std::string>& names,
                            const std::vector<ProgressReport>& reports);

// When members disagree on what collective #seq is (size, type or kind):
// InvalidArgument naming both sides; OK when every answer matches ours
// (then the protocol error had another cause).
Status DescribeMismatch(uint64_t seq, int rank, const OpInfo& mine, const std::vector<std::string>& names,
                        const std::vector<ProgressReport>& reports);

}  // namespace ringmaster::internal
