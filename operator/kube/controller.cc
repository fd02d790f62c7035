#include "controller.h"

#include <chrono>

#include "log.h"
#include "names.h"
#include "observe.h"
#include "pod_builder.h"
#include "reconcile.h"
#include "ringmaster/job_key.h"
#include "ringmaster/join_list.h"
#include "status_json.h"
#include "tfjob_objects.h"
#include "tfjob_reconcile.h"
#include "tfjob_status.h"
#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;

namespace {

std::string Prefix(const std::string& ns) {
  return ns.empty() ? "" : "/namespaces/" + ns;
}

}  // namespace

JobKind DistributedJobKind() {
  JobKind k;
  k.group = kGroup;
  k.version = kVersion;
  k.plural = kPlural;
  k.kind = kKind;
  k.job_label = kLabelJobName;
  k.plan = [](const json& job, const std::vector<json>& pods, const std::vector<json>& services,
              const Pending& pending, int64_t now, const BuildOptions& opts) {
    // The job's one Service, named as the job.
    const std::string name = MetadataString(job, "name");
    const json* service = nullptr;
    for (const auto& s : services) {
      if (MetadataString(s, "name") == name) service = &s;
    }
    return PlanJob(job, pods, service, pending, now, opts);
  };
  return k;
}

JobKind TfJobKind() {
  JobKind k;
  k.group = kTfJobGroup;
  k.version = kTfJobVersion;
  k.plural = kTfJobPlural;
  k.kind = kTfJobKind;
  k.job_label = kTfJobNameLabel;
  k.plan = PlanTfJob;
  k.metrics_status = TfJobMetricsStatus;
  k.workers_of = TfJobWorkersOf;
  return k;
}

Controller::Controller(KubeClient& client, KubeClient& events, OperatorMetrics& metrics,
                       ControllerOptions options)
    : client_(client),
      recorder_(events),
      metrics_(metrics),
      options_(std::move(options)),
      queue_(std::chrono::milliseconds(5), std::chrono::seconds(60), WorkQueue::Clock::now,
             &metrics.queue()) {
  if (options_.namespaces.empty()) options_.namespaces.push_back("");
  if (options_.workers < 1) options_.workers = 1;
}

Controller::~Controller() {
  Stop();
}

std::string Controller::JobsPath(const std::string& ns) const {
  const JobKind& k = options_.kind;
  return "/apis/" + k.group + "/" + k.version + Prefix(ns) + "/" + k.plural;
}

void Controller::Start() {
  const char* label = options_.kind.job_label;
  for (const auto& ns : options_.namespaces) {
    const std::string in_ns = ns.empty() ? "" : "/" + ns;
    job_informers_.push_back(std::make_unique<Informer>(
        client_, options_.kind.plural + in_ns, JobsPath(ns), "",
        [this](WatchEventType type, const json& obj, const json*) {
          const std::string key = ObjectKey(MetadataString(obj, "namespace"), MetadataString(obj, "name"));
          if (type == WatchEventType::kDeleted) expectations_.Forget(key);
          queue_.Add(key);
        }));
    // Two kinds' informers of one resource are told apart in the logs.
    const std::string of = options_.kind.plural == kPlural ? "" : "(" + options_.kind.plural + ")";
    pod_informers_.push_back(std::make_unique<Informer>(
        client_, "pods" + of + in_ns, "/api/v1" + Prefix(ns) + "/pods", label,
        [this](WatchEventType type, const json& obj, const json* old) { OnPod(type, obj, old); }, TrimPod,
        label));
    service_informers_.push_back(std::make_unique<Informer>(
        client_, "services" + of + in_ns, "/api/v1" + Prefix(ns) + "/services", label,
        [this, label](WatchEventType, const json& obj, const json*) {
          const std::string key = JobKeyOf(obj, label);
          if (!key.empty()) queue_.Add(key);
        },
        nullptr, label));
  }
  for (auto* list : {&job_informers_, &pod_informers_, &service_informers_}) {
    for (auto& inf : *list) inf->Start();
  }
  recorder_.Start();
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { Worker(); });
  threads_.emplace_back([this] { Resync(); });
}

