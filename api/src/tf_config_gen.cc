#include "ringmaster/tf_config_gen.h"

#include <algorithm>

namespace ringmaster {
namespace {

// ordered_json keeps insertion order, which is how Go writes struct fields.
using ojson = nlohmann::ordered_json;

}  // namespace

std::string ReplicaAddress(const DistributedJob& job, ReplicaType type, int index,
                           const TfConfigOptions& opts) {
  std::string host = job.name + "-" + std::string(ReplicaTypeLower(type)) + "-" + std::to_string(index) +
                     "." + job.name + "." + opts.namespace_ + ".svc";
  if (!opts.cluster_domain.empty()) host += "." + opts.cluster_domain;
  return host + ":" + std::to_string(job.port);
}

StatusOr<std::string> GenerateTfConfig(const DistributedJob& job, ReplicaType type, int index,
                                       const TfConfigOptions& opts, const AddressFn& address) {
  if (index < 0 || index >= job.Replicas(type)) {
    return InvalidArgumentError("replica " + std::string(ReplicaTypeName(type)) + ":" +
                                std::to_string(index) + " does not exist: the job has " +
                                std::to_string(job.Replicas(type)) + " " +
                                std::string(ReplicaTypeName(type)) + " replicas");
  }
  auto addr = [&](ReplicaType t, int i) { return address ? address(t, i) : ReplicaAddress(job, t, i, opts); };

  // Go sorts map keys: collect the lower-case names, then sort.
  std::vector<ReplicaType> types;
  for (ReplicaType t : kAllReplicaTypes) {
    if (t != ReplicaType::kEvaluator && job.Find(t)) types.push_back(t);
  }
  std::sort(types.begin(), types.end(),
            [](ReplicaType a, ReplicaType b) { return ReplicaTypeLower(a) < ReplicaTypeLower(b); });

  ojson task = {{"type", ReplicaTypeLower(type)}, {"index", index}};
  ojson out = ojson::object();
  if (opts.sparse) {
    // Each task knows only itself and the PS tasks (Kubeflow's SparseClusterSpec).
    ojson worker = ojson::object();
    ojson ps = ojson::array();
    if (type == ReplicaType::kWorker) {
      worker[std::to_string(index)] = addr(type, index);
      for (int i = 0; i < job.Replicas(ReplicaType::kPS); ++i) ps.push_back(addr(ReplicaType::kPS, i));
    } else if (type == ReplicaType::kPS) {
      ps.push_back(addr(type, index));
    }
    out["cluster"] = {{"worker", worker}, {"ps", ps}};
    out["task"] = task;
  } else {
    ojson cluster = ojson::object();
    for (ReplicaType t : types) {
      ojson list = ojson::array();
      for (int i = 0; i < job.Replicas(t); ++i) list.push_back(addr(t, i));
      cluster[std::string(ReplicaTypeLower(t))] = list;
    }
    out["cluster"] = cluster;
    out["task"] = task;
    out["environment"] = "cloud";
  }
  // Bytes that are not UTF-8 (a --namespace or --cluster-domain argument)
  // become U+FFFD rather than an exception.
  return out.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace ringmaster
