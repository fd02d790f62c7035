// Decoding, defaulting and validation of a DistributedJob from its JSON form.
// Every problem is collected (not just the first) with the path of the field.
#include "ringmaster/job.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "ringmaster/ascii_case.h"
#include "ringmaster/enum_names.h"
#include "ringmaster/join_list.h"

namespace ringmaster {
namespace {

using json = nlohmann::json;

// Collects errors while reading typed fields out of JSON objects.
class Decoder {
 public:
  std::vector<FieldError> errors;

  void Error(const std::string& path, std::string message) { errors.push_back({path, std::move(message)}); }
  void KeyError(const std::string& path, std::string message) {
    errors.push_back({path, std::move(message), 0, 0, /*at_key=*/true});
  }

  // Reports fields of `obj` that are not in `known`: a typo must not be
  // silently ignored (kubectl's strict field validation does the same).
  void RejectUnknown(const json& obj, const std::string& path,
                     std::initializer_list<std::string_view> known) {
    for (const auto& [key, value] : obj.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        KeyError(Join(path, key), "unknown field, expected one of: " + JoinList(known));
      }
    }
  }

  const json* Object(const json& parent, const std::string& key, const std::string& path, bool required) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) {
      if (required) Error(Join(path, key), "required field is missing");
      return nullptr;
    }
    if (!it->is_object()) {
      Error(Join(path, key), "must be an object, got " + std::string(it->type_name()));
      return nullptr;
    }
    return &*it;
  }

  std::optional<int64_t> Integer(const json& parent, const std::string& key, const std::string& path,
                                 int64_t min, int64_t max) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return std::nullopt;
    const std::string p = Join(path, key);
    int64_t v = 0;
    if (it->is_number_integer()) {
      v = it->get<int64_t>();
    } else if (it->is_number_float() && std::trunc(it->get<double>()) == it->get<double>() &&
               std::abs(it->get<double>()) < 9e15) {
      v = static_cast<int64_t>(it->get<double>());  // JSON writers may emit 2.0
    } else {
      Error(p, "must be an integer, got " + Describe(*it));
      return std::nullopt;
    }
    if (v < min || v > max) {
      Error(p, RangeMessage(min, max) + ", got " + std::to_string(v));
      return std::nullopt;
    }
    return v;
  }

  std::optional<double> Number(const json& parent, const std::string& key, const std::string& path,
                               double min) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return std::nullopt;
    const std::string p = Join(path, key);
    if (!it->is_number()) {
      Error(p, "must be a number, got " + Describe(*it));
      return std::nullopt;
    }
    double v = it->get<double>();
    if (!(v >= min) || std::isinf(v)) {
      Error(p, "must be >= " + Num(min) + ", got " + Describe(*it));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::string> String(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) {
      Error(Join(path, key), "must be a string, got " + Describe(*it));
      return std::nullopt;
    }
    return it->get<std::string>();
  }

  std::optional<bool> Bool(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) {
      Error(Join(path, key), "must be true or false, got " + Describe(*it));
      return std::nullopt;
    }
    return it->get<bool>();
  }

  // A string field restricted to `allowed` (exact spelling, as the CRD's enum).
  template <typename E>
  std::optional<E> Enum(const json& parent, const std::string& key, const std::string& path,
                        const std::vector<std::pair<std::string_view, E>>& allowed) {
    auto s = String(parent, key, path);
    if (!s) return std::nullopt;
    for (const auto& [name, value] : allowed) {
      if (*s == name) return value;
    }
    const std::string names = JoinList(
        allowed, [](const auto& a) { return a.first.empty() ? std::string("\"\"") : std::string(a.first); });
    Error(Join(path, key), "unknown value '" + *s + "', expected one of: " + names);
    return std::nullopt;
  }
  // The same for an enum of enums.h: its table's names, no aliases.
  template <typename E>
  std::optional<E> Enum(const json& parent, const std::string& key, const std::string& path,
                        const EnumTable& table) {
    std::vector<std::pair<std::string_view, E>> allowed;
    for (const auto& e : table.values) allowed.emplace_back(e.name, static_cast<E>(e.value));
    return Enum(parent, key, path, allowed);
  }

  static std::string Join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

 private:
  static std::string Describe(const json& v) {
    // YAML text may hold bytes that are not UTF-8: replaced, not thrown on.
    return v.is_string() ? "'" + v.get<std::string>() + "'"
                         : v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  static std::string Num(double d) {
    return d == std::trunc(d) ? std::to_string(static_cast<int64_t>(d)) : std::to_string(d);
  }
  static std::string RangeMessage(int64_t min, int64_t max) {
    if (max == INT64_MAX) return "must be >= " + std::to_string(min);
    return "must be between " + std::to_string(min) + " and " + std::to_string(max);
  }
};