void Controller::Stop() {
  if (stop_.exchange(true)) return;
  queue_.ShutDown();
  for (auto* list : {&job_informers_, &pod_informers_, &service_informers_}) {
    for (auto& inf : *list) inf->Stop();
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  recorder_.Stop();
}

bool Controller::Synced() const {
  for (const auto* list : {&job_informers_, &pod_informers_, &service_informers_}) {
    for (const auto& inf : *list) {
      if (!inf->HasSynced()) return false;
    }
  }
  return !job_informers_.empty();
}

void Controller::OnPod(WatchEventType type, const json& pod, const json* old) {
  const std::string key = JobKeyOf(pod, options_.kind.job_label);
  if (key.empty()) return;
  expectations_.Observe(key, type, pod);
  (void)old;
  queue_.Add(key);
}

void Controller::Resync() {
  auto last = std::chrono::steady_clock::now();
  int ticks = 0;
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    queue_.ReportUnfinished();
    if (++ticks % 10 == 0) UpdateJobGauge();  // every 2 s
    if (std::chrono::steady_clock::now() - last < options_.resync) continue;
    last = std::chrono::steady_clock::now();
    for (auto& inf : job_informers_) {
      inf->ForEach([this](const json& job) {
        queue_.Add(ObjectKey(MetadataString(job, "namespace"), MetadataString(job, "name")));
      });
    }
  }
}

json Controller::MetricsStatus(const json& job) const {
  const json status = job.is_object() && job.contains("status") ? job["status"] : json();
  return options_.kind.metrics_status ? options_.kind.metrics_status(status) : status;
}

void Controller::UpdateJobGauge() {
  std::map<std::string, double> by_state;
  for (ConditionType t : kAllConditionTypes) by_state[std::string(ConditionTypeName(t))] = 0;
  std::vector<JobWorkers> workers;
  for (auto& inf : job_informers_) {
    inf->ForEach([&](const json& job) {
      if (auto w = options_.kind.workers_of(job)) workers.push_back(std::move(*w));
      const json status = MetricsStatus(job);
      std::string state;
      if (status.is_object()) state = status.value("state", "");
      if (state.empty()) state = "Created";
      by_state[state] += 1;
    });
  }
  metrics_.SetJobsByCondition(by_state, options_.kind.kind);
  metrics_.SetJobWorkers(workers, options_.kind.kind);
}

void Controller::Worker() {
  while (!stop_) {
    auto key = queue_.Get(std::chrono::milliseconds(500));
    if (!key) continue;
    const auto start = std::chrono::steady_clock::now();
    Status st = Sync(*key);
    metrics_.Reconciled(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                        !st.ok());
    if (!st.ok()) {
      if (st.code() != StatusCode::kAborted)
        LogWarning("reconcile failed; retrying", {{"job", *key}, {"error", st.ToString()}});
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
    }
    queue_.Done(*key);
  }
}

Status Controller::Sync(const std::string& key) {
  std::optional<json> job;
  size_t idx = 0;
  for (size_t i = 0; i < job_informers_.size(); ++i) {
    job = job_informers_[i]->Get(key);
    if (job) {
      idx = i;
      break;
    }
  }
  if (!job) {
    expectations_.Forget(key);
    return ReleaseDeletedPods(key);
  }
  if (job->contains("metadata") && (*job)["metadata"].contains("deletionTimestamp"))
    return ReleaseDeletedPods(key);
  const std::vector<json> pods = pod_informers_[idx]->ByJob(key);
  const std::vector<json> services = service_informers_[idx]->ByJob(key);
  const int64_t now = NowSeconds();
  Plan plan =
      options_.kind.plan(*job, pods, services, expectations_.Settle(key, pods, now), now, options_.build);

  auto all_done = Execute(key, idx, *job, plan);
  if (!all_done.ok()) return all_done.status();
  if (plan.requeue_after_seconds)
    queue_.AddAfter(key, std::chrono::milliseconds(*plan.requeue_after_seconds * 1000 + 200));
  if (!*all_done) return UnavailableError("some API calls for " + key + " failed");
  return OkStatus();
}

Status Controller::ReleaseDeletedPods(const std::string& key) {
  bool ok = true;
  for (const auto& informer : pod_informers_) {
    for (const ApiAction& a : PlanDeletedJob(informer->ByJob(key))) ok &= PatchPod(key, a);
  }
  return ok ? OkStatus() : UnavailableError("some pod patches for deleted job " + key + " failed");
}

bool Controller::PatchPod(const std::string& key, const ApiAction& a) {
  const std::string ns = key.substr(0, key.find('/'));
  auto resp = client_.Request("PATCH", "/api/v1/namespaces/" + ns + "/pods/" + a.name, &a.object,
                              "application/strategic-merge-patch+json");
  if (resp.ok() && (resp->ok() || resp->code == 404)) return true;
  LogWarning("pod patch failed", {{"job", key},
                                  {"pod", a.name},
                                  {"reason", a.reason},
                                  {"error", resp.ok() ? resp->Message() : resp.status().ToString()}});
  return false;
}

