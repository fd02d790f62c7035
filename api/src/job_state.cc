// The job's state machine: one step from (the job, its status, its observed
// replicas, now) to a decision (actions, the new status, events); its
// rules are job_state_rules.cc's.
#include "ringmaster/job_state.h"

#include <algorithm>

#include "job_state_rules.h"
#include "ringmaster/enum_names.h"
#include "ringmaster/join_list.h"

namespace ringmaster {

using internal::AfterFinish;
using internal::DeleteUnwanted;
using internal::Describe;
using internal::Finish;
using internal::IsActive;
using internal::MarkShrunk;
using internal::PeersDone;
using internal::Queued;
using internal::ReplacedByTheJob;
using internal::RequeueAt;
using internal::SetCondition;
using internal::SetExclusive;
using internal::Succeeded;
using internal::WantsRestart;
using internal::Whereabouts;

std::string ReplicaKey::Name() const {
  return std::string(ReplicaTypeLower(type)) + "-" + std::to_string(index);
}

std::string_view ConditionTypeName(ConditionType t) {
  return ConditionTypeTable().NameOf(static_cast<int>(t));
}

const Condition* JobStatus::Find(ConditionType t) const {
  for (const auto& c : conditions) {
    if (c.type == t) return &c;
  }
  return nullptr;
}

bool JobStatus::Is(ConditionType t) const {
  const Condition* c = Find(t);
  return c && c->status;
}

namespace {

// The Recovering event's words: `names` replaced alone at restart `restarts`.
std::string RecoveringWhy(const std::string& names, int restarts, const std::optional<int>& limit) {
  return "replacing " + names + " alone; the others recover in place (restart " + std::to_string(restarts) +
         (limit ? " of backoffLimit " + std::to_string(*limit) : std::string()) + ")";
}

}  // namespace

Decision Reconcile(const DistributedJob& job, const JobStatus& status,
                   const std::vector<ReplicaObservation>& observed, int64_t now) {
  Decision d;
  d.status = status;
  JobStatus& s = d.status;

  // Counts reflect what is there now, whatever happens next.
  s.replica_statuses.clear();
  for (const auto& [type, spec] : job.replica_specs) s.replica_statuses[type] = {};
  for (const auto& o : observed) {
    auto& c = s.replica_statuses[o.key.type];
    if (IsActive(o)) ++c.active;
    if (o.phase == ReplicaPhase::kSucceeded) ++c.succeeded;
    if (o.phase == ReplicaPhase::kFailed) ++c.failed;
  }
  s.workers_wanted = job.Replicas(ReplicaType::kWorker);
  s.workers_active = static_cast<int>(std::count_if(observed.begin(), observed.end(), [&](const auto& o) {
    return o.key.type == ReplicaType::kWorker && o.key.index < s.workers_wanted &&
           o.phase == ReplicaPhase::kRunning && !o.deleting;
  }));

  if (!s.Find(ConditionType::kCreated)) {
    SetCondition(s, ConditionType::kCreated, true, "JobCreated", "DistributedJob " + job.name + " is created",
                 now);
  }
  if (s.Finished()) {
    AfterFinish(job, observed, now, d);
    return d;
  }

  if (job.run_policy.suspend) {
    for (const auto& o : observed) {
      if (!o.deleting) d.actions.push_back({ActionKind::kDelete, o.key});
    }
    if (!s.Is(ConditionType::kSuspended)) {
      SetExclusive(s, ConditionType::kSuspended, "JobSuspended", "the job is suspended", now,
                   {ConditionType::kQueued, ConditionType::kRunning, ConditionType::kRestarting,
                    ConditionType::kRecovering});
      d.events.push_back({false, "JobSuspended", "the job is suspended: its replicas are deleted"});
    }
    s.start_time.reset();    // the deadline counts from the resume, as for a batch Job
    s.replacements.clear();  // every replica goes: nothing is being replaced
    return d;
  }
  if (s.Is(ConditionType::kSuspended)) {
    SetCondition(s, ConditionType::kSuspended, false, "JobResumed", "the job is resumed", now);
    d.events.push_back({false, "JobResumed", "the job is resumed"});
  }
  // A queued job (its queue has not admitted it: no pod of it runs outside
  // the admission gate yet) has not started: nothing to restart, no
  // deadline running. Its missing pods are created, to wait gated.
  if (Queued(job, s, observed)) {
    if (!s.Is(ConditionType::kQueued)) {
      const std::string why = "waiting for admission by LocalQueue " + job.run_policy.scheduling_policy.queue;
      SetExclusive(s, ConditionType::kQueued, "WaitingForAdmission", why, now,
                   {ConditionType::kRunning, ConditionType::kRestarting, ConditionType::kRecovering});
      d.events.push_back({false, "Queued", why + ": its pods wait, gated, and start together once admitted"});
    }
    s.start_time.reset();    // the deadline counts from the admission
    s.replacements.clear();  // the whole group starts again once admitted
    if (auto timeout = job.run_policy.scheduling_policy.schedule_timeout_seconds) {
      const int64_t at = s.Find(ConditionType::kQueued)->last_transition_time + *timeout;
      if (now >= at) {
        Finish(d, ConditionType::kFailed, "ScheduleTimeout",
               "not admitted by LocalQueue " + job.run_policy.scheduling_policy.queue + " within " +
                   "schedulingPolicy.scheduleTimeoutSeconds (" + std::to_string(*timeout) + "s)",
               now);
        AfterFinish(job, observed, now, d);
        return d;
      }
      d.requeue_after_seconds = at - now;
    }
    for (const auto& [type, spec] : job.replica_specs) {
      for (int i = 0; i < spec.replicas; ++i) {
        const ReplicaKey key{type, i};
        const bool seen = std::any_of(observed.begin(), observed.end(),
                                      [&](const ReplicaObservation& o) { return o.key == key; });
        if (!seen) d.actions.push_back({ActionKind::kCreate, key});
      }
    }
    DeleteUnwanted(job, observed, d);
    return d;
  }
  if (s.Is(ConditionType::kQueued)) {
    const std::string why = "admitted by LocalQueue " + job.run_policy.scheduling_policy.queue;
    SetCondition(s, ConditionType::kQueued, false, "Admitted", why, now);
    d.events.push_back({false, "Admitted", why + ": its pods start"});
  }
  if (!s.start_time) s.start_time = now;

  if (auto deadline = job.run_policy.active_deadline_seconds) {
    int64_t at = *s.start_time + *deadline;
    if (now >= at) {
      Finish(d, ConditionType::kFailed, "DeadlineExceeded",
             "the job ran longer than activeDeadlineSeconds (" + std::to_string(*deadline) + "s)", now);
      AfterFinish(job, observed, now, d);
      return d;
    }
    d.requeue_after_seconds = at - now;
  }

  std::map<ReplicaKey, const ReplicaObservation*> by_key;
  int in_place_restarts = 0;
  for (const auto& o : observed) {
    by_key[o.key] = &o;
    in_place_restarts += o.restarts;
  }

  std::string why;
  if (Succeeded(job, by_key, why)) {
    Finish(d, ConditionType::kSucceeded, "JobSucceeded", "DistributedJob " + job.name + " succeeded: " + why,
           now);
    AfterFinish(job, observed, now, d);
    return d;
  }

  const std::optional<int> limit = job.run_policy.backoff_limit;
  int restarts = s.restart_count + in_place_restarts;
  auto backoff_exceeded = [&](int total) { return limit && total > *limit; };
  if (backoff_exceeded(restarts)) {
    Finish(d, ConditionType::kFailed, "BackoffLimitExceeded",
           "the job was restarted " + std::to_string(restarts) + " times, more than backoffLimit " +
               std::to_string(*limit),
           now);
    AfterFinish(job, observed, now, d);
    return d;
  }

  // Recoveries that ended: the replica runs again (or already ran to its
  // end). A replacement that failed in turn before it ran stays (its
  // restart below renews its time).
  for (auto it = s.replacements.begin(); it != s.replacements.end();) {
    const auto& [key, since] = *it;
    auto o = by_key.find(key);
    if (key.index >= job.Replicas(key.type)) {  // scaled away: nothing to wait for
      it = s.replacements.erase(it);
      continue;
    }
    const bool back =
        o != by_key.end() && !o->second->deleting &&
        (o->second->phase == ReplicaPhase::kRunning || o->second->phase == ReplicaPhase::kSucceeded);
    if (!back) {
      ++it;
      continue;
    }
    d.events.push_back({false, "Recovered",
                        Describe(key) + " is back: its replacement " +
                            (o->second->phase == ReplicaPhase::kRunning ? "runs, " : "ran, ") +
                            std::to_string(now - since) + "s after it failed"});
    it = s.replacements.erase(it);
  }

  std::vector<Action> restarts_wanted;
  bool all_running = true;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i) {
      const ReplicaKey key{type, i};
      auto it = by_key.find(key);
      if (it == by_key.end()) {
        d.actions.push_back({ActionKind::kCreate, key});
        all_running = false;
        continue;
      }
      const ReplicaObservation& o = *it->second;
      // A new incarnation: the failure counted before is behind it.
      if (auto c = s.counted_failures.find(key);
          c != s.counted_failures.end() && !o.uid.empty() && c->second != o.uid)
        s.counted_failures.erase(c);
      if (o.deleting) {
        all_running = false;
        continue;
      }
      if (o.phase == ReplicaPhase::kPending) all_running = false;
      if (o.phase == ReplicaPhase::kRunning || o.phase == ReplicaPhase::kPending) continue;
      if (o.phase == ReplicaPhase::kSucceeded && spec.restart_policy != RestartPolicy::kAlways) continue;
      // An exit: restart it, or the job has failed. A member replaced once
      // every other member has succeeded could not form its group again.
      const bool restart = WantsRestart(spec.restart_policy, o);
      const bool alone = restart && o.phase == ReplicaPhase::kFailed &&
                         ReplacedByTheJob(job, spec.restart_policy) && PeersDone(job, by_key, key);
      if (restart && !alone) {
        if (auto c = s.counted_failures.find(key); c != s.counted_failures.end() && c->second == o.uid) {
          // Counted by the status already (whoever wrote it stopped before
          // removing the pod): remove it, count nothing, and tell its event
          // again under its name (the one told may not have been posted).
          d.actions.push_back({ActionKind::kRestart, key});
          all_running = false;
          const std::string once = "restart." + o.uid;
          if (job.run_policy.recovery == RecoveryPolicy::kInPlace) {
            d.events.push_back({true, "Recovering", RecoveringWhy(Describe(key), restarts, limit), once});
          } else {
            d.events.push_back({true, "JobRestarting", "restarting " + Describe(key), once});
          }
        } else {
          restarts_wanted.push_back({ActionKind::kRestart, key});
        }
        continue;
      }
      Finish(d, ConditionType::kFailed, "ReplicaFailed",
             Describe(key) + " exited with code " + std::to_string(o.exit_code) +
                 (alone ? " after every other member succeeded: restarted alone it could not form its "
                          "group again"
                        : "") +
                 " (restartPolicy " + std::string(RestartPolicyName(spec.restart_policy)) + ")",
             now);
      d.actions.clear();
      AfterFinish(job, observed, now, d);
      return d;
    }
  }

  // A replacement that does not come back: the group would wait for it (or,
  // elastic, run shrunk) for good.
  if (job.run_policy.elastic && job.run_policy.elastic->replacement_timeout_seconds) {
    const int64_t timeout = *job.run_policy.elastic->replacement_timeout_seconds;
    for (const auto& [key, since] : s.replacements) {
      if (now < since + timeout) {
        RequeueAt(d, since + timeout, now);
        continue;
      }
      Finish(d, ConditionType::kFailed, "ReplacementTimeout",
             Describe(key) + " did not run again within spec.runPolicy.elastic.replacementTimeoutSeconds (" +
                 std::to_string(timeout) + "s) after it failed: " + Whereabouts(by_key, key),
             now);
      d.actions.clear();
      AfterFinish(job, observed, now, d);
      return d;
    }
  }

  if (!restarts_wanted.empty()) {
    restarts += static_cast<int>(restarts_wanted.size());
    if (backoff_exceeded(restarts)) {
      Finish(d, ConditionType::kFailed, "BackoffLimitExceeded",
             "restarting would be restart " + std::to_string(restarts) + ", more than backoffLimit " +
                 std::to_string(*limit),
             now);
      d.actions.clear();
      AfterFinish(job, observed, now, d);
      return d;
    }
    s.restart_count += static_cast<int>(restarts_wanted.size());
    for (const auto& a : restarts_wanted) {
      if (const std::string& uid = by_key.at(a.key)->uid; !uid.empty()) s.counted_failures[a.key] = uid;
    }
    const std::string names = JoinList(restarts_wanted, [](const auto& a) { return Describe(a.key); });
    const bool in_place = job.run_policy.recovery == RecoveryPolicy::kInPlace;
    if (in_place) {
      // From its latest failure: its newest incarnation is what the others wait for.
      for (const auto& a : restarts_wanted) s.replacements[a.key] = now;
      SetExclusive(s, ConditionType::kRecovering, "RecoveringInPlace", RecoveringWhy(names, restarts, limit),
                   now, {ConditionType::kRunning, ConditionType::kRestarting});
    } else {
      SetExclusive(s, ConditionType::kRestarting, "JobRestarting", "restarting " + names, now,
                   {ConditionType::kRunning});
    }
    // One event per failure, a once-event of its pod: an operator that
    // takes over before the pod is gone tells it again under the same name
    // (above), and the API server keeps one, however many failed together.
    int numbered = restarts - static_cast<int>(restarts_wanted.size());
    for (const auto& a : restarts_wanted) {
      const std::string& uid = by_key.at(a.key)->uid;
      const std::string once = uid.empty() ? "" : "restart." + uid;
      if (in_place) {
        d.events.push_back({true, "Recovering", RecoveringWhy(Describe(a.key), ++numbered, limit), once});
      } else {
        d.events.push_back({true, "JobRestarting", "restarting " + Describe(a.key), once});
      }
    }
    d.actions.insert(d.actions.end(), restarts_wanted.begin(), restarts_wanted.end());
    all_running = false;
  }

  DeleteUnwanted(job, observed, d);

  const Condition* running = s.Find(ConditionType::kRunning);
  if (all_running && restarts_wanted.empty() &&
      !(running && running->status && running->reason == "JobRunning")) {
    SetExclusive(s, ConditionType::kRunning, "JobRunning", "DistributedJob " + job.name + " is running", now,
                 {ConditionType::kRestarting, ConditionType::kRecovering});
  } else if (!all_running && restarts_wanted.empty()) {
    MarkShrunk(job, by_key, now, d);
  }
  return d;
}

}  // namespace ringmaster
