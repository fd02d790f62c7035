#include "group/resume.h"

#include <algorithm>
#include <vector>

#include "ringmaster/join_list.h"

namespace ringmaster::internal {

StatusOr<ResumeDecision> DecideResume(std::span<const int64_t> committed,
                                      std::span<const std::string> names) {
  ResumeDecision d;
  d.point.step = kNoState;
  d.point.root = 0;
  for (size_t r = 0; r < committed.size(); ++r) {
    if (committed[r] < kNoState) {
      return InvalidArgumentError("committed_step of " + names[r] + ": must be >= -1 (-1: no state), got " +
                                  std::to_string(committed[r]));
    }
    if (committed[r] > d.point.step) {
      d.point.step = committed[r];
      d.point.root = static_cast<int>(r);
    }
  }
  for (size_t r = 0; r < committed.size(); ++r) {
    if (committed[r] < d.point.step) d.behind.push_back(static_cast<int>(r));
  }
  return d;
}

std::string DescribeResume(const ResumeDecision& d, std::span<const std::string> names) {
  if (d.point.step == kNoState) return "no member holds state: starting from " + names[0] + "'s";
  std::string out = "resuming after step " + std::to_string(d.point.step) + " from " + names[d.point.root];
  if (d.behind.empty()) return out + "; every member holds it";
  out += "; ";
  std::vector<std::string> behind;
  for (int r : d.behind) behind.push_back(names[r]);
  out += JoinListAnd(behind);
  return out + (d.behind.size() == 1 ? " takes its state" : " take its state");
}

}  // namespace ringmaster::internal
