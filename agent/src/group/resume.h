// Where a re-formed group resumes (recovery in place): every member offers
// the last step it committed, or kNoState when it holds none (a new
// incarnation of a failed task, or a first start), and every member decides
// from the same gathered list, so all reach the same answer without a
// coordinator. Pure: the engine gathers (CommunicatorImpl::AgreeOnResume),
// this decides.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/communicator.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

inline constexpr int64_t kNoState = -1;

struct ResumeDecision {
  ResumePoint point;
  // The members whose state is older than point.step (new incarnations
  // included): they take the root's. For the log line.
  std::vector<int> behind;
};

// `committed[r]`: member r's offer. The highest step wins (a survivor that
// finished one more step than another holds a state every member can take:
// its step's all-reduce completed with every contribution), held by its
// lowest rank. Nobody holding state is a first start: step kNoState, root 0
// (the initial broadcast from rank 0, as Horovod's). An offer below kNoState
// is InvalidArgument naming the member.
StatusOr<ResumeDecision> DecideResume(std::span<const int64_t> committed, std::span<const std::string> names);

// "resuming at step 12 from /job:worker/task:0; /job:worker/task:1 takes its state"
std::string DescribeResume(const ResumeDecision& d, std::span<const std::string> names);

}  // namespace ringmaster::internal
