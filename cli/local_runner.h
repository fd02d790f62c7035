// `ringmaster run`: the embedded default. Runs every replica of a job as a
// local process, driven by the same state machine as the operator.
#pragma once

#include <ostream>
#include <string>

#include "ringmaster/job.h"

namespace ringmaster::cli {

struct LocalRunOptions {
  std::string bin_dir;            // prepended to PATH (ringmaster-worker lives there)
  double kill_grace_seconds = 3;  // SIGTERM, then SIGKILL after this long
  double tick_seconds = 0.2;      // how often the state machine runs when idle
};

// Returns the process exit code: 0 only if the job succeeded, 1 if it
// failed, 130 if interrupted (SIGINT/SIGTERM). Output lines of the replicas
// go to `out` prefixed with "[worker-1] "; the runner's own lines too.
int RunLocally(const DistributedJob& job, const LocalRunOptions& options, std::ostream& out);

}  // namespace ringmaster::cli
