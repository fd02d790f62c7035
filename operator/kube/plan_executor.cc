// The plan executor: runs a plan's steps against the API server in the
// plan's order (controller.h: Execute, RunStep and the API calls behind
// each action), and records the Events that say what it did.
#include <chrono>

#include "controller.h"
#include "log.h"
#include "observe.h"
#include "ringmaster/job_key.h"
#include "ringmaster/join_list.h"
#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;

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
        // The others first: they are only queued, and a once-event that
        // cannot be delivered stops the plan (the next look tells it again,
        // not them).
        for (const auto& e : plan.events) {
          if (e.once.empty()) RecordEvent(job, e.warning, e.reason, e.message);
        }
        for (const auto& e : plan.events) {
          if (!e.once.empty()) RM_RETURN_IF_ERROR(TellOnce(job, e.warning, e.reason, e.message, e.once));
        }
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

Status Controller::TellOnce(const json& job, bool warning, const std::string& reason,
                            const std::string& message, const std::string& once) {
  const JobKind& k = options_.kind;
  // Told again (a job's end, at each look while recent) once delivered:
  // nothing to log, nothing to post.
  const bool known = recorder_.Known(job, once);
  RM_RETURN_IF_ERROR(recorder_.Deliver(job, k.group + "/" + k.version, k.kind, warning, reason, message, once,
                                       kOnceEventWaitFor));
  if (!known) {
    (warning ? LogWarning : LogInfo)(
        message, {{"job", ObjectKey(MetadataString(job, "namespace"), MetadataString(job, "name"))},
                  {"reason", reason}});
  }
  return OkStatus();
}

}  // namespace ringmaster::op
