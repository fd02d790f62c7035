// `ringmaster run`'s decisions apart from its processes: one step of the
// job's state machine and what it means for local replicas. Pure, so the
// job-state transcripts drive it as they drive the operator's PlanJob
// (tests/api/testdata/job_state/); local_runner.cc only starts, signals and
// reaps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/job.h"
#include "ringmaster/job_state.h"

namespace ringmaster::cli {

enum class LocalCommandKind {
  kStart,      // start the replica's process now
  kRestart,    // kill what is left of it; start it again after its backoff
  kTerminate,  // deleted mid-run: SIGTERM now, SIGKILL after the grace period
};

struct LocalCommand {
  LocalCommandKind kind = LocalCommandKind::kStart;
  ReplicaKey key;
  bool operator==(const LocalCommand&) const = default;
};

struct LocalStep {
  JobStatus status;
  std::vector<LocalCommand> commands;
  // The runner's lines for the job's events ("warning: JobRestarting: ...").
  std::vector<std::string> lines;
  // The job has ended: the run stops. Its replicas still running get the
  // grace period to exit by themselves, then are stopped, whatever
  // cleanPodPolicy says (no replica outlives the run), so the state
  // machine's deletions at the end are no commands of their own; nor is
  // deleting the job (nothing persists locally).
  bool finished = false;
};

// `observed` holds one entry per replica the runner has started.
LocalStep PlanLocalStep(const DistributedJob& job, const JobStatus& status,
                        const std::vector<ReplicaObservation>& observed, int64_t now);

}  // namespace ringmaster::cli
