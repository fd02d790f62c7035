// A TFJob's status in Kubeflow's form (training-operator v1.9's JobStatus),
// from and to the shared state machine's JobStatus. Conditions keep their
// types; the reasons are training-operator's (TFJobCreated, TFJobRunning,
// TFJobRestarting, TFJobSucceeded, TFJobFailed, TFJobSuspended,
// TFJobResumed, TFJobFailedValidation) with its messages where ours adds
// nothing, and ours where they say more (which replica failed, how).
// replicaStatuses count pods as training-operator does (a Pending pod is
// not active). restartCount and replacements are Ringmaster's state.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/job_state.h"
#include "ringmaster/tfjob.h"

namespace ringmaster::op {

// The state machine's reason as the TFJob's: "JobRunning" -> "TFJobRunning";
// every reason of a failure -> "TFJobFailed"; one already in TFJob form, or
// one of ours without a Kubeflow counterpart (RunningShrunk, Queued's), as
// it is.
std::string TfJobReason(ConditionType type, const std::string& reason);

// training-operator's message for the state machine's reason where ours
// says no more than it does ("TFJob ns/name is running."), else `message`.
std::string TfJobMessage(const TfJob& tfjob, const std::string& reason, const std::string& message);

// The status to write: conditions as training-operator keeps them (Running
// and Restarting never together; Running False after the end keeps its
// reason), in the order they last changed (the TFJob's State printer
// column reads the last), each with lastUpdateTime; replicaStatuses of every type in the spec,
// keyed as the spec writes it (Chief or Master, Worker, PS, Evaluator), with its selector; start, completion
// and `last_reconcile` times.
nlohmann::json TfJobStatusToJson(const TfJob& tfjob, const JobStatus& status,
                                 const std::vector<ReplicaObservation>& observed,
                                 std::optional<int64_t> last_reconcile);

// The state machine's view of a TFJob's status: reasons back to ours.
// Tolerant, as StatusFromJson: what it does not know it skips.
JobStatus TfJobStatusFromJson(const nlohmann::json& status);

// Ringmaster's state of a TFJob (restartCount, replacements) is in its
// status and, since training-operator's CRD prunes status fields it does not
// know, also in this annotation, as JSON. Not ringmaster.io/: those are the
// user's settings (the loader refuses unknown ones).
inline constexpr char kTfJobStateAnnotation[] = "status.ringmaster.io/state";

// The annotation's value for `status` ("" when there is no state to keep).
std::string TfJobStateAnnotation(const JobStatus& status);
// Reads the annotation's state into `status` where it is ahead of the
// status's own (a pruned status has none). Malformed: ignored.
void MergeTfJobStateAnnotation(const nlohmann::json& tfjob, JobStatus& status);

// The TFJob's status as the operator's metrics read a DistributedJob's:
// its one-word `state` (StateOf) and `replacements`.
nlohmann::json TfJobMetricsStatus(const nlohmann::json& status);

// Whether two statuses differ in more than lastReconcileTime (a status
// write only for a new time would make every reconcile write) and
// Ringmaster's own fields (the state annotation keeps those).
bool TfJobStatusChanged(const nlohmann::json& old_status, const nlohmann::json& new_status);

}  // namespace ringmaster::op
