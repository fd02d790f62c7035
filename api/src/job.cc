// Decoding, defaulting and validation of a DistributedJob from its JSON form.
// Every problem is collected (not just the first) with the path of the field;
// the run policy's fields are run_policy_decode.cc's.
#include "ringmaster/job.h"

#include <algorithm>
#include <set>

#include "decoder.h"
#include "kube_names.h"
#include "ringmaster/ascii_case.h"
#include "ringmaster/enum_names.h"
#include "run_policy_decode.h"

namespace ringmaster {
namespace {

using json = nlohmann::json;
using internal::Decoder;
using internal::IsDns1035Label;
using internal::IsDns1123Subdomain;
using internal::IsSecretKey;

void DecodeKeySecretRef(Decoder& d, const json& comm, const std::string& comm_path,
                        std::optional<KeySecretRef>& out) {
  const json* r = d.Object(comm, "keySecretRef", comm_path, /*required=*/false);
  if (!r) return;
  const std::string path = comm_path + ".keySecretRef";
  d.RejectUnknown(*r, path, {"name", "key"});
  KeySecretRef ref;
  bool ok = true;
  if (auto name = d.String(*r, "name", path)) {
    if (IsDns1123Subdomain(*name)) {
      ref.name = *name;
    } else {
      d.Error(path + ".name",
              "'" + *name +
                  "' must be a Secret name: a lower-case DNS-1123 subdomain (a-z, 0-9, '-', "
                  "'.', starting and ending with a letter or digit) of at most 253 characters");
      ok = false;
    }
  } else {
    if (!r->contains("name") || (*r)["name"].is_null()) d.Error(path + ".name", "required field is missing");
    ok = false;
  }
  if (auto key = d.String(*r, "key", path)) {
    if (IsSecretKey(*key)) {
      ref.key = *key;
    } else {
      d.Error(path + ".key", "'" + *key +
                                 "' must be a Secret key: a-z, A-Z, 0-9, '-', '_', '.' (not '.', '..' or "
                                 "starting with '..'), at most 253 characters");
      ok = false;
    }
  } else if (r->contains("key") && !(*r)["key"].is_null()) {
    ok = false;  // not a string: reported by String
  }
  if (ok) out = std::move(ref);
}

void DecodeReplica(Decoder& d, const json& spec, const std::string& path, ReplicaSpec& out) {
  d.RejectUnknown(spec, path, {"replicas", "restartPolicy", "template"});
  if (auto n = d.Integer(spec, "replicas", path, 0, 100000)) out.replicas = static_cast<int>(*n);
  if (auto p = d.Enum<RestartPolicy>(spec, "restartPolicy", path, RestartPolicyTable())) {
    out.restart_policy = *p;
  }
  const json* tmpl = d.Object(spec, "template", path, /*required=*/true);
  if (!tmpl) return;
  out.pod_template = *tmpl;
  const std::string tpath = path + ".template";
  const json* pod = d.Object(*tmpl, "spec", tpath, /*required=*/true);
  if (!pod) return;
  const std::string cpath = tpath + ".spec.containers";
  auto containers = pod->find("containers");
  if (containers == pod->end() || containers->is_null() || (containers->is_array() && containers->empty())) {
    d.Error(cpath, "a replica needs at least one container");
    return;
  }
  if (!containers->is_array()) {
    d.Error(cpath, "must be a list of containers");
    return;
  }
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    const std::string p = cpath + "[" + std::to_string(i) + "]";
    if (!c.is_object()) {
      d.Error(p, "must be an object");
      continue;
    }
    auto name = d.String(c, "name", p);
    // `name:` with no value (null) is as missing as no name at all.
    if (!name && (!c.contains("name") || c["name"].is_null()))
      d.Error(p + ".name", "required field is missing");
    for (const char* list : {"command", "args"}) {
      auto it = c.find(list);
      if (it == c.end() || it->is_null()) continue;
      if (!it->is_array() ||
          !std::all_of(it->begin(), it->end(), [](const json& a) { return a.is_string(); })) {
        d.Error(p + "." + list, "must be a list of strings");
      }
    }
  }
}

void DecodeReplicaSpecs(Decoder& d, const json& spec, DistributedJob& job) {
  const std::string path = "spec.replicaSpecs";
  const json* specs = d.Object(spec, "replicaSpecs", "spec", /*required=*/true);
  if (!specs) return;
  std::string chief_key;
  for (const auto& [key, value] : specs->items()) {
    const std::string p = path + "." + key;
    // Keys are spelled as in TFJob ("Worker"); "Master" is TFJob's old name for Chief.
    std::optional<ReplicaType> type;
    const EnumTable& types = ReplicaTypeTable();
    for (const auto& e : types.values) {
      if (key == e.name) type = static_cast<ReplicaType>(e.value);
    }
    for (const auto& e : types.aliases) {
      if (key == e.name) type = static_cast<ReplicaType>(e.value);
    }
    if (!type) {
      d.KeyError(
          p, "unknown replica type '" + key + "', expected one of: Chief (or Master), Worker, PS, Evaluator");
      continue;
    }
    if (!value.is_object()) {
      d.Error(p, "must be an object");
      continue;
    }
    if (*type == ReplicaType::kChief) {
      if (!chief_key.empty()) {
        d.Error(p, "more than one chief: both " + chief_key + " and " + key + " are given");
        continue;
      }
      chief_key = key;
    }
    ReplicaSpec rs;
    DecodeReplica(d, value, p, rs);
    if (*type == ReplicaType::kChief && rs.replicas > 1) {
      d.Error(p + ".replicas", "more than one chief: must be 0 or 1, got " + std::to_string(rs.replicas));
    }
    job.replica_specs[*type] = std::move(rs);
  }
  if (specs->empty()) d.Error(path, "at least one replica type is required");
}

void DecodeCommunication(Decoder& d, const json& spec, CommunicationOptions& out,
                         std::optional<KeySecretRef>& key_secret_ref) {
  const std::string path = "spec.communication";
  const json* c = d.Object(spec, "communication", "spec", /*required=*/false);
  if (!c) return;
  d.RejectUnknown(*c, path, {"implementation", "bytesPerPack", "timeoutSeconds", "keySecretRef"});
  DecodeKeySecretRef(d, *c, path, key_secret_ref);
  // Exactly the CRD's enum, so a file runs locally only if the API server
  // would take it too (RINGMASTER_IMPLEMENTATION stays case-insensitive).
  std::vector<std::pair<std::string_view, Implementation>> implementations;  // enums.h's names, as written
  for (const auto& e : ImplementationTable().values)
    implementations.emplace_back(e.name, Implementation(e.value));
  if (auto impl = d.Enum<Implementation>(*c, "implementation", path, implementations)) {
    out.implementation = *impl;
  }
  if (auto b = d.Integer(*c, "bytesPerPack", path, 0, INT64_MAX)) out.bytes_per_pack = *b;
  if (auto t = d.Number(*c, "timeoutSeconds", path, 0)) {
    if (*t > 0) out.timeout_seconds = *t;  // 0 means "no timeout", same as absent
  }
}

}  // namespace

