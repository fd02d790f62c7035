// The objects the operator creates for a job: one pod per replica and one
// headless Service. Pure: the same job gives byte-identical objects.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringmaster/job.h"
#include "ringmaster/job_state.h"

namespace ringmaster::op {

struct BuildOptions {
  std::string cluster_domain;  // "" keeps TF_CONFIG addresses at "...svc"
};

struct BuiltPod {
  nlohmann::json pod;
  // Warnings for the user (a container's own TF_CONFIG kept), as events.
  std::vector<JobEvent> events;
};

// The namespace the job's objects live in ("default" when unset).
std::string JobNamespace(const DistributedJob& job);

// The pod of replica `key`, from the replica's template: name, labels,
// controller ownerReference, hostname/subdomain, TF_CONFIG and RINGMASTER_*
// in every container, the job's port, restartPolicy mapped for the kubelet
// (ExitCode -> Never: the operator decides on restarts from the exit code).
// InvalidArgument when the job has no such replica.
StatusOr<BuiltPod> BuildPod(const DistributedJob& job, const ReplicaKey& key, const BuildOptions& opts);

// The headless Service that gives every pod its stable DNS name.
nlohmann::json BuildService(const DistributedJob& job);

// The controller ownerReference to the job (needs metadata.uid).
nlohmann::json OwnerReference(const DistributedJob& job);

}  // namespace ringmaster::op
