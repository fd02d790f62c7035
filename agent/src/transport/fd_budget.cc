#include "transport/fd_budget.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>

namespace ringmaster::internal {

namespace {

std::string Limit(int64_t v) {
  return v < 0 ? std::string("unlimited") : std::to_string(v);
}

FdBudget ReadBudget() {
  FdBudget b;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++b.open;
    }
    ::closedir(d);
    --b.open;  // the directory's own descriptor
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    b.soft = rl.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(rl.rlim_cur);
    b.hard = rl.rlim_max == RLIM_INFINITY ? -1 : static_cast<int64_t>(rl.rlim_max);
  } else {
    b.soft = b.hard = -1;  // unknown: nothing to check
  }
  return b;
}

}  // namespace

int64_t MeshDescriptors(int size, int channels, int control_peers, bool first_use) {
  const int64_t others = std::max(size - 1, 0);
  int log2 = 0;
  while ((int64_t{1} << log2) < size) ++log2;
  const int64_t control = control_peers < 0 ? others : std::min<int64_t>(control_peers, others);
  const int64_t data_peers = first_use ? std::min<int64_t>(others, 2 + log2) : others;
  return control + data_peers * std::max(channels - 1, 0) + 1 + kFdMargin;
}

FdVerdict JudgeFdBudget(int64_t need, const FdBudget& b, int size, int channels) {
  const int64_t want = b.open + need;
  if (b.soft < 0 || want <= b.soft) return {};
  if (b.hard < 0 || want <= b.hard) return {want, OkStatus()};
  return {std::nullopt,
          FailedPreconditionError("group formation: too few file descriptors: a group of " +
                                  std::to_string(size) + " members with " + std::to_string(channels) +
                                  " channels (control and data) needs about " + std::to_string(need) +
                                  " in each member (" + std::to_string(b.open) +
                                  " are open already), but this process may open " + Limit(b.soft) +
                                  " (RLIMIT_NOFILE; its hard limit is " + Limit(b.hard) +
                                  "): raise it to at least " + std::to_string(want) +
                                  " (ulimit -n, or the container runtime's nofile limit), or use fewer "
                                  "streams (RINGMASTER_STREAMS)")};
}

Status EnsureMeshDescriptors(int64_t need, int size, int channels) {
  const FdBudget b = ReadBudget();
  FdVerdict v = JudgeFdBudget(need, b, size, channels);
  if (!v.error.ok() || !v.raise_to) return v.error;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return OkStatus();
  rl.rlim_cur = static_cast<rlim_t>(*v.raise_to);
  if (::setrlimit(RLIMIT_NOFILE, &rl) == 0) return OkStatus();
  // Not allowed after all (a seccomp profile, say): the verdict without a hard limit to climb to.
  return JudgeFdBudget(need, {b.open, b.soft, b.soft}, size, channels).error;
}

std::string DescribeFdLimit() {
  const FdBudget b = ReadBudget();
  return "RLIMIT_NOFILE " + Limit(b.soft) + " (hard " + Limit(b.hard) + "), " + std::to_string(b.open) +
         " open";
}

}  // namespace ringmaster::internal
