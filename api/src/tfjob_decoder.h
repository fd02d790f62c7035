// Internal to the api library: the TFJob decoder (tfjob.cc, tfjob_replicas.cc).
// It checks a TFJob in its own terms and translates it into a DistributedJob
// object (`dj`), remembering how each replica type was written so that
// DecodeJob's errors about `dj` can be named by the TFJob's fields.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decoder.h"
#include "ringmaster/tfjob.h"

namespace ringmaster::internal {

inline constexpr char kTfJobSpecs[] = "spec.tfReplicaSpecs";

// One replica type as written in the TFJob.
struct TfJobReplica {
  std::string key;                      // as written ("worker")
  std::vector<size_t> container_order;  // DistributedJob container k = TFJob container order[k]
  int port = kTfJobDefaultPort;
  std::string port_path;  // where the tfjob-port is written, "" for the default
};

class TfJobDecoder : public Decoder {
 public:
  std::vector<ConversionNote> notes;
  TfJob tfjob;
  nlohmann::json dj = nlohmann::json::object();
  std::map<ReplicaType, TfJobReplica> replicas;

  void Note(std::string path, std::string message) { notes.push_back({std::move(path), std::move(message)}); }

  // The TFJob into `dj` (tfjob.cc).
  void Decode(const nlohmann::json& obj);
  // The DistributedJob's port and the notes on the replicas' ports
  // (tfjob_replicas.cc): after Decode.
  void PortAndNotes();
  // A DecodeJob error's path, renamed to the TFJob field it came from.
  std::string TfJobPath(const std::string& p) const;
  // A DecodeJob error about a field this decoder already reported on (the
  // same field, one inside it, or one around it) says nothing new.
  bool Reported(const std::string& path) const;

 private:
  // metadata.annotations: ours become fields, the rest stay.
  nlohmann::json ours = nlohmann::json::object();
  void Annotations(nlohmann::json& meta);
  // The annotations, parsed, as the DistributedJob's fields.
  void AnnotationFields();
  void RunPolicy(const nlohmann::json& spec, nlohmann::json& djspec);

  // tfjob_replicas.cc: spec.tfReplicaSpecs into djspec.replicaSpecs.
  void ReplicaSpecs(const nlohmann::json& spec, nlohmann::json& djspec);
  // The pod template: training-operator's webhook rules (an image in every
  // container, one container named tensorflow) and the tfjob-port.
  void Template(nlohmann::json& dspec, const std::string& path, TfJobReplica& r);
  // The tensorflow container's port named tfjob-port: the type's TF_CONFIG port.
  void Port(const nlohmann::json& c, const std::string& p, TfJobReplica& r);
};

}  // namespace ringmaster::internal
