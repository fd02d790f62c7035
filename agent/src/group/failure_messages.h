// How the agent words a collective's failure: one wording per cause, and
// the culprit named (docs/agent.md, "Messages"). Pure functions: the
// diagnosis gathers ProgressReports, these turn them into the message every
// caller on every member gets. How a lost member is worded is the
// transport's (transport/peer_loss.h), durations the clock's (clock.h).
#pragma once

#include <string>
#include <vector>

#include "group/flight_recorder_ring.h"
#include "ringmaster/status.h"
#include "transport/peer_loss.h"

namespace ringmaster::internal {

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