// A DNS-1035 label: services are named after the job and must be one.
bool IsDns1035Label(const std::string& s) {
  if (s.empty() || s.size() > 63 || !std::islower(static_cast<unsigned char>(s.front()))) return false;
  if (s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
           c == '-';
  });
}

// A DNS-1123 subdomain (Secret names): at most 253 characters, dot-separated
// labels of a-z, 0-9 and '-', each starting and ending with a letter or digit.
bool IsDns1123Subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('.', start);
    if (end == std::string::npos) end = s.size();
    const std::string_view label(s.data() + start, end - start);
    auto alnum = [](char c) {
      return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
    };
    if (label.empty() || !alnum(label.front()) || !alnum(label.back())) return false;
    if (!std::all_of(label.begin(), label.end(), [&](char c) { return alnum(c) || c == '-'; })) return false;
    start = end + 1;
  }
  return true;
}

// Kubernetes' rule for Secret (and ConfigMap) keys: [-._a-zA-Z0-9]+, at most
// 253, and not ".", ".." or anything starting with "..".
bool IsSecretKey(const std::string& s) {
  if (s.empty() || s.size() > 253 || s == "." || s.rfind("..", 0) == 0) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  });
}

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

void DecodeRunPolicy(Decoder& d, const json& spec, RunPolicy& out) {
  const std::string path = "spec.runPolicy";
  const json* r = d.Object(spec, "runPolicy", "spec", /*required=*/false);
  if (!r) return;
  d.RejectUnknown(*r, path,
                  {"backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "cleanPodPolicy",
                   "suspend", "schedulingPolicy", "recovery", "elastic"});
  if (auto v = d.Integer(*r, "backoffLimit", path, 0, INT32_MAX)) out.backoff_limit = static_cast<int>(*v);
  out.active_deadline_seconds = d.Integer(*r, "activeDeadlineSeconds", path, 1, INT64_MAX);
  out.ttl_seconds_after_finished = d.Integer(*r, "ttlSecondsAfterFinished", path, 0, INT64_MAX);
  if (auto p = d.Enum<CleanPodPolicy>(*r, "cleanPodPolicy", path, CleanPodPolicyTable())) {
    out.clean_pod_policy = *p;
  }
  if (auto s = d.Bool(*r, "suspend", path)) out.suspend = *s;
  if (auto p = d.Enum<RecoveryPolicy>(*r, "recovery", path, RecoveryPolicyTable())) {
    out.recovery = *p;
  }
}

// spec.runPolicy.elastic. After the replica specs and the recovery policy:
// minWorkers is bounded by the workers, and only InPlace keeps survivors.
void DecodeElastic(Decoder& d, const json& spec, DistributedJob& job) {
  const std::string path = "spec.runPolicy.elastic";
  const json* run =
      spec.contains("runPolicy") && spec["runPolicy"].is_object() ? &spec["runPolicy"] : nullptr;
  const json* e = run ? d.Object(*run, "elastic", "spec.runPolicy", /*required=*/false) : nullptr;
  if (!e) return;
  d.RejectUnknown(*e, path, {"minWorkers", "rejoinTimeoutSeconds", "replacementTimeoutSeconds"});
  ElasticPolicy out;
  const int workers = job.Replicas(ReplicaType::kWorker);
  if (auto m = d.Integer(*e, "minWorkers", path, 1, INT32_MAX)) {
    if (*m > workers) {
      d.Error(path + ".minWorkers", "must be at most the job's " + std::to_string(workers) +
                                        " Worker replicas, got " + std::to_string(*m));
    }
    out.min_workers = static_cast<int>(*m);
  } else if (!e->contains("minWorkers")) {
    d.Error(path + ".minWorkers", "is required");
  }
  if (auto t = d.Number(*e, "rejoinTimeoutSeconds", path, 0)) {
    if (*t > 0) {
      out.rejoin_timeout_seconds = *t;
    } else {
      d.Error(path + ".rejoinTimeoutSeconds", "must be > 0, got 0");
    }
  }
  out.replacement_timeout_seconds = d.Integer(*e, "replacementTimeoutSeconds", path, 1, INT64_MAX);
  if (job.run_policy.recovery != RecoveryPolicy::kInPlace) {
    d.Error(path, "needs spec.runPolicy.recovery: InPlace (without it a failure restarts every member)");
  }
  job.run_policy.elastic = out;
}

