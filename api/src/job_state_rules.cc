// The rules of the job's state machine (job_state_rules.h).
#include "job_state_rules.h"

#include <algorithm>

#include "ringmaster/enum_names.h"
#include "ringmaster/join_list.h"

namespace ringmaster::internal {

void SetCondition(JobStatus& s, ConditionType type, bool value, const std::string& reason,
                  const std::string& message, int64_t now) {
  auto it = std::find_if(s.conditions.begin(), s.conditions.end(),
                         [&](const Condition& c) { return c.type == type; });
  if (it == s.conditions.end()) {
    if (!value) return;  // an absent condition already reads as false
    s.conditions.push_back({type, value, reason, message, now});
    return;
  }
  if (it->status != value) it->last_transition_time = now;
  it->status = value;
  it->reason = reason;
  it->message = message;
}

// Conditions that cannot hold together: the newest one switches the others off.
void SetExclusive(JobStatus& s, ConditionType type, const std::string& reason, const std::string& message,
                  int64_t now, std::initializer_list<ConditionType> off) {
  for (ConditionType o : off) {
    if (s.Is(o)) SetCondition(s, o, false, reason, message, now);
  }
  SetCondition(s, type, true, reason, message, now);
}

std::string Describe(const ReplicaKey& k) {
  return std::string(ReplicaTypeName(k.type)) + " " + std::to_string(k.index);
}

bool WantsRestart(RestartPolicy p, const ReplicaObservation& o) {
  switch (p) {
    case RestartPolicy::kNever:
      return false;
    case RestartPolicy::kOnFailure:
      return o.phase == ReplicaPhase::kFailed;
    case RestartPolicy::kAlways:
      return true;
    // 1-127: the program said it failed for good; 128+: killed by a signal
    // (OOM, preemption), worth another try.
    case RestartPolicy::kExitCode:
      return o.phase == ReplicaPhase::kFailed && o.exit_code >= 128;
  }
  return false;
}

// Whether a failed replica under policy `p` is replaced by the job (a new
// pod, whose predecessor's failure the state machine sees) rather than
// restarted where it is by the kubelet (a pod's restartPolicy OnFailure or
// Always; `ringmaster run` restarts its process as the kubelet would):
// recovery InPlace, or restartPolicy ExitCode (both give pods
// restartPolicy Never).
bool ReplacedByTheJob(const DistributedJob& job, RestartPolicy p) {
  return job.run_policy.recovery == RecoveryPolicy::kInPlace || p == RestartPolicy::kExitCode;
}

// The members of the job's group: the chief and the workers (a PS or an
// evaluator forms no group).
bool IsMember(ReplicaType t) {
  return t == ReplicaType::kChief || t == ReplicaType::kWorker;
}

// Whether member `key` has other members and each of them has ended for
// good: it succeeded and its restartPolicy does not run it again (Always
// would). Restarted alone, `key` would wait for peers that never come
// (its formation times out, at each restart, until backoffLimit or the
// deadline).
bool PeersDone(const DistributedJob& job, const std::map<ReplicaKey, const ReplicaObservation*>& by_key,
               const ReplicaKey& key) {
  if (!IsMember(key.type)) return false;
  int peers = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    if (!IsMember(type)) continue;
    for (int i = 0; i < spec.replicas; ++i) {
      const ReplicaKey k{type, i};
      if (k == key) continue;
      auto it = by_key.find(k);
      if (it == by_key.end() || it->second->deleting || it->second->phase != ReplicaPhase::kSucceeded ||
          spec.restart_policy == RestartPolicy::kAlways)
        return false;
      ++peers;
    }
  }
  return peers > 0;
}

bool IsActive(const ReplicaObservation& o) {
  return o.phase == ReplicaPhase::kPending || o.phase == ReplicaPhase::kRunning;
}

// The job's success per spec.successPolicy.
bool Succeeded(const DistributedJob& job, const std::map<ReplicaKey, const ReplicaObservation*>& by_key,
               std::string& message) {
  auto done = [&](ReplicaType t, int i) {
    auto it = by_key.find({t, i});
    return it != by_key.end() && it->second->phase == ReplicaPhase::kSucceeded;
  };
  const int workers = job.Replicas(ReplicaType::kWorker);
  if (job.success_policy == SuccessPolicy::kAllWorkers && workers > 0) {
    for (int i = 0; i < workers; ++i) {
      if (!done(ReplicaType::kWorker, i)) return false;
    }
    message = "all " + std::to_string(workers) + " workers succeeded";
    return true;
  }
  if (job.Replicas(ReplicaType::kChief) > 0) {
    message = "the chief succeeded";
    return done(ReplicaType::kChief, 0);
  }
  message = "worker 0 succeeded";
  return workers > 0 && done(ReplicaType::kWorker, 0);
}

// Whether the job waits for its queue: it has one, and none of its pods is
// past the admission gate (a pod of an admitted job that is replaced waits
// only a moment at the gate: the job stays admitted meanwhile). No pod past
// the gate is also what the job's own restart of its whole group looks like
// (every member failed and was deleted: its pods are on their way out, then
// their replacements wait at the gate for the group's admission, which it
// keeps): while the job restarts or recovers what it deleted itself, only
// the queue's own mark on a pod (evicted) says that the queue took the
// group back.
bool Queued(const DistributedJob& job, const JobStatus& s, const std::vector<ReplicaObservation>& observed) {
  if (job.run_policy.scheduling_policy.queue.empty()) return false;
  if (std::any_of(observed.begin(), observed.end(),
                  [](const ReplicaObservation& o) { return !o.deleting && !o.gated; }))
    return false;
  if (std::any_of(observed.begin(), observed.end(), [](const ReplicaObservation& o) { return o.evicted; }))
    return true;
  const bool own_restart =
      s.start_time && (s.Is(ConditionType::kRestarting) || s.Is(ConditionType::kRecovering));
  return !own_restart;
}

