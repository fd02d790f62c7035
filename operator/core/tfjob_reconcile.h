// The planner of a Kubeflow TFJob (kubeflow.org/v1): the TFJob goes through
// the loader (tfjob.h) into the DistributedJob model and through the same
// planner (planner.h) and state machine (api/job_state) as a DistributedJob;
// what differs, its PlanKind's hooks, is what
// it creates (tfjob_objects.h: training-operator's names, labels, Services
// and TF_CONFIG), the status's form and the state annotation beside it
// (tfjob_status.h), and enableDynamicWorker's rule (a Worker that fails for
// good does not fail the job). A TFJob
// the loader refuses fails with reason TFJobFailedValidation, naming every
// refused field, and stays so (as a finished job does).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "reconcile.h"

namespace ringmaster::op {

// `services`: the Services labelled with the job (their names are what
// counts). A TFJob with runPolicy.managedBy kueue.x-k8s.io/multikueue is
// MultiKueue's: the plan is empty.
Plan PlanTfJob(const nlohmann::json& tfjob, const std::vector<nlohmann::json>& pods,
               const std::vector<nlohmann::json>& services, const Pending& pending, int64_t now,
               const BuildOptions& opts);

}  // namespace ringmaster::op