std::string_view ReplicaTypeName(ReplicaType t) {
  return ReplicaTypeTable().NameOf(static_cast<int>(t));
}

std::string_view ReplicaTypeLower(ReplicaType t) {
  // The table's names lowered, once.
  static const std::vector<std::string> lower = [] {
    std::vector<std::string> names;
    for (const auto& e : ReplicaTypeTable().values) names.push_back(AsciiLower(e.name));
    return names;
  }();
  const auto i = static_cast<size_t>(t);
  return i < lower.size() ? std::string_view(lower[i]) : std::string_view();
}

std::optional<ReplicaType> ParseReplicaType(std::string_view text) {
  auto t = ReplicaTypeTable().Parse(text, "replica type");
  if (!t.ok()) return std::nullopt;
  return static_cast<ReplicaType>(*t);
}

std::string_view RestartPolicyName(RestartPolicy p) {
  return RestartPolicyTable().NameOf(static_cast<int>(p));
}

std::string_view CleanPodPolicyName(CleanPodPolicy p) {
  return CleanPodPolicyTable().NameOf(static_cast<int>(p));
}

std::string_view RecoveryPolicyName(RecoveryPolicy p) {
  return RecoveryPolicyTable().NameOf(static_cast<int>(p));
}

const ReplicaSpec* DistributedJob::Find(ReplicaType t) const {
  auto it = replica_specs.find(t);
  return it == replica_specs.end() ? nullptr : &it->second;
}

