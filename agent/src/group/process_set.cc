#include "group/process_set.h"

#include <algorithm>
#include <vector>

#include "ringmaster/join_list.h"

namespace ringmaster::internal {

Status CheckProcessSet(int id, std::span<const int> sorted, int size, int added) {
  const std::string set = "process set " + std::to_string(id);
  if (added >= kMaxProcessSets) {
    return FailedPreconditionError(
        "process sets: 2^23 - 1 have been added to this group, the most it can number");
  }
  if (id <= 0) return InvalidArgumentError("process set id: must be > 0, got " + std::to_string(id));
  if (sorted.empty()) return InvalidArgumentError(set + ": ranks is empty");
  if (sorted.front() < 0 || sorted.back() >= size) {
    const int bad = sorted.front() < 0 ? sorted.front() : sorted.back();
    return InvalidArgumentError(set + ": rank " + std::to_string(bad) + " is not a rank of the group (size " +
                                std::to_string(size) + ")");
  }
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end())
    return InvalidArgumentError(set + ": rank " + std::to_string(*dup) + " appears twice");
  return OkStatus();
}

ProcessSetOffer OfferProcessSet(bool valid, int id, std::span<const int> sorted) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the ranks
  for (int r : sorted) hash = (hash ^ static_cast<uint64_t>(r)) * 1099511628211ull;
  return {valid ? 1 : 0, id, static_cast<int64_t>(sorted.size()), static_cast<int64_t>(hash)};
}

Status DecideProcessSet(int id, std::span<const int64_t> offers, int rank,
                        std::span<const std::string> names) {
  const int64_t* mine = &offers[static_cast<size_t>(rank) * kProcessSetWords];
  std::vector<std::string> invalid_names, differ_names;
  for (size_t r = 0; r < names.size(); ++r) {
    const int64_t* w = &offers[r * kProcessSetWords];
    if (w[0] == 0) {
      invalid_names.push_back(names[r]);
    } else if (!std::equal(w + 1, w + kProcessSetWords, mine + 1)) {
      differ_names.push_back(names[r] + " (id " + std::to_string(w[1]) + ", " + std::to_string(w[2]) +
                             " ranks)");
    }
  }
  const std::string invalid = JoinList(invalid_names), differ = JoinList(differ_names);
  const std::string set = "process set " + std::to_string(id);
  if (!invalid.empty())
    return FailedPreconditionError(set + ": " + invalid + " passed invalid ranks (see its own error)");
  if (!differ.empty()) {
    return FailedPreconditionError(set + ": the members disagree on it: " + names[static_cast<size_t>(rank)] +
                                   " adds " + std::to_string(mine[2]) + " ranks, " + differ + " add another");
  }
  return OkStatus();
}

}  // namespace ringmaster::internal
