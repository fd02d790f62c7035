#include "controller.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "log.h"
#include "names.h"
#include "observe.h"
#include "pod_builder.h"
#include "reconcile.h"
#include "status_json.h"
#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;

namespace {

std::string JobKeyOfChild(const json& obj) {
  if (!obj.contains("metadata") || !obj["metadata"].contains("labels")) return "";
  auto it = obj["metadata"]["labels"].find(kLabelJobName);
  if (it == obj["metadata"]["labels"].end() || !it->is_string()) return "";
  return ObjectKey(MetadataString(obj, "namespace"), *it);
}

std::string Prefix(const std::string& ns) {
  return ns.empty() ? "" : "/namespaces/" + ns;
}

// `n` bytes from the kernel's CSPRNG (getrandom(2): blocks only until it is
// seeded, at boot).
StatusOr<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(out.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return UnavailableError(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<size_t>(r);
  }
  return out;
}

}  // namespace

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
  return std::string("/apis/") + kGroup + "/" + kVersion + Prefix(ns) + "/" + kPlural;
}

void Controller::Start() {
  for (const auto& ns : options_.namespaces) {
    job_informers_.push_back(std::make_unique<Informer>(
        client_, "distributedjobs" + (ns.empty() ? "" : "/" + ns), JobsPath(ns), "",
        [this](WatchEventType type, const json& obj, const json*) {
          const std::string key = ObjectKey(MetadataString(obj, "namespace"), MetadataString(obj, "name"));
          if (type == WatchEventType::kDeleted) expectations_.Forget(key);
          queue_.Add(key);
        }));
    pod_informers_.push_back(std::make_unique<Informer>(
        client_, "pods" + (ns.empty() ? "" : "/" + ns), "/api/v1" + Prefix(ns) + "/pods", kLabelJobName,
        [this](WatchEventType type, const json& obj, const json* old) { OnPod(type, obj, old); }, TrimPod));
    service_informers_.push_back(std::make_unique<Informer>(
        client_, "services" + (ns.empty() ? "" : "/" + ns), "/api/v1" + Prefix(ns) + "/services",
        kLabelJobName, [this](WatchEventType, const json& obj, const json*) {
          const std::string key = JobKeyOfChild(obj);
          if (!key.empty()) queue_.Add(key);
        }));
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
  const std::string key = JobKeyOfChild(pod);
  if (key.empty()) return;
  const std::string name = MetadataString(pod, "name");
  if (type == WatchEventType::kDeleted) {
    expectations_.ObservedDelete(key, name);
    expectations_.ObservedCreate(key, name);
  } else {
    expectations_.ObservedCreate(key, name);
    if (pod["metadata"].contains("deletionTimestamp")) expectations_.ObservedDelete(key, name);
  }
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

void Controller::UpdateJobGauge() {
  std::map<std::string, double> by_state;
  for (const char* s : {"Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"})
    by_state[s] = 0;
  for (auto& inf : job_informers_) {
    inf->ForEach([&](const json& job) {
      std::string state;
      if (job.contains("status") && job["status"].is_object()) state = job["status"].value("state", "");
      if (state.empty()) state = "Created";
      by_state[state] += 1;
    });
  }
  metrics_.SetJobsByCondition(by_state);
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
    return OkStatus();
  }
  if (job->contains("metadata") && (*job)["metadata"].contains("deletionTimestamp")) return OkStatus();
  const std::vector<json> pods = pod_informers_[idx]->ByJob(key);
  std::optional<json> service = service_informers_[idx]->Get(key);
  const int64_t now = NowSeconds();
  Plan plan =
      PlanJob(*job, pods, service ? &*service : nullptr, expectations_.Get(key, now), now, options_.build);

  const bool status_first = StatusBeforeActions(plan);
  if (status_first) RM_RETURN_IF_ERROR(WriteStatus(key, idx, *job, plan));
  for (const auto& e : plan.events) RecordEvent(*job, e.warning, e.reason, e.message);
  bool requeue = false;
  Execute(key, *job, plan, &requeue);
  if (!status_first) RM_RETURN_IF_ERROR(WriteStatus(key, idx, *job, plan));
  if (plan.requeue_after_seconds)
    queue_.AddAfter(key, std::chrono::milliseconds(*plan.requeue_after_seconds * 1000 + 200));
  if (requeue) return UnavailableError("some API calls for " + key + " failed");
  return OkStatus();
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
  metrics_.CountJob(JobTransitionOf(job.contains("status") ? job["status"] : json(), *plan.status), ns);
  LogInfo("status", {{"job", key}, {"state", plan.state}});
  return OkStatus();
}

void Controller::Execute(const std::string& key, const json& job, const Plan& plan, bool* requeue) {
  const std::string ns = MetadataString(job, "namespace");
  const int64_t now = NowSeconds();
  // One event per kind of change and reconcile ("created pods: a, b"), not
  // one per pod: fewer API calls, the same story in `kubectl describe`.
  std::vector<std::string> created, deleted, restarted;
  // The job's pods are created concurrently (a job's replicas start
  // together anyway); the QPS limiter still paces them.
  std::vector<const ApiAction*> pod_creates;
  std::vector<KubeClient::Call> calls;
  const std::string pods_path = "/api/v1/namespaces/" + ns + "/pods";
  // The key Secret and the NetworkPolicy before any pod: a pod without its
  // key could not join, one without its policy would be open.
  bool prerequisites = true;
  for (const ApiAction& a : plan.actions) {
    if (a.kind == ApiActionKind::kCreateKeySecret) {
      auto bytes = RandomBytes(kJobKeyBytes);
      if (!bytes.ok()) {
        LogWarning("no random key for the job", {{"job", key}, {"error", bytes.status().ToString()}});
        prerequisites = false;
        continue;
      }
      const json secret = WithJobKey(a.object, *bytes);
      prerequisites &= CreateOwned(job, "/api/v1/namespaces/" + ns + "/secrets", a, secret, "Secret",
                                   "FailedCreateKeySecret");
    } else if (a.kind == ApiActionKind::kCreateNetworkPolicy) {
      prerequisites &= CreateOwned(job, "/apis/networking.k8s.io/v1/namespaces/" + ns + "/networkpolicies", a,
                                   a.object, "NetworkPolicy", "FailedCreateNetworkPolicy");
    }
  }
  if (!prerequisites) *requeue = true;
  // The headless Service goes with the pods: they need it only to be found
  // by name, which the agent's formation waits for anyway.
  const ApiAction* service = nullptr;
  for (const ApiAction& a : plan.actions) {
    if (a.kind != ApiActionKind::kCreateService) continue;
    service = &a;
    calls.push_back({"POST", "/api/v1/namespaces/" + ns + "/services", &a.object});
  }
  for (const ApiAction& a : plan.actions) {
    if (a.kind != ApiActionKind::kCreatePod || !prerequisites) continue;
    expectations_.ExpectCreate(key, a.name, now);
    pod_creates.push_back(&a);
    calls.push_back({"POST", pods_path, &a.object});
  }
  const auto answers = client_.RequestAll(calls);
  const size_t first_pod = service ? 1 : 0;
  if (service) {
    const HttpResponse& resp = answers[0];
    if (resp.ok()) {
      RecordEvent(job, false, service->reason, "created headless Service " + service->name);
    } else if (resp.code != 409) {
      *requeue = true;
      LogWarning("service create failed", {{"job", key}, {"error", resp.Message()}});
    }
  }
  for (size_t i = first_pod; i < answers.size(); ++i) {
    const auto& resp = answers[i];
    const std::string& name = pod_creates[i - first_pod]->name;
    if (resp.ok()) {
      metrics_.PodCreated();
      created.push_back(name);
    } else if (resp.code == 409) {
      // AlreadyExists: the cache lags; the pod will show up.
    } else {
      expectations_.Cancel(key, name);
      *requeue = true;
      RecordEvent(job, true, "FailedCreatePod", "creating pod " + name + ": " + resp.Message());
    }
  }
  for (const ApiAction& a : plan.actions) {
    switch (a.kind) {
      case ApiActionKind::kCreateService:
      case ApiActionKind::kCreateKeySecret:
      case ApiActionKind::kCreateNetworkPolicy:
        break;  // above
      case ApiActionKind::kCreatePod:
        break;  // above, all at once
      case ApiActionKind::kDeletePod: {
        expectations_.ExpectDelete(key, a.name, now);
        auto resp = client_.Request("DELETE", "/api/v1/namespaces/" + ns + "/pods/" + a.name);
        if (resp.ok() && resp->ok()) {
          metrics_.PodDeleted();
          (a.reason == "RestartingPod" ? restarted : deleted).push_back(a.name);
        } else if (resp.ok() && resp->code == 404) {
          expectations_.ObservedDelete(key, a.name);
        } else {
          expectations_.Cancel(key, a.name);
          *requeue = true;
        }
        break;
      }
      case ApiActionKind::kDeleteJob: {
        json opts = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}};
        auto resp = client_.Request("DELETE", JobsPath(ns) + "/" + a.name, &opts);
        if (!resp.ok() || (!resp->ok() && resp->code != 404))
          *requeue = true;
        else
          LogInfo("deleted job after ttlSecondsAfterFinished", {{"job", key}});
        break;
      }
    }
  }
  auto join = [](const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  if (!created.empty()) RecordEvent(job, false, "SuccessfulCreatePod", "created pods: " + join(created));
  if (!deleted.empty()) RecordEvent(job, false, "SuccessfulDeletePod", "deleted pods: " + join(deleted));
  if (!restarted.empty())
    RecordEvent(job, false, "RestartingPod", "deleted pods to start them anew: " + join(restarted));
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
  recorder_.Record(job, std::string(kGroup) + "/" + kVersion, "DistributedJob", warning, reason, message);
  (warning ? LogWarning : LogInfo)(
      message, {{"job", ObjectKey(MetadataString(job, "namespace"), MetadataString(job, "name"))},
                {"reason", reason}});
}

}  // namespace ringmaster::op
