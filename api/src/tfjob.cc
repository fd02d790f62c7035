// TFJob (kubeflow.org/v1) -> DistributedJob. The TFJob is checked in its own
// terms (training-operator's field names, defaults and webhook rules, and
// what Ringmaster cannot honour), translated into a DistributedJob object,
// and that object goes through DecodeJob like any other: its errors are
// renamed back to the TFJob field (or annotation) they came from. Here: the
// translation and the loaders; the replica-spec checks are
// tfjob_replicas.cc's, the TFJob's own TF_CONFIG tfjob_tf_config.cc's.
#include "ringmaster/tfjob.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>

#include "ringmaster/join_list.h"
#include "tfjob_decoder.h"
#include "yaml_document.h"
#include "yaml_emit.h"

namespace ringmaster {
namespace internal {
namespace {

using json = nlohmann::json;

constexpr const char* kSpecs = kTfJobSpecs;
constexpr char kDjSpecs[] = "spec.replicaSpecs";

std::string Annotation(std::string_view name) {
  return "metadata.annotations." + std::string(name);
}

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

}  // namespace

void TfJobDecoder::Decode(const json& obj) {
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

void TfJobDecoder::Annotations(json& meta) {
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
      if (!a->is_string()) Error(Annotation(a.key()), "an annotation must be a string, got " + Describe(*a));
      ++a;
      continue;
    }
    const bool known = std::any_of(std::begin(kAnnotationFields), std::end(kAnnotationFields),
                                   [&](const AnnotationField& f) { return a.key() == f.name; });
    if (!known) {
      const std::string names = JoinList(kAnnotationFields, [](const AnnotationField& f) { return f.name; }) +
                                ", " + kTfConfigAnnotation;
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

void TfJobDecoder::AnnotationFields() {
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

void TfJobDecoder::RunPolicy(const json& spec, json& djspec) {
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
        if (auto q = s->find(k); q != s->end() && q->is_string() && q->get_ref<const std::string&>().empty())
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

std::string TfJobDecoder::TfJobPath(const std::string& p) const {
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

bool TfJobDecoder::Reported(const std::string& path) const {
  const auto within = [](const std::string& inner, const std::string& outer) {
    return inner.rfind(outer, 0) == 0 &&
           (inner.size() == outer.size() || inner[outer.size()] == '.' || inner[outer.size()] == '[');
  };
  return std::any_of(errors.begin(), errors.end(),
                     [&](const FieldError& e) { return within(path, e.path) || within(e.path, path); });
}

}  // namespace internal

LoadedTfJob DecodeTfJob(const nlohmann::json& object) {
  internal::TfJobDecoder d;
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
        d.Note(internal::kTfJobSpecs,
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

std::string DistributedJobYaml(const TfJob& tfjob) {
  return internal::JsonAsYaml(tfjob.distributed_job);
}

}  // namespace ringmaster