Status Controller::WriteStatus(const std::string& key, size_t idx, const json& job, const Plan& plan) {
  if (!plan.status) return OkStatus();
  const std::string ns = MetadataString(job, "namespace"), name = MetadataString(job, "name");
  json updated = job;
  updated["status"] = *plan.status;
  auto resp = client_.Request("PUT", JobsPath(ns) + "/" + name + "/status", &updated);
  if (!resp.ok()) return resp.status();
  if (resp->code == 409) return AbortedError("status of " + key + " changed meanwhile (409)");
  if (resp->code == 404) return OkStatus();
  if (!resp->ok()) return UnavailableError("status update of " + key + ": " + resp->Message());
  job_informers_[idx]->Upsert(resp->body);
  const JobKind& k = options_.kind;
  metrics_.CountJob(
      JobTransitionOf(MetricsStatus(job), k.metrics_status ? k.metrics_status(*plan.status) : *plan.status),
      ns);
  LogInfo("status", {{"job", key}, {"state", plan.state}});
  return OkStatus();
}

StatusOr<bool> Controller::Execute(const std::string& key, size_t idx, const json& job, const Plan& plan) {
  bool all_done = true, create_pods = true;
  for (const Step& step : plan.steps) {
    const Status st = RunStep(key, idx, job, plan, step, create_pods);
    if (st.ok()) continue;
    if (step.on_failure == OnFailure::kStop) return st;
    if (step.on_failure == OnFailure::kNoNewPods) create_pods = false;
    all_done = false;
  }
  return all_done;
}

Status Controller::RunStep(const std::string& key, size_t idx, const json& job, const Plan& plan,
                           const Step& step, bool create_pods) {
  const std::string ns = MetadataString(job, "namespace");
  const int64_t now = NowSeconds();
  bool ok = true;
  // One event per kind of change and step ("created pods: a, b"), not one
  // per pod: fewer API calls, the same story in `kubectl describe`.
  std::vector<std::string> created, deleted, restarted, deleted_services;
  // The step's Service and pods are created concurrently (a job's replicas
  // start together anyway); the QPS limiter still paces them. The other
  // actions take more than one request each (or retry one on a 401): one
  // after the other.
  std::vector<const ApiAction*> batched;
  std::vector<KubeClient::Call> calls;
  for (const ApiAction& a : step.actions) {
    switch (a.kind) {
      case ApiActionKind::kWriteStatus:
        RM_RETURN_IF_ERROR(WriteStatus(key, idx, job, plan));
        break;
      case ApiActionKind::kRecordEvents:
        for (const auto& e : plan.events) RecordEvent(job, e.warning, e.reason, e.message);
        break;
      case ApiActionKind::kCreateKeySecret: {
        auto bytes = NewJobKey();
        if (!bytes.ok()) {
          LogWarning("no random key for the job", {{"job", key}, {"error", bytes.status().ToString()}});
          ok = false;
          break;
        }
        ok &= CreateOwned(job, "/api/v1/namespaces/" + ns + "/secrets", a, WithJobKey(a.object, *bytes),
                          "Secret", "FailedCreateKeySecret");
        break;
      }
      case ApiActionKind::kCreateNetworkPolicy:
        ok &= CreateOwned(job, "/apis/networking.k8s.io/v1/namespaces/" + ns + "/networkpolicies", a,
                          a.object, "NetworkPolicy", "FailedCreateNetworkPolicy");
        break;
      case ApiActionKind::kCreateConfigMap:
        ok &= CreateOwned(job, "/api/v1/namespaces/" + ns + "/configmaps", a, a.object, "ConfigMap",
                          "FailedCreateConfigMap");
        break;
      case ApiActionKind::kCreateGangObject: {
        const std::string kind = a.object.value("kind", std::string("Workload"));
        ok &= CreateOwned(job, GangCollectionPath(a.object, ns), a, a.object, kind, "FailedCreate" + kind);
        break;
      }
      case ApiActionKind::kCreateService:
        batched.push_back(&a);
        calls.push_back({"POST", "/api/v1/namespaces/" + ns + "/services", &a.object});
        break;
      case ApiActionKind::kCreatePod:
        if (!create_pods) break;
        expectations_.Asked(key, a, now);
        batched.push_back(&a);
        calls.push_back({"POST", "/api/v1/namespaces/" + ns + "/pods", &a.object});
        break;
      case ApiActionKind::kPatchPod:
        ok &= PatchPod(key, a);
        break;
      case ApiActionKind::kPatchJob: {
        // Like the status write: what it stores must be there before the
        // evidence goes, so a failure stops the plan (OnFailure::kStop).
        auto resp =
            client_.Request("PATCH", JobsPath(ns) + "/" + a.name, &a.object, "application/merge-patch+json");
        if (!resp.ok()) return resp.status();
        if (resp->code == 404) break;
        if (!resp->ok()) return UnavailableError("patch of " + key + ": " + resp->Message());
        job_informers_[idx]->Upsert(resp->body);
        break;
      }
      case ApiActionKind::kDeletePod: {
        expectations_.Asked(key, a, now);
        auto resp = client_.Request("DELETE", "/api/v1/namespaces/" + ns + "/pods/" + a.name);
        expectations_.Answered(key, a, resp.ok() ? resp->code : 0);
        if (resp.ok() && resp->ok()) {
          metrics_.PodDeleted();
          (a.reason == "RestartingPod" ? restarted : deleted).push_back(a.name);
        } else if (!resp.ok() || resp->code != 404) {
          ok = false;
        }
        break;
      }
      case ApiActionKind::kDeleteService: {
        auto resp = client_.Request("DELETE", "/api/v1/namespaces/" + ns + "/services/" + a.name);
        if (resp.ok() && resp->ok()) {
          deleted_services.push_back(a.name);
        } else if (!resp.ok() || resp->code != 404) {
          ok = false;
        }
        break;
      }
      case ApiActionKind::kDeleteJob: {
        json opts = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}};
        auto resp = client_.Request("DELETE", JobsPath(ns) + "/" + a.name, &opts);
        if (!resp.ok() || (!resp->ok() && resp->code != 404))
          ok = false;
        else
          LogInfo("deleted job after ttlSecondsAfterFinished", {{"job", key}});
        break;
      }
    }
  }
  const auto answers = calls.empty() ? std::vector<HttpResponse>() : client_.RequestAll(calls);
  for (size_t i = 0; i < answers.size(); ++i) {
    const HttpResponse& resp = answers[i];
    const ApiAction& a = *batched[i];
    expectations_.Answered(key, a, resp.code);
    if (a.kind == ApiActionKind::kCreateService) {
      if (resp.ok()) {
        RecordEvent(job, false, a.reason, "created headless Service " + a.name);
      } else if (resp.code != 409) {
        ok = false;
        LogWarning("service create failed", {{"job", key}, {"error", resp.Message()}});
      }
    } else if (resp.ok()) {
      metrics_.PodCreated();
      created.push_back(a.name);
    } else if (resp.code != 409) {  // 409 AlreadyExists: the cache lags; the pod will show up
      ok = false;
      RecordEvent(job, true, "FailedCreatePod", "creating pod " + a.name + ": " + resp.Message());
    }
  }
  if (!created.empty()) RecordEvent(job, false, "SuccessfulCreatePod", "created pods: " + JoinList(created));
  if (!deleted.empty()) RecordEvent(job, false, "SuccessfulDeletePod", "deleted pods: " + JoinList(deleted));
  if (!restarted.empty())
    RecordEvent(job, false, "RestartingPod", "deleted pods to start them anew: " + JoinList(restarted));
  if (!deleted_services.empty())
    RecordEvent(job, false, "SuccessfulDeleteService", "deleted Services: " + JoinList(deleted_services));
  return ok ? OkStatus() : UnavailableError("some API calls for " + key + " failed");
}

