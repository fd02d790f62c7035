// `ringmaster run`'s decisions apart from its processes: one step of the
// job's state machine and what it means for local replicas. Pure, so the
// job-state transcripts drive it as they drive the operator's PlanJob
// (tests/api/testdata/job_state/); local_runner.cc only starts, signals and
// reaps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
  // Recoveries in place (runPolicy.recovery InPlace) that began at this
  // step, and those that ended with how long each took (seconds since the
  // replica failed): for the run's summary.
  std::vector<ReplicaKey> recoveries_begun;
  std::vector<std::pair<ReplicaKey, int64_t>> recoveries_ended;
};

// `observed` holds one entry per replica the runner has started.
LocalStep PlanLocalStep(const DistributedJob& job, const JobStatus& status,
                        const std::vector<ReplicaObservation>& observed, int64_t now);

// The step a recovering group resumed after, from a member's output line:
// the agent's "resuming after step N from <task>; ..." (every member, in
// any program on libringmaster) and ringmaster-worker's own "recovered:
// resuming after step N ...". Where the group resumed is known only to its
// members: what they print is all the runner (and no operator) can know.
std::optional<int64_t> ResumeStepOf(std::string_view line);

}  // namespace ringmaster::cli
