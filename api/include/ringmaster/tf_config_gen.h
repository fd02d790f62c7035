// TF_CONFIG generation, byte-for-byte the JSON Kubeflow's training-operator
// writes (Go's encoding/json: struct fields in declaration order, map keys
// sorted, no spaces), so TensorFlow and TFJob users see what they expect.
#pragma once

#include <functional>
#include <string>

#include "ringmaster/job.h"

namespace ringmaster {

struct TfConfigOptions {
  std::string namespace_ = "default";
  std::string cluster_domain;  // e.g. "cluster.local"; "" leaves it off
  // Kubeflow's dynamic-worker form: {"cluster":{"worker":{"1":...},"ps":[...]}}
  bool sparse = false;
};

// "<job>-<type>-<index>.<job>.<ns>.svc[.<domain>]:<port>": the stable DNS
// name that the job's headless Service and each pod's hostname/subdomain give.
std::string ReplicaAddress(const DistributedJob& job, ReplicaType type, int index,
                           const TfConfigOptions& opts);

// Where each replica is reached; the local runner maps them to 127.0.0.1.
using AddressFn = std::function<std::string(ReplicaType, int)>;

// The TF_CONFIG of one replica. The Evaluator is not part of the training
// cluster (as in Kubeflow) but gets a TF_CONFIG naming its own task.
// InvalidArgument when the job has no such replica.
StatusOr<std::string> GenerateTfConfig(const DistributedJob& job, ReplicaType type, int index,
                                       const TfConfigOptions& opts, const AddressFn& address = nullptr);

}  // namespace ringmaster
