// The job's state machine, shared by `ringmaster run` and the operator: a pure
// function from (job, last status, observed replicas, now) to the actions to
// take and the new status. The callers only observe and execute, so both
// agree on restarts, backoff, success and deadlines.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/enums.h"
#include "ringmaster/job.h"

namespace ringmaster {

struct ReplicaKey {
  ReplicaType type = ReplicaType::kWorker;
  int index = 0;
  auto operator<=>(const ReplicaKey&) const = default;
  // "worker-1": the local runner's prefix and, after "<job>-", the pod name.
  std::string Name() const;
};

enum class ReplicaPhase { kPending, kRunning, kSucceeded, kFailed };

// What the caller sees of one replica (a pod, or a local process).
struct ReplicaObservation {
  ReplicaKey key;
  ReplicaPhase phase = ReplicaPhase::kPending;
  int exit_code = 0;      // of the last exit; 128+N for a signal N
  int restarts = 0;       // restarts done in place (kubelet's restartCount)
  bool deleting = false;  // already on its way out: nothing more to do
  // Held back from scheduling by a gate (Kueue's admission gate): it waits
  // for its queue to admit the job.
  bool gated = false;
  // Stopped by the queue: Kueue marked it for termination because the job's
  // group was preempted or evicted (it is `deleting` too). What tells the
  // queue's deletions from the job's own.
  bool evicted = false;
  // Which incarnation this is (a pod's metadata.uid); "" when the caller
  // has none. A failure already counted (JobStatus::counted_failures) is
  // not counted again.
  std::string uid;
};

// Recovering: runPolicy.recovery InPlace is replacing failed replicas alone
// while the others keep running (Restarting is the same without it).
enum class ConditionType { RM_CONDITION_TYPE_TABLE(RM_ENUM_CXX_ENUMERATOR) };
#define RM_CONDITION_TYPE_VALUE(c_name, cxx_name, value, name) ConditionType::cxx_name,
inline constexpr ConditionType kAllConditionTypes[] = {RM_CONDITION_TYPE_TABLE(RM_CONDITION_TYPE_VALUE)};
#undef RM_CONDITION_TYPE_VALUE
std::string_view ConditionTypeName(ConditionType t);

struct Condition {
  ConditionType type = ConditionType::kCreated;
  bool status = false;
  std::string reason;
  std::string message;
  int64_t last_transition_time = 0;  // seconds since the epoch
  bool operator==(const Condition&) const = default;
};

struct ReplicaCounts {
  int active = 0, succeeded = 0, failed = 0;
  bool operator==(const ReplicaCounts&) const = default;
};

struct JobStatus {
  std::vector<Condition> conditions;
  std::map<ReplicaType, ReplicaCounts> replica_statuses;
  std::optional<int64_t> start_time;
  std::optional<int64_t> completion_time;
  int restart_count = 0;  // replicas restarted by us (not in place)
  // The Worker replicas the spec asks for, and how many of their pods run
  // (Running, not on their way out): the group as wanted and as it is.
  int workers_wanted = 0, workers_active = 0;
  // runPolicy.recovery InPlace: the replicas replaced after a failure whose
  // replacement does not run yet, each with when it last failed (when its
  // replacement was decided). A replica's recovery ends when it runs again.
  std::map<ReplicaKey, int64_t> replacements;
  // The incarnation (uid) of each replica whose failure restart_count last
  // counted, written with that count: an operator that takes over before
  // the failed pod is gone removes it without counting it again.
  std::map<ReplicaKey, std::string> counted_failures;

  const Condition* Find(ConditionType t) const;
  bool Is(ConditionType t) const;  // the condition is present and true
  bool Finished() const { return Is(ConditionType::kSucceeded) || Is(ConditionType::kFailed); }
  bool operator==(const JobStatus&) const = default;
};

enum class ActionKind {
  kCreate,     // start the replica (it is missing)
  kDelete,     // stop and remove it (cleanup, suspend, scale down)
  kRestart,    // it exited and is to run again: remove, then start anew
  kDeleteJob,  // ttlSecondsAfterFinished has passed
};

struct Action {
  ActionKind kind = ActionKind::kCreate;
  ReplicaKey key;  // unused for kDeleteJob
  bool operator==(const Action&) const = default;
};

// A Kubernetes-style event worth telling the user about.
struct JobEvent {
  bool warning = false;
  std::string reason;
  std::string message;
  // Empty: an event of its own at each telling. Else the event happens once
  // per job under this key ("end": the job's end; "restart.<pod uid>": that
  // pod's failure acted on), and the operator names it after the key and
  // the job's uid, so a repeat (told again by a new leader) is refused by
  // the API server as one that exists.
  std::string once;
};

struct Decision {
  std::vector<Action> actions;
  JobStatus status;
  std::vector<JobEvent> events;
  // Call again after this many seconds even if nothing changes (a deadline or
  // a TTL is pending).
  std::optional<int64_t> requeue_after_seconds;
};

// One step. `observed` may hold replicas the job no longer wants (scaled
// down): they are deleted. Replicas missing from `observed` are created.
Decision Reconcile(const DistributedJob& job, const JobStatus& status,
                   const std::vector<ReplicaObservation>& observed, int64_t now);

}  // namespace ringmaster
