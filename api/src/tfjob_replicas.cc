// The replica-spec checks of a TFJob (tfjob_decoder.h): spec.tfReplicaSpecs
// in training-operator's terms (its type keys, its webhook's rules for the
// pod template, the tfjob-port) and into the DistributedJob's replicaSpecs.
#include <algorithm>
#include <optional>

#include "ringmaster/ascii_case.h"
#include "tfjob_decoder.h"

namespace ringmaster::internal {
namespace {

using json = nlohmann::json;

constexpr const char* kSpecs = kTfJobSpecs;

// A TFJob's replica type key, any case (training-operator camel-cases it).
struct TypeKey {
  ReplicaType type;
  std::string_view name;  // training-operator's spelling
};
constexpr TypeKey kTypeKeys[] = {{ReplicaType::kChief, "Chief"},
                                 {ReplicaType::kChief, "Master"},
                                 {ReplicaType::kWorker, "Worker"},
                                 {ReplicaType::kPS, "PS"},
                                 {ReplicaType::kEvaluator, "Evaluator"}};

}  // namespace

void TfJobDecoder::ReplicaSpecs(const json& spec, json& djspec) {
  const json* specs = Object(spec, "tfReplicaSpecs", "spec", /*required=*/true);
  if (!specs) return;
  json& out = djspec["replicaSpecs"];
  out = json::object();
  for (const auto& [key, value] : specs->items()) {
    const std::string path = std::string(kSpecs) + "." + key;
    const TypeKey* type = nullptr;
    for (const auto& t : kTypeKeys) {
      if (EqualFold(key, t.name)) type = &t;
    }
    if (!type) {
      KeyError(path,
               "unknown replica type '" + key + "', expected one of: Chief, Master, Worker, PS, Evaluator");
      continue;
    }
    if (auto seen = replicas.find(type->type); seen != replicas.end()) {
      Error(path, type->type == ReplicaType::kChief ? "more than one Chief or Master: both " +
                                                          seen->second.key + " and " + key + " are given"
                                                    : "given twice: both " + seen->second.key + " and " +
                                                          key + " are " + std::string(type->name));
      continue;
    }
    if (!value.is_object()) {
      Error(path, "must be an object with a template, got " + std::string(value.type_name()));
      continue;
    }
    TfJobReplica r{key, {}, kTfJobDefaultPort, ""};
    json dspec = value;
    RejectUnknown(value, path, {"replicas", "restartPolicy", "template"});
    // restartPolicy "" is training-operator's unset: Never.
    if (auto p = dspec.find("restartPolicy");
        p != dspec.end() && p->is_string() && p->get_ref<const std::string&>().empty())
      dspec.erase(p);
    Template(dspec, path, r);
    out[std::string(ReplicaTypeName(type->type))] = std::move(dspec);
    if (type->name == std::string_view("Master")) {
      tfjob.chief_is_master = true;
      Note(path,
           "becomes the DistributedJob's Chief: its TF_CONFIG task type and its pod's name say chief, not "
           "master");
    }
    if (type->type == ReplicaType::kEvaluator) {
      Note(path,
           "the DistributedJob leaves the evaluator out of every TF_CONFIG cluster (training-operator lists "
           "it)");
    }
    replicas.emplace(type->type, std::move(r));
  }
  if (replicas.empty() && errors.empty()) Error(kSpecs, "at least one replica type is required");
}

void TfJobDecoder::Template(json& dspec, const std::string& path, TfJobReplica& r) {
  auto t = dspec.find("template");
  if (t == dspec.end() || !t->is_object()) return;  // DecodeJob says what is wrong
  auto s = t->find("spec");
  if (s == t->end() || !s->is_object()) return;
  auto cs = s->find("containers");
  if (cs == s->end() || !cs->is_array() || cs->empty()) return;
  const std::string cpath = path + ".template.spec.containers";
  std::optional<size_t> tf;
  for (size_t i = 0; i < cs->size(); ++i) {
    const json& c = (*cs)[i];
    if (!c.is_object()) continue;
    const std::string p = cpath + "[" + std::to_string(i) + "]";
    auto image = c.find("image");
    if (image == c.end() || image->is_null() || (image->is_string() && image->get<std::string>().empty())) {
      Error(p + ".image", "required field is missing");
    } else if (!image->is_string()) {
      Error(p + ".image", "must be a string, got " + Describe(*image));
    }
    auto name = c.find("name");
    if (tf || name == c.end() || !name->is_string() || *name != kTfJobContainerName) continue;
    tf = i;
    Port(c, p, r);
  }
  if (!tf) {
    Error(cpath, std::string("needs a container named ") + kTfJobContainerName +
                     " (training-operator gives TF_CONFIG to that container alone)");
    return;
  }
  for (size_t i = 0; i < cs->size(); ++i) r.container_order.push_back(i);
  if (cs->size() > 1) {
    Note(cpath, std::string("the DistributedJob gives TF_CONFIG to every container (training-operator: to ") +
                    kTfJobContainerName + " alone)");
  }
  if (*tf != 0) {
    // `ringmaster run` runs a replica's first container.
    std::rotate(r.container_order.begin(), r.container_order.begin() + *tf,
                r.container_order.begin() + *tf + 1);
    json moved = json::array();
    for (size_t i : r.container_order) moved.push_back((*cs)[i]);
    *cs = std::move(moved);
    Note(cpath + "[" + std::to_string(*tf) + "]",
         std::string("the ") + kTfJobContainerName +
             " container is listed first in the DistributedJob (ringmaster run starts the first one)");
  }
}

void TfJobDecoder::Port(const json& c, const std::string& p, TfJobReplica& r) {
  auto ports = c.find("ports");
  if (ports == c.end() || !ports->is_array()) return;
  for (size_t i = 0; i < ports->size(); ++i) {
    const json& port = (*ports)[i];
    if (!port.is_object() || port.value("name", json()) != kTfJobPortName) continue;
    const std::string pp = p + ".ports[" + std::to_string(i) + "].containerPort";
    auto v = port.find("containerPort");
    if (v == port.end() || !v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > 65535) {
      Error(pp, "must be a port number between 1 and 65535, got " +
                    (v == port.end() ? std::string("nothing") : Describe(*v)));
      return;
    }
    r.port = static_cast<int>(v->get<int64_t>());
    r.port_path = pp;
    return;
  }
}

void TfJobDecoder::PortAndNotes() {
  if (replicas.empty() || !dj["spec"].is_object()) return;
  const TfJobReplica* group = nullptr;
  for (ReplicaType t :
       {ReplicaType::kChief, ReplicaType::kWorker, ReplicaType::kPS, ReplicaType::kEvaluator}) {
    if (auto it = replicas.find(t); it != replicas.end() && !group) group = &it->second;
  }
  dj["spec"]["port"] = group->port;
  for (const auto& [type, r] : replicas) {
    tfjob.ports[type] = r.port;
    if (r.port != group->port) {
      Note(r.port_path.empty() ? std::string(kSpecs) + "." + r.key : r.port_path,
           "the DistributedJob has one port for every replica: " + std::to_string(group->port) + ", not " +
               std::to_string(r.port));
    }
  }
  Note(kSpecs,
       "the DistributedJob's pods are reached through one headless Service for the job "
       "(<job>-worker-0.<job>.<namespace>.svc) and labelled ringmaster.io/*; training-operator creates a "
       "Service per replica (<job>-worker-0.<namespace>.svc) and labels training.kubeflow.org/*");
}

}  // namespace ringmaster::internal