int DistributedJob::Replicas(ReplicaType t) const {
  const ReplicaSpec* s = Find(t);
  return s ? s->replicas : 0;
}

int DistributedJob::TotalReplicas() const {
  int n = 0;
  for (const auto& [type, spec] : replica_specs) n += spec.replicas;
  return n;
}

LoadedJob DecodeJob(const json& obj) {
  Decoder d;
  LoadedJob out;
  if (!obj.is_object()) {
    d.Error("", "a " + std::string(kKind) + " must be an object");
    out.errors = std::move(d.errors);
    return out;
  }
  DistributedJob job;
  if (auto v = d.String(obj, "apiVersion", ""); !v || *v != kApiVersion) {
    d.Error("apiVersion", "must be " + std::string(kApiVersion));
  }
  if (const json* meta = d.Object(obj, "metadata", "", /*required=*/true)) {
    job.metadata = *meta;
    auto name = d.String(*meta, "name", "metadata");
    if (!name) {
      if (!meta->contains("name") || (*meta)["name"].is_null())
        d.Error("metadata.name", "required field is missing");
    } else if (!IsDns1035Label(*name) || name->size() > 40) {
      // Pod hostnames are <name>-evaluator-<index> and must stay within 63.
      d.Error("metadata.name", "'" + *name +
                                   "' must be a lower-case DNS label (a-z, 0-9, '-', starting with a letter) "
                                   "of at most 40 characters");
    } else {
      job.name = *name;
    }
    job.namespace_ = d.String(*meta, "namespace", "metadata").value_or("");
    // Kubernetes' rule for namespaces (a DNS-1123 label); it also goes into
    // every TF_CONFIG address.
    if (!job.namespace_.empty() &&
        (job.namespace_.size() > 63 || job.namespace_.find('.') != std::string::npos ||
         !IsDns1123Subdomain(job.namespace_))) {
      d.Error("metadata.namespace",
              "'" + job.namespace_ +
                  "' must be a lower-case DNS label (a-z, 0-9, '-', starting and ending "
                  "with a letter or digit) of at most 63 characters");
      job.namespace_.clear();
    }
    if (auto a = meta->find("annotations"); a != meta->end() && a->is_object()) {
      if (auto v = a->find(kTfConfigAnnotation);
          v != a->end() && *v != kTfConfigInline && *v != kTfConfigConfigMap) {
        d.Error(std::string("metadata.annotations.") + kTfConfigAnnotation,
                std::string("must be ") + kTfConfigInline + " or " + kTfConfigConfigMap + ", got " +
                    v->dump(-1, ' ', false, json::error_handler_t::replace));
      }
    }
  }
  if (const json* spec = d.Object(obj, "spec", "", /*required=*/true)) {
    d.RejectUnknown(*spec, "spec", {"replicaSpecs", "communication", "runPolicy", "successPolicy", "port"});
    DecodeReplicaSpecs(d, *spec, job);
    DecodeCommunication(d, *spec, job.communication, job.key_secret_ref);
    internal::DecodeRunPolicy(d, *spec, job);
    if (auto p = d.Enum<SuccessPolicy>(
            *spec, "successPolicy", "spec",
            {{"", SuccessPolicy::kDefault}, {"AllWorkers", SuccessPolicy::kAllWorkers}})) {
      job.success_policy = *p;
    }
    if (auto p = d.Integer(*spec, "port", "spec", 1, 65535)) job.port = static_cast<int>(*p);
    if (spec->contains("replicaSpecs") &&
        job.Replicas(ReplicaType::kChief) + job.Replicas(ReplicaType::kWorker) == 0 && d.errors.empty()) {
      d.Error("spec.replicaSpecs",
              "the collective group is empty: a Chief or at least one Worker is required");
    }
  }
  out.errors = std::move(d.errors);
  if (out.errors.empty()) out.job = std::move(job);
  return out;
}

}  // namespace ringmaster