// TFJob (kubeflow.org/v1) -> DistributedJob. The TFJob is checked in its own
// terms (training-operator's field names, defaults and webhook rules, and
// what Ringmaster cannot honour), translated into a DistributedJob object,
// and that object goes through DecodeJob like any other: its errors are
// renamed back to the TFJob field (or annotation) they came from.
#include "ringmaster/tfjob.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>

#include "ringmaster/ascii_case.h"
#include "ringmaster/join_list.h"
#include "yaml_document.h"
#include "yaml_emit.h"

namespace ringmaster {
namespace {

using json = nlohmann::json;

constexpr char kSpecs[] = "spec.tfReplicaSpecs";
constexpr char kDjSpecs[] = "spec.replicaSpecs";

std::string Annotation(std::string_view name) {
  return "metadata.annotations." + std::string(name);
}

std::string Describe(const json& v) {
  return v.is_string() ? "'" + v.get<std::string>() + "'"
                       : v.dump(-1, ' ', false, json::error_handler_t::replace);
}

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

// Each annotation and the DistributedJob field it sets.
struct AnnotationField {
  const char* name;
  const char* path;  // in the DistributedJob
  enum Kind { kString, kInteger, kNumber } kind;
};
constexpr AnnotationField kAnnotationFields[] = {
    {kTfJobAnnotationImplementation, "spec.communication.implementation", AnnotationField::kString},
    {kTfJobAnnotationBytesPerPack, "spec.communication.bytesPerPack", AnnotationField::kInteger},
    {kTfJobAnnotationTimeoutSeconds, "spec.communication.timeoutSeconds", AnnotationField::kNumber},
    {kTfJobAnnotationKeySecretName, "spec.communication.keySecretRef.name", AnnotationField::kString},
    {kTfJobAnnotationKeySecretKey, "spec.communication.keySecretRef.key", AnnotationField::kString},
    {kTfJobAnnotationRecovery, "spec.runPolicy.recovery", AnnotationField::kString},
    {kTfJobAnnotationMinWorkers, "spec.runPolicy.elastic.minWorkers", AnnotationField::kInteger},
    {kTfJobAnnotationRejoinTimeout, "spec.runPolicy.elastic.rejoinTimeoutSeconds", AnnotationField::kNumber},
    {kTfJobAnnotationReplacementTimeout, "spec.runPolicy.elastic.replacementTimeoutSeconds",
     AnnotationField::kInteger},
};

// Sets obj at a dotted path, making the objects on the way.
void SetPath(json& obj, std::string_view path, json value) {
  json* at = &obj;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!at->is_object()) *at = json::object();
    if (dot == std::string_view::npos) {
      (*at)[key] = std::move(value);
      return;
    }
    at = &(*at)[key];
    start = dot + 1;
  }
}

// One replica type as written in the TFJob.
struct Replica {
  std::string key;                      // as written ("worker")
  std::vector<size_t> container_order;  // DistributedJob container k = TFJob container order[k]
  int port = kTfJobDefaultPort;
  std::string port_path;  // where the tfjob-port is written, "" for the default
};

class TfJobDecoder {
 public:
  std::vector<FieldError> errors;
  std::vector<ConversionNote> notes;

  void Error(std::string path, std::string message) {
    errors.push_back({std::move(path), std::move(message)});
  }
  void KeyError(std::string path, std::string message) {
    errors.push_back({std::move(path), std::move(message), 0, 0, /*at_key=*/true});
  }
  void Note(std::string path, std::string message) { notes.push_back({std::move(path), std::move(message)}); }

  // A DecodeJob error about a field this decoder already reported on (the
  // same field, one inside it, or one around it) says nothing new.
  bool Reported(const std::string& path) const {
    const auto within = [](const std::string& inner, const std::string& outer) {
      return inner.rfind(outer, 0) == 0 &&
             (inner.size() == outer.size() || inner[outer.size()] == '.' || inner[outer.size()] == '[');
    };
    return std::any_of(errors.begin(), errors.end(),
                       [&](const FieldError& e) { return within(path, e.path) || within(e.path, path); });
  }

