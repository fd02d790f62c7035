// What the state machine needs to know of a pod, read from the pod object.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "names.h"
#include "ringmaster/job_state.h"
#include "ringmaster/verdict.h"

namespace ringmaster::op {

// nullopt for a pod without the replica labels (not one of a job's);
// `labels` are a DistributedJob's unless given (a TFJob's: tfjob_objects.h).
// The exit code is the first non-zero one of a terminated container (or the
// first terminated one's); restarts are the kubelet's, summed over containers.
std::optional<ReplicaObservation> ObservePod(const nlohmann::json& pod,
                                             const ReplicaLabels& labels = kDistributedJobLabels);

// The failed exit of a pod's containers, for the verdict: a container whose
// state.terminated (or, for a container the kubelet restarted,
// lastState.terminated) has a non-zero exit code; one with a termination
// message first, else the first. `replica` is the key's name ("worker-1"),
// `finished` its finishedAt (seconds; 0 when absent). nullopt for a pod
// without our labels or without a failed container.
std::optional<ReplicaExit> ObserveFailure(const nlohmann::json& pod,
                                          const ReplicaLabels& labels = kDistributedJobLabels);

// metadata.<field> of any object; "" where it is absent or not a string
// (objects from the API server are trusted for shape, not for content).
std::string MetadataString(const nlohmann::json& obj, const char* field);

// Whether `object`'s controller ownerReference names `uid`. An object
// without one is not controlled by anyone: Kubernetes' own controllers act
// only on what they control (adoption is an explicit step, which we do not
// take), and an object of the job's name without a reference is someone
// else's, or an earlier job's orphaned by `kubectl delete --cascade=orphan`
// (which removes the references): counting such a pod would read another
// run's exit as this job's, and deleting it would delete what is not ours.
// An empty `uid` controls nothing.
bool ControlledBy(const nlohmann::json& object, const std::string& uid);

// "namespace/job" of an object labelled `job_label` (ringmaster.io/job-name
// unless given; a pod, a Service): the work queue's key of the job it
// belongs to; "" without the label.
std::string JobKeyOf(const nlohmann::json& object, const char* job_label = kLabelJobName);

}  // namespace ringmaster::op
