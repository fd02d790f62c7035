// The closing lines of `ringmaster run`: the job's verdict, each replica's
// starts and last exit, the recoveries in place, and who the culprit is.
// Pure: the runner gathers the facts, this writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "local_plan.h"
#include "ringmaster/job_state.h"

namespace ringmaster::cli {

struct ReplicaOutcome {
  std::string name;         // "worker-1"
  int starts = 0;           // how many times it was started
  int exit_code = 0;        // its last run's (128+N for a signal N)
  bool stopped = false;     // its last run ended because the runner stopped it
  std::string message;      // what its last run wrote in its termination log
  int64_t finished_ms = 0;  // when its last run ended, ms into the run (0: unknown)
};

// What the summary tells of the recoveries in place, gathered step by step:
// how many, how long each took, how small the group ran, who was not back
// at the end.
struct RecoveryTally {
  int begun = 0;                         // recoveries in place begun
  std::vector<std::string> recovered;    // "worker-1 back after 2s"
  std::vector<std::string> not_back;     // being replaced at the last step before the end
  int fewest_workers = -1;               // fewest running while RunningShrunk; -1: never
  std::optional<int64_t> resumed_after;  // the last "resuming after step N" a member printed

  void Note(const LocalStep& step);
};

struct RunFacts {
  std::string job;   // its name
  std::string kind;  // what the file wrote: "DistributedJob" or "TFJob"
  const JobStatus* status = nullptr;
  bool interrupted = false;              // Ctrl-C or SIGTERM
  double seconds = 0;                    // the run's length
  std::vector<ReplicaOutcome> replicas;  // rank order: chief, then workers
  RecoveryTally recoveries;
};

// The job's conditions and events speak of the DistributedJob it runs as;
// a TFJob's run names the kind its file wrote: every "DistributedJob NAME"
// in `text` becomes "KIND NAME".
std::string OfKind(std::string text, const std::string& job, const std::string& kind);

// "[ringmaster] job NAME: Succeeded|Failed|Interrupted (...) after Ns, N
// restarts", a line per replica, the recoveries, and for a failed run
// "[ringmaster] verdict: ..." from the replica that said why first
// (ChooseVerdict), else from the job's Failed condition.
void WriteRunSummary(const RunFacts& facts, std::ostream& out);

}  // namespace ringmaster::cli