// A LocalQueue's name also becomes a label value on every pod: a DNS-1123
// subdomain of at most 63 characters satisfies both rules.
bool IsQueueName(const std::string& s) {
  return s.size() <= 63 && IsDns1123Subdomain(s);
}

// spec.runPolicy.schedulingPolicy, and the job's kueue.x-k8s.io/queue-name
// label (Kueue's convention). After the replica specs: minAvailable is
// bounded by the job's pods.
void DecodeSchedulingPolicy(Decoder& d, const json& spec, DistributedJob& job) {
  const std::string path = "spec.runPolicy.schedulingPolicy";
  SchedulingPolicy& out = job.run_policy.scheduling_policy;
  const json* run =
      spec.contains("runPolicy") && spec["runPolicy"].is_object() ? &spec["runPolicy"] : nullptr;
  if (const json* p =
          run ? d.Object(*run, "schedulingPolicy", "spec.runPolicy", /*required=*/false) : nullptr) {
    d.RejectUnknown(*p, path, {"queue", "priorityClass", "minAvailable", "scheduleTimeoutSeconds"});
    if (auto q = d.String(*p, "queue", path)) {
      if (IsQueueName(*q)) {
        out.queue = *q;
      } else {
        d.Error(path + ".queue", "'" + *q +
                                     "' is not a LocalQueue name: lower-case letters, digits, '-' and '.', "
                                     "starting and ending with a letter or digit, at most 63 characters");
      }
    }
    if (auto c = d.String(*p, "priorityClass", path)) {
      if (IsDns1123Subdomain(*c)) {
        out.priority_class = *c;
      } else {
        d.Error(path + ".priorityClass", "'" + *c + "' is not a PriorityClass name (a DNS-1123 subdomain)");
      }
    }
    const int pods = job.TotalReplicas();
    if (auto m = d.Integer(*p, "minAvailable", path, 1, INT32_MAX)) {
      if (pods > 0 && *m > pods) {
        d.Error(path + ".minAvailable",
                "must be at most the job's " + std::to_string(pods) + " pods, got " + std::to_string(*m));
      } else {
        out.min_available = static_cast<int>(*m);
      }
    }
    out.schedule_timeout_seconds = d.Integer(*p, "scheduleTimeoutSeconds", path, 1, INT64_MAX);
  }
  const json& labels = job.metadata.contains("labels") ? job.metadata["labels"] : json();
  if (!labels.is_object() || !labels.contains(kKueueQueueLabel)) return;
  const std::string label_path = std::string("metadata.labels.") + kKueueQueueLabel;
  const json& label = labels[kKueueQueueLabel];
  if (!label.is_string() || !IsQueueName(label.get<std::string>())) {
    d.Error(label_path, "must name a LocalQueue (lower-case letters, digits, '-' and '.', at most 63), got " +
                            label.dump(-1, ' ', false, json::error_handler_t::replace));
  } else if (out.queue.empty()) {
    out.queue = label.get<std::string>();
  } else if (out.queue != label.get<std::string>()) {
    d.Error(path + ".queue", "'" + out.queue + "' disagrees with the job's label " + kKueueQueueLabel +
                                 " ('" + label.get<std::string>() +
                                 "'): give the queue once, or the same in both");
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
    DecodeRunPolicy(d, *spec, job.run_policy);
    DecodeElastic(d, *spec, job);
    DecodeSchedulingPolicy(d, *spec, job);
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
