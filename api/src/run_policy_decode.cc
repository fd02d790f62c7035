// spec.runPolicy of a DistributedJob (run_policy_decode.h).
#include "run_policy_decode.h"

#include <string>

#include "kube_names.h"
#include "ringmaster/enum_names.h"

namespace ringmaster::internal {
namespace {

using json = nlohmann::json;

void DecodeRunPolicyFields(Decoder& d, const json& spec, RunPolicy& out) {
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

void DecodeRunPolicy(Decoder& d, const json& spec, DistributedJob& job) {
  DecodeRunPolicyFields(d, spec, job.run_policy);
  DecodeElastic(d, spec, job);
  DecodeSchedulingPolicy(d, spec, job);
}

}  // namespace ringmaster::internal
