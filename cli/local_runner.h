// `ringmaster run`: the embedded default. Runs every replica of a job as a
// local process, driven by the same state machine as the operator.
#pragma once

#include <ostream>
#include <string>

#include "ringmaster/job.h"

namespace ringmaster::cli {

struct LocalRunOptions {
  std::string bin_dir;  // prepended to PATH (ringmaster-worker lives there)
  // A pod's terminationGracePeriodSeconds. When the job ends (or a replica's
  // failure ends it), the replicas still running get this long to exit by
  // themselves (a group's survivors notice a failure within milliseconds and
  // exit with their report), then SIGTERM, then SIGKILL after as long again.
  // On Ctrl-C (and a replica deleted mid-run): SIGTERM at once, SIGKILL after this.
  double grace_seconds = 5;
  double tick_seconds = 0.2;  // how often the state machine runs when idle
  // The kind the file wrote (a TFJob runs as its DistributedJob): what the
  // summary calls the job.
  std::string kind = "DistributedJob";
};

// Returns the process exit code: 0 only if the job succeeded, 1 if it
// failed, 130 if interrupted (SIGINT/SIGTERM). Output lines of the replicas
// go to `out` prefixed with "[worker-1] "; the runner's own lines too. Each
// replica gets RINGMASTER_TERMINATION_LOG, a file in a per-run temporary
// directory; a failed run's summary ends with "verdict: <replica>: <text>"
// from the failed replica that wrote one first (ChooseVerdict).
int RunLocally(const DistributedJob& job, const LocalRunOptions& options, std::ostream& out);

}  // namespace ringmaster::cli