// Replicas the job no longer wants (scaled down, or a type removed).
void DeleteUnwanted(const DistributedJob& job, const std::vector<ReplicaObservation>& observed, Decision& d) {
  for (const auto& o : observed) {
    if (!o.deleting && o.key.index >= job.Replicas(o.key.type))
      d.actions.push_back({ActionKind::kDelete, o.key});
  }
}

void Finish(Decision& d, ConditionType type, const std::string& reason, const std::string& message,
            int64_t now) {
  SetExclusive(d.status, type, reason, message, now,
               {ConditionType::kQueued, ConditionType::kRunning, ConditionType::kRestarting,
                ConditionType::kRecovering});
  d.status.completion_time = now;
  d.status.replacements.clear();
  d.events.push_back({type == ConditionType::kFailed, reason, message, /*once=*/"end"});
}

// After the end: stop what cleanPodPolicy says, delete the job once its TTL is up.
void AfterFinish(const DistributedJob& job, const std::vector<ReplicaObservation>& observed, int64_t now,
                 Decision& d) {
  for (const auto& o : observed) {
    if (o.deleting) continue;
    bool remove = job.run_policy.clean_pod_policy == CleanPodPolicy::kAll ||
                  (job.run_policy.clean_pod_policy == CleanPodPolicy::kRunning && IsActive(o));
    if (remove) d.actions.push_back({ActionKind::kDelete, o.key});
  }
  if (auto ttl = job.run_policy.ttl_seconds_after_finished) {
    int64_t at = d.status.completion_time.value_or(now) + *ttl;
    if (now >= at) {
      d.actions.push_back({ActionKind::kDeleteJob, {}});
    } else {
      d.requeue_after_seconds = at - now;
    }
  }
}

// Look again at `at` (the earliest of what is pending).
void RequeueAt(Decision& d, int64_t at, int64_t now) {
  if (!d.requeue_after_seconds || at - now < *d.requeue_after_seconds) d.requeue_after_seconds = at - now;
}

// Where a replica being replaced is, for the message of its timeout.
std::string Whereabouts(const std::map<ReplicaKey, const ReplicaObservation*>& by_key,
                        const ReplicaKey& key) {
  auto it = by_key.find(key);
  if (it == by_key.end()) return "it has no pod yet";
  const ReplicaObservation& o = *it->second;
  if (o.deleting) return "its failed pod is still on its way out";
  if (o.gated) return "it is Pending, held at its queue's admission gate";
  if (o.phase == ReplicaPhase::kPending) return "it is still Pending";
  return "it failed again";
}

std::string Names(const std::map<ReplicaKey, int64_t>& replacements) {
  return JoinList(replacements, [](const auto& r) { return Describe(r.first); });
}

// An elastic group that runs without some of its workers: each missing one
// failed and is being replaced, every other replica runs, at least
// minWorkers workers run, and rejoinTimeoutSeconds have passed since the
// first of them failed, after which the members go on without whoever is
// late. That is what the pods show; that the members did re-form without
// it only they can say (their logs: "formed with 2 of 3 members").
void MarkShrunk(const DistributedJob& job, const std::map<ReplicaKey, const ReplicaObservation*>& by_key,
                int64_t now, Decision& d) {
  JobStatus& s = d.status;
  const auto& elastic = job.run_policy.elastic;
  if (!elastic || s.replacements.empty()) return;
  for (const auto& [key, since] : s.replacements) {
    if (key.type != ReplicaType::kWorker) return;  // the leader is never left out
  }
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i) {
      const ReplicaKey key{type, i};
      if (s.replacements.count(key)) continue;
      auto it = by_key.find(key);
      if (it == by_key.end() || it->second->deleting || it->second->phase != ReplicaPhase::kRunning) return;
    }
  }
  if (s.workers_active < elastic->min_workers) return;
  int64_t first = now;
  for (const auto& [key, since] : s.replacements) first = std::min(first, since);
  const auto rejoin = static_cast<int64_t>(std::ceil(elastic->rejoin_timeout_seconds));
  if (now < first + rejoin) {
    RequeueAt(d, first + rejoin, now);
    return;
  }
  const std::string why = "running with " + std::to_string(s.workers_active) + " of " +
                          std::to_string(s.workers_wanted) + " workers: " + Names(s.replacements) +
                          " not back rejoinTimeoutSeconds (" + std::to_string(rejoin) +
                          "s) after failing; elastic minWorkers " + std::to_string(elastic->min_workers) +
                          " lets the others go on without it";
  const Condition* running = s.Find(ConditionType::kRunning);
  const bool already = running && running->status && running->reason == "RunningShrunk";
  SetExclusive(s, ConditionType::kRunning, "RunningShrunk", why, now,
               {ConditionType::kRestarting, ConditionType::kRecovering});
  if (!already) d.events.push_back({true, "RunningShrunk", why});
}

}  // namespace ringmaster::internal