  void RejectUnknown(const json& obj, const std::string& path, std::initializer_list<std::string_view> known,
                     std::string_view why = "") {
    for (const auto& [key, value] : obj.items()) {
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      KeyError(path + "." + key, "unknown field, expected one of: " + JoinList(known) + std::string(why));
    }
  }

  // An object field: nullptr when absent or null (an error when required),
  // or when not an object (an error).
  const json* Object(const json& parent, const std::string& key, const std::string& path, bool required) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) {
      if (required) Error(path + "." + key, "required field is missing");
      return nullptr;
    }
    if (!it->is_object()) {
      Error(path + "." + key, "must be an object, got " + std::string(it->type_name()));
      return nullptr;
    }
    return &*it;
  }

  TfJob tfjob;
  json dj = json::object();
  std::map<ReplicaType, Replica> replicas;

  void Decode(const json& obj) {
    if (!obj.is_object()) {
      Error("", "a TFJob must be an object");
      return;
    }
    auto api = obj.find("apiVersion");
    if (api == obj.end() || !api->is_string() || *api != kTfJobApiVersion) {
      Error("apiVersion", std::string("must be ") + kTfJobApiVersion);
    }
    dj["apiVersion"] = kApiVersion;
    dj["kind"] = kKind;
    // metadata: checked by DecodeJob (the same rules), less our annotations.
    if (auto m = obj.find("metadata"); m != obj.end()) {
      dj["metadata"] = *m;
      if (m->is_object()) Annotations(dj["metadata"]);
    }
    const json* spec = Object(obj, "spec", "", /*required=*/true);
    if (!spec) return;
    RejectUnknown(*spec, "spec", {"tfReplicaSpecs", "runPolicy", "successPolicy", "enableDynamicWorker"});
    json& djspec = dj["spec"];
    djspec = json::object();
    if (auto it = spec->find("enableDynamicWorker"); it != spec->end() && !it->is_null()) {
      if (it->is_boolean()) {
        tfjob.enable_dynamic_worker = it->get<bool>();
      } else {
        Error("spec.enableDynamicWorker", "must be true or false, got " + Describe(*it));
      }
    }
    if (tfjob.enable_dynamic_worker) {
      Note("spec.enableDynamicWorker",
           "not carried over: in the DistributedJob every task's TF_CONFIG names the whole cluster, and a "
           "failed Worker fails the job as its restartPolicy says");
    }
    // successPolicy: "" (the default) or AllWorkers, as in a DistributedJob.
    if (auto it = spec->find("successPolicy"); it != spec->end() && !it->is_null()) {
      djspec["successPolicy"] = *it;
    }
    ReplicaSpecs(*spec, djspec);
    RunPolicy(*spec, djspec);
    AnnotationFields();
  }

  // metadata.annotations: ours become fields, the rest stay.
  json ours = json::object();
  void Annotations(json& meta) {
    auto it = meta.find("annotations");
    if (it == meta.end() || it->is_null()) return;
    if (!it->is_object()) {
      Error("metadata.annotations", "must be an object of strings, got " + std::string(it->type_name()));
      return;
    }
    for (auto a = it->begin(); a != it->end();) {
      // How the pods get TF_CONFIG: a DistributedJob's annotation too, kept
      // as it is (DecodeJob checks its value).
      if (a.key().rfind(kTfJobAnnotationPrefix, 0) != 0 || a.key() == kTfConfigAnnotation) {
        if (!a->is_string())
          Error(Annotation(a.key()), "an annotation must be a string, got " + Describe(*a));
        ++a;
        continue;
      }
      const bool known = std::any_of(std::begin(kAnnotationFields), std::end(kAnnotationFields),
                                     [&](const AnnotationField& f) { return a.key() == f.name; });
      if (!known) {
        const std::string names =
            JoinList(kAnnotationFields, [](const AnnotationField& f) { return f.name; }) + ", " +
            kTfConfigAnnotation;
        KeyError(Annotation(a.key()), "unknown Ringmaster annotation, expected one of: " + names);
      } else if (!a->is_string()) {
        Error(Annotation(a.key()), "an annotation must be a string (quote it), got " + Describe(*a));
      } else {
        ours[a.key()] = *a;
      }
      a = it->erase(a);
    }
    if (it->empty()) meta.erase(it);
  }

  // The annotations, parsed, as the DistributedJob's fields.
  void AnnotationFields() {
    auto has = [&](const char* name) { return ours.contains(name); };
    const bool elastic = has(kTfJobAnnotationMinWorkers) || has(kTfJobAnnotationRejoinTimeout) ||
                         has(kTfJobAnnotationReplacementTimeout);
    if (elastic && !(has(kTfJobAnnotationRecovery) && ours[kTfJobAnnotationRecovery] == "InPlace")) {
      for (const char* name :
           {kTfJobAnnotationMinWorkers, kTfJobAnnotationRejoinTimeout, kTfJobAnnotationReplacementTimeout}) {
        if (has(name)) {
          Error(Annotation(name), std::string("needs the annotation ") + kTfJobAnnotationRecovery +
                                      ": InPlace (without it a failure restarts every member)");
          break;
        }
      }
    }
    if (has(kTfJobAnnotationKeySecretKey) && !has(kTfJobAnnotationKeySecretName)) {
      Error(Annotation(kTfJobAnnotationKeySecretKey),
            std::string("needs the annotation ") + kTfJobAnnotationKeySecretName + " (the Secret's name)");
    }
    const bool in_place = has(kTfJobAnnotationRecovery) && ours[kTfJobAnnotationRecovery] == "InPlace";
    if (!dj["spec"].is_object()) return;
    for (const auto& f : kAnnotationFields) {
      if (!has(f.name)) continue;
      if (!in_place && std::string_view(f.path).rfind("spec.runPolicy.elastic", 0) == 0) continue;
      const std::string text = ours[f.name].get<std::string>();
      const std::string path = Annotation(f.name);
      json value = text;
      if (f.kind == AnnotationField::kInteger) {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || p != text.data() + text.size()) {
          Error(path, "must be an integer, got '" + text + "'");
          continue;
        }
        value = v;
      } else if (f.kind == AnnotationField::kNumber) {
        double v = 0;
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) {
          Error(path, "must be a number, got '" + text + "'");
          continue;
        }
        value = v;
      }
      SetPath(dj, f.path, std::move(value));
    }
  }

  void ReplicaSpecs(const json& spec, json& djspec) {
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
      Replica r{key, {}, kTfJobDefaultPort, ""};
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
        Note(
            path,
            "the DistributedJob leaves the evaluator out of every TF_CONFIG cluster (training-operator lists "
            "it)");
      }
      replicas.emplace(type->type, std::move(r));
    }
    if (replicas.empty() && errors.empty()) Error(kSpecs, "at least one replica type is required");
  }

  // The pod template: training-operator's webhook rules (an image in every
  // container, one container named tensorflow) and the tfjob-port.
  void Template(json& dspec, const std::string& path, Replica& r) {
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
      Note(cpath,
           std::string("the DistributedJob gives TF_CONFIG to every container (training-operator: to ") +
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

  // The tensorflow container's port named tfjob-port: the type's TF_CONFIG port.
  void Port(const json& c, const std::string& p, Replica& r) {
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

  void RunPolicy(const json& spec, json& djspec) {
    json run = json::object();
    if (const json* r = Object(spec, "runPolicy", "spec", /*required=*/false)) {
      run = *r;
      const std::string path = "spec.runPolicy";
      RejectUnknown(
          *r, path,
          {"cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit",
           "schedulingPolicy", "suspend", "managedBy"},
          std::string(" (Ringmaster's own settings are annotations: ") + kTfJobAnnotationRecovery + ", ...)");
      for (const char* ours_only : {"recovery", "elastic"}) run.erase(ours_only);
      if (auto m = run.find("managedBy"); m != run.end()) {
        if (!m->is_null()) {
          if (!m->is_string() || (*m != "" && *m != kManagedByKubeflow && *m != kManagedByMultiKueue)) {
            Error(path + ".managedBy", "unknown value " + Describe(*m) + ", expected one of: " +
                                           kManagedByKubeflow + ", " + kManagedByMultiKueue);
          } else {
            tfjob.managed_by = m->get<std::string>();
          }
        }
        run.erase(m);
      }
      if (tfjob.managed_by == kManagedByMultiKueue) {
        Note(path + ".managedBy",
             "not carried over: the DistributedJob is run by Ringmaster's operator, not left to MultiKueue");
      }
      if (auto s = run.find("schedulingPolicy"); s != run.end() && s->is_object()) {
        const std::string spath = path + ".schedulingPolicy";
        RejectUnknown(*s, spath,
                      {"minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds"});
        if (s->contains("minResources") && !(*s)["minResources"].is_null()) {
          Error(spath + ".minResources",
                "not supported: Ringmaster gangs the job's pods by count (minAvailable) or through a Kueue "
                "queue");
        }
        s->erase("minResources");
        // Go's omitempty: "" is unset.
        for (const char* k : {"queue", "priorityClass"}) {
          if (auto q = s->find(k);
              q != s->end() && q->is_string() && q->get_ref<const std::string&>().empty())
            s->erase(q);
        }
        if (s->contains("queue")) {
          Note(spath + ".queue", "names a Kueue LocalQueue: the job's pods are admitted as one pod group");
        }
      }
    }
    // training-operator's default is None (a DistributedJob's is Running).
    auto c = run.find("cleanPodPolicy");
    if (c == run.end() || c->is_null() || (c->is_string() && c->get_ref<const std::string&>().empty()))
      run["cleanPodPolicy"] = "None";
    djspec["runPolicy"] = std::move(run);
  }

  // The DistributedJob's port: the collective group's tfjob-port.
  void PortAndNotes() {
    if (replicas.empty() || !dj["spec"].is_object()) return;
    const Replica* group = nullptr;
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

  // A DecodeJob error's path, renamed to the TFJob field it came from.
  std::string TfJobPath(const std::string& p) const {
    for (const auto& f : kAnnotationFields) {
      if (p == f.path) return Annotation(f.name);
    }
    if (p == "spec.communication.keySecretRef") return Annotation(kTfJobAnnotationKeySecretName);
    if (p == "spec.runPolicy.elastic") return Annotation(kTfJobAnnotationMinWorkers);
    if (p.rfind("spec.communication", 0) == 0) return "metadata.annotations";
    if (p == "spec.port") {
      for (const auto& [type, r] : replicas) {
        if (!r.port_path.empty()) return r.port_path;
      }
      return kSpecs;
    }
    if (p == kDjSpecs) return kSpecs;
    const std::string prefix = std::string(kDjSpecs) + ".";
    if (p.rfind(prefix, 0) != 0) return p;
    const size_t end = p.find('.', prefix.size());
    const std::string dkey =
        p.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
    std::string rest = end == std::string::npos ? "" : p.substr(end);
    auto type = ParseReplicaType(dkey);
    auto it = type ? replicas.find(*type) : replicas.end();
    if (it == replicas.end()) return p;
    // Containers were reordered (tensorflow first): name the written index.
    const std::string cs = ".template.spec.containers[";
    if (rest.rfind(cs, 0) == 0) {
      size_t k = 0;
      const char* b = rest.data() + cs.size();
      auto [q, ec] = std::from_chars(b, rest.data() + rest.size(), k);
      if (ec == std::errc() && k < it->second.container_order.size()) {
        rest = cs + std::to_string(it->second.container_order[k]) + rest.substr(q - rest.data());
      }
    }
    return std::string(kSpecs) + "." + it->second.key + rest;
  }
};

}  // namespace

LoadedTfJob DecodeTfJob(const json& object) {
  TfJobDecoder d;
  LoadedTfJob out;
  d.Decode(object);
  d.PortAndNotes();
  if (object.is_object()) {
    LoadedJob loaded = DecodeJob(d.dj);
    const size_t own = d.errors.size();
    for (auto& e : loaded.errors) {
      e.path = d.TfJobPath(e.path);
      if (!d.Reported(e.path)) d.errors.push_back(std::move(e));
    }
    if (loaded.job && own == 0) {
      d.tfjob.job = std::move(*loaded.job);
      if (d.tfjob.job.TotalReplicas() == 1) {
        d.Note(kSpecs,
               "a job of one replica: the DistributedJob gives it a TF_CONFIG (training-operator sets none)");
      }
    }
  }
  out.errors = std::move(d.errors);
  if (out.errors.empty()) {
    d.tfjob.distributed_job = std::move(d.dj);
    d.tfjob.notes = std::move(d.notes);
    out.tfjob = std::move(d.tfjob);
  }
  return out;
}

namespace {

// Where each error and note is written.
void LocateAll(std::vector<FieldError>& errors, std::optional<TfJob>& tfjob, const internal::Marks& marks) {
  for (auto& e : errors) internal::Locate(e, marks);
  // In the order they are written (those the TFJob's own checks and
  // DecodeJob found come interleaved).
  std::stable_sort(errors.begin(), errors.end(), [](const FieldError& a, const FieldError& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  if (!tfjob) return;
  for (auto& n : tfjob->notes) {
    FieldError at{n.path, "", 0, 0, /*at_key=*/true};
    internal::Locate(at, marks);
    n.line = at.line;
    n.column = at.column;
  }
}

}  // namespace

StatusOr<std::vector<LoadedTfJob>> LoadTfJobs(std::string_view text, std::string_view source_name) {
  auto docs = internal::ParseYamlDocuments(text, source_name);
  if (!docs.ok()) return docs.status();
  std::vector<LoadedTfJob> out;
  for (const auto& doc : *docs) {
    if (internal::DocumentKind(doc.object) != kTfJobKind) continue;
    LoadedTfJob loaded = DecodeTfJob(doc.object);
    loaded.document_index = doc.index;
    LocateAll(loaded.errors, loaded.tfjob, doc.marks);
    out.push_back(std::move(loaded));
  }
  if (out.empty())
    return InvalidArgumentError(std::string(source_name) + ": no " + kTfJobKind + " document found");
  return out;
}

StatusOr<std::vector<LoadedAnyJob>> LoadAnyJobs(std::string_view text, std::string_view source_name) {
  auto docs = internal::ParseYamlDocuments(text, source_name);
  if (!docs.ok()) return docs.status();
  std::vector<LoadedAnyJob> out;
  for (const auto& doc : *docs) {
    const std::string kind = internal::DocumentKind(doc.object);
    LoadedAnyJob any;
    any.kind = kind;
    any.loaded.document_index = doc.index;
    if (kind == kTfJobKind) {
      LoadedTfJob t = DecodeTfJob(doc.object);
      any.loaded.errors = std::move(t.errors);
      if (t.tfjob) {
        any.loaded.job = t.tfjob->job;
        any.tfjob = std::move(t.tfjob);
      }
    } else if (kind == kKind || !doc.object.is_object()) {
      // A document that is not an object is decoded, so that its error is reported.
      any.kind = kKind;
      LoadedJob j = DecodeJob(doc.object);
      any.loaded.job = std::move(j.job);
      any.loaded.errors = std::move(j.errors);
    } else {
      continue;
    }
    LocateAll(any.loaded.errors, any.tfjob, doc.marks);
    out.push_back(std::move(any));
  }
  if (out.empty()) {
    return InvalidArgumentError(std::string(source_name) + ": no " + kKind + " or " + kTfJobKind +
                                " document found");
  }
  return out;
}

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

std::string DistributedJobYaml(const TfJob& tfjob) {
  return internal::JsonAsYaml(tfjob.distributed_job);
}

}  // namespace ringmaster
