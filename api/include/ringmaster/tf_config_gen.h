// TF_CONFIG generation, byte-for-byte the JSON Kubeflow's training-operator
// writes (Go's encoding/json: struct fields in declaration order, map keys
// sorted, no spaces), so TensorFlow and TFJob users see what they expect.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

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
// cluster but gets a TF_CONFIG naming its own task.
// InvalidArgument when the job has no such replica.
StatusOr<std::string> GenerateTfConfig(const DistributedJob& job, ReplicaType type, int index,
                                       const TfConfigOptions& opts, const AddressFn& address = nullptr);

// The part both job kinds share (tfjob.h's generator is the other user).
// One job of a TF_CONFIG cluster: its name as TF_CONFIG spells it ("worker")
// and its tasks' addresses in index order.
struct TfClusterJob {
  std::string name;
  std::vector<std::string> addresses;
};

// Renders a TF_CONFIG as training-operator's Go structs marshal: the jobs in
// Go's map order (sorted by name, whatever order `cluster` has), then the
// task, then "environment":"cloud"; or, with `sparse`, its SparseTFConfig:
// {"cluster":{"worker":{INDEX:ADDRESS},"ps":[...]},"task":{...}} where a
// worker knows itself and every PS task, a PS task itself, and any other
// task nothing. One difference on purpose: a worker of a cluster without a
// "ps" job gets "ps":[] where training-operator writes "ps":null, which
// TensorFlow's ClusterSpec refuses (TypeError). Strings are escaped as encoding/json escapes them (HTML
// characters, U+2028/U+2029, bytes that are not UTF-8 as \ufffd). The task
// need not be in `cluster` (callers check that).
std::string RenderTfConfig(std::vector<TfClusterJob> cluster, std::string_view task_type, int task_index,
                           bool sparse);

// `text` as a JSON string literal, quotes included, exactly as Go's
// encoding/json (Go 1.22 and later) writes it.
std::string GoJsonString(std::string_view text);

}  // namespace ringmaster