bool Controller::CreateOwned(const json& job, const std::string& collection, const ApiAction& a,
                             const json& object, const std::string& kind, const std::string& failure_reason) {
  const std::string key = ObjectKey(MetadataString(job, "namespace"), MetadataString(job, "name"));
  auto resp = client_.Request("POST", collection, &object);
  if (resp.ok() && resp->ok()) {
    RecordEvent(job, false, a.reason, "created " + kind + " " + a.name);
    return true;
  }
  if (!resp.ok() || resp->code != 409) {
    const std::string error = resp.ok() ? resp->Message() : resp.status().ToString();
    RecordEvent(job, true, failure_reason, "creating " + kind + " " + a.name + ": " + error);
    return false;
  }
  // AlreadyExists: ours from an earlier reconcile (kept as it is: a key is
  // never replaced), or another object's of the same name.
  auto got = client_.Request("GET", collection + "/" + a.name);
  if (!got.ok() || !got->ok()) {
    LogWarning(
        kind + " exists but cannot be read",
        {{"job", key}, {"name", a.name}, {"error", got.ok() ? got->Message() : got.status().ToString()}});
    return false;
  }
  if (ControlledBy(got->body, MetadataString(job, "uid"))) return true;
  RecordEvent(
      job, true, failure_reason,
      kind + " " + a.name +
          " exists and is not controlled by this job (an earlier job's, not yet garbage-collected, or "
          "someone else's); no pods are created until it is gone");
  return false;
}

void Controller::RecordEvent(const json& job, bool warning, const std::string& reason,
                             const std::string& message) {
  const JobKind& k = options_.kind;
  recorder_.Record(job, k.group + "/" + k.version, k.kind, warning, reason, message);
  (warning ? LogWarning : LogInfo)(
      message, {{"job", ObjectKey(MetadataString(job, "namespace"), MetadataString(job, "name"))},
                {"reason", reason}});
}

}  // namespace ringmaster::op
