// The controller's life: its informers, work queue and workers, and each
// sync (the caches read, the kind's planner asked); plan_executor.cc runs
// the plans.
#include "controller.h"

#include <chrono>

#include "log.h"
#include "names.h"
#include "observe.h"
#include "pod_builder.h"
#include "reconcile.h"
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

}  // namespace ringmaster::op
