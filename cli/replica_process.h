// A replica's process under `ringmaster run`: the fork and exec of its
// container's command in a process group of its own, and its termination
// message read back when it has ended.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ringmaster::cli {

struct SpawnedReplica {
  pid_t pid = -1;
  int out_fd = -1;  // its stdout and stderr, the read end (non-blocking)
};

// Starts argv[0] (looked up in `env`'s PATH, not the runner's) with exactly
// `env` ("NAME=value"), stdin from /dev/null, stdout and stderr into one
// pipe. The child leads a process group of its own (stopping a replica
// stops everything it started) and dies with the runner (PR_SET_PDEATHSIG).
// Throws std::runtime_error when the pipe or the fork fails; a command that
// cannot be run exits 127 with "cannot run 'X': why" on its output.
SpawnedReplica SpawnReplica(std::vector<std::string> argv, std::vector<std::string> env);

// At most what the kubelet keeps of a termination message
// (kMaxTerminationMessage); "" when `path` is empty or cannot be read.
std::string ReadTerminationMessage(const std::string& path);

}  // namespace ringmaster::cli
