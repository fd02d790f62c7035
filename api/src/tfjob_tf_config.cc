// A TFJob's replica names, addresses and TF_CONFIG, as training-operator
// gives them (every replica type in the cluster, the Evaluator too).
#include <map>

#include "ringmaster/tfjob.h"

namespace ringmaster {

std::string_view TfJobReplicaTypeLower(const TfJob& tfjob, ReplicaType type) {
  if (type == ReplicaType::kChief && tfjob.chief_is_master) return "master";
  return ReplicaTypeLower(type);
}

std::string TfJobReplicaName(const TfJob& tfjob, ReplicaType type, int index) {
  return tfjob.job.name + "-" + std::string(TfJobReplicaTypeLower(tfjob, type)) + "-" + std::to_string(index);
}

std::string TfJobReplicaAddress(const TfJob& tfjob, ReplicaType type, int index,
                                const TfConfigOptions& opts) {
  std::string host = TfJobReplicaName(tfjob, type, index) + "." + opts.namespace_ + ".svc";
  if (!opts.cluster_domain.empty()) host += "." + opts.cluster_domain;
  auto port = tfjob.ports.find(type);
  return host + ":" + std::to_string(port == tfjob.ports.end() ? kTfJobDefaultPort : port->second);
}

bool TfJobSetsTfConfig(const TfJob& tfjob) {
  return tfjob.job.TotalReplicas() != 1;
}

StatusOr<std::string> GenerateTfJobTfConfig(const TfJob& tfjob, ReplicaType type, int index,
                                            const TfConfigOptions& opts) {
  const DistributedJob& job = tfjob.job;
  if (index < 0 || index >= job.Replicas(type)) {
    const std::string name(type == ReplicaType::kChief && tfjob.chief_is_master ? "Master"
                                                                                : ReplicaTypeName(type));
    return InvalidArgumentError("replica " + name + ":" + std::to_string(index) +
                                " does not exist: the job has " + std::to_string(job.Replicas(type)) + " " +
                                name + " replicas");
  }
  const bool sparse = opts.sparse || tfjob.enable_dynamic_worker;
  // Every replica type is in the cluster, the Evaluator too.
  std::vector<TfClusterJob> cluster;
  for (const auto& [t, spec] : job.replica_specs) {
    TfClusterJob j{std::string(TfJobReplicaTypeLower(tfjob, t)), {}};
    // The sparse form uses this task's and the PS tasks' addresses only.
    if (!sparse || t == type || t == ReplicaType::kPS) {
      for (int i = 0; i < spec.replicas; ++i) j.addresses.push_back(TfJobReplicaAddress(tfjob, t, i, opts));
    }
    cluster.push_back(std::move(j));
  }
  return RenderTfConfig(std::move(cluster), TfJobReplicaTypeLower(tfjob, type), index, sparse);
}

}  // namespace ringmaster
