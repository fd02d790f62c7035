// Internal to the api library: the rules the job's state machine
// (job_state.cc's Reconcile) applies: what the observed replicas say (a
// restart wanted, the job's success, the queue's hold) and how a decision
// records its conditions, its end and what follows it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "ringmaster/job_state.h"

namespace ringmaster::internal {

// Sets condition `type` (its transition time changes only with its value).
void SetCondition(JobStatus& s, ConditionType type, bool value, const std::string& reason,
                  const std::string& message, int64_t now);

// Conditions that cannot hold together: the newest one switches the others off.
void SetExclusive(JobStatus& s, ConditionType type, const std::string& reason, const std::string& message,
                  int64_t now, std::initializer_list<ConditionType> off);

// "Worker 1": a replica as a message names it.
std::string Describe(const ReplicaKey& k);

// Whether a replica that exited is restarted under policy `p`.
bool WantsRestart(RestartPolicy p, const ReplicaObservation& o);

// Whether a failed replica under policy `p` is replaced by the job (a new
// pod, whose predecessor's failure the state machine sees) rather than
// restarted where it is by the kubelet (a pod's restartPolicy OnFailure or
// Always; `ringmaster run` restarts its process as the kubelet would):
// recovery InPlace, or restartPolicy ExitCode (both give pods
// restartPolicy Never).
bool ReplacedByTheJob(const DistributedJob& job, RestartPolicy p);

// The members of the job's group: the chief and the workers (a PS or an
// evaluator forms no group).
bool IsMember(ReplicaType t);

// Whether member `key` has other members and each of them has ended for
// good: it succeeded and its restartPolicy does not run it again (Always
// would). Restarted alone, `key` would wait for peers that never come
// (its formation times out, at each restart, until backoffLimit or the
// deadline).
bool PeersDone(const DistributedJob& job, const std::map<ReplicaKey, const ReplicaObservation*>& by_key,
               const ReplicaKey& key);

// A replica that is there and neither ended nor on its way out.
bool IsActive(const ReplicaObservation& o);

// The job's success per spec.successPolicy.
bool Succeeded(const DistributedJob& job, const std::map<ReplicaKey, const ReplicaObservation*>& by_key,
               std::string& message);

// Whether the job waits for its queue: it has one, and none of its pods is
// past the admission gate (a pod of an admitted job that is replaced waits
// only a moment at the gate: the job stays admitted meanwhile). No pod past
// the gate is also what the job's own restart of its whole group looks like
// (every member failed and was deleted: its pods are on their way out, then
// their replacements wait at the gate for the group's admission, which it
// keeps): while the job restarts or recovers what it deleted itself, only
// the queue's own mark on a pod (evicted) says that the queue took the
// group back.
bool Queued(const DistributedJob& job, const JobStatus& s, const std::vector<ReplicaObservation>& observed);

// Replicas the job no longer wants (scaled down, or a type removed).
void DeleteUnwanted(const DistributedJob& job, const std::vector<ReplicaObservation>& observed, Decision& d);

// Ends the job: condition `type` (Succeeded or Failed) and the completion time.
void Finish(Decision& d, ConditionType type, const std::string& reason, const std::string& message,
            int64_t now);

// After the end: stop what cleanPodPolicy says, delete the job once its TTL is up.
void AfterFinish(const DistributedJob& job, const std::vector<ReplicaObservation>& observed, int64_t now,
                 Decision& d);

// Look again at `at` (the earliest of what is pending).
void RequeueAt(Decision& d, int64_t at, int64_t now);

// Where a replica being replaced is, for the message of its timeout.
std::string Whereabouts(const std::map<ReplicaKey, const ReplicaObservation*>& by_key, const ReplicaKey& key);

// The replicas being replaced, as a list for a message.
std::string Names(const std::map<ReplicaKey, int64_t>& replacements);

// An elastic group that runs without some of its workers: each missing one
// failed and is being replaced, every other replica runs, at least
// minWorkers workers run, and rejoinTimeoutSeconds have passed since the
// first of them failed, after which the members go on without whoever is
// late. That is what the pods show; that the members did re-form without
// it only they can say (their logs: "formed with 2 of 3 members").
void MarkShrunk(const DistributedJob& job, const std::map<ReplicaKey, const ReplicaObservation*>& by_key,
                int64_t now, Decision& d);

}  // namespace ringmaster::internal
