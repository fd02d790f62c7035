// File descriptors for the mesh: a full mesh holds one socket per peer and
// channel, (N-1) x channels, so a large group meets `ulimit -n` (1024 by
// default outside containers) from a few hundred members; a sparse one (the
// control channel to the overlay's fingers, data channels on first use)
// holds O(log N). Checked before the mesh is built, counting what that mesh
// really opens: the soft limit is raised towards the hard one when that
// suffices (as the Go runtime does at start), else formation fails at once
// naming the limit, what the group needs and what to do, instead of
// retrying socket() until the formation deadline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ringmaster/status.h"

namespace ringmaster::internal {

// What the process has: descriptors open now, RLIMIT_NOFILE's soft and hard
// limits (a negative limit is RLIM_INFINITY).
struct FdBudget {
  int64_t open = 0;
  int64_t soft = 0;
  int64_t hard = 0;
};

// Descriptors a member of `size` with `channels` channels per pair (0:
// control, the rest data) adds while it forms and runs: its control
// connections (to `control_peers` members; < 0: every other one), on each
// data channel its data connections (every other member; with `first_use`,
// those a ring and the link probe's agreement open: 2 + ⌈log2 N⌉, at most
// N - 1 — an all-to-all opens more when it first runs, and a descriptor
// missing then fails that collective naming the limit), the listening
// socket, and a margin for the control plane's (gRPC's) own.
inline constexpr int64_t kFdMargin = 64;
int64_t MeshDescriptors(int size, int channels, int control_peers = -1, bool first_use = false);

// The verdict, pure: nothing to do; raise the soft limit to `raise_to`; or
// FailedPrecondition whose message says why and what to do.
struct FdVerdict {
  std::optional<int64_t> raise_to;
  Status error;  // OK unless it cannot fit
};
FdVerdict JudgeFdBudget(int64_t need, const FdBudget& budget, int size, int channels);

// The shell: counts /proc/self/fd, reads and (if the verdict says so) raises
// RLIMIT_NOFILE for `need` more (MeshDescriptors). OK, or the verdict's error.
Status EnsureMeshDescriptors(int64_t need, int size, int channels);

// For a failed socket(), accept() or the like with EMFILE/ENFILE: the
// process's limit, in words ("RLIMIT_NOFILE 1024 (hard 4096), 1024 open").
std::string DescribeFdLimit();

}  // namespace ringmaster::internal
