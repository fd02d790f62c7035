// The imperative shell around PlanJob: informers feed a work queue keyed by
// "namespace/name"; workers read the caches, ask the pure planner what to
// do, and run the plan's steps in its order: writes of the status (with the
// resourceVersion: a 409 stops the plan, so nothing is decided twice on a
// stale status), creations and deletions, Kubernetes Events.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "events.h"
#include "expectations.h"
#include "informer.h"
#include "metrics.h"
#include "pod_builder.h"
#include "reconcile.h"
#include "work_queue.h"

namespace ringmaster::op {

// The kind of job a controller reconciles: its resource, the label that ties
// its pods and Services to it, and its planner (pure). One controller per
// kind; they share nothing but the clients and the metrics.
struct JobKind {
  std::string group, version, plural, kind;
  const char* job_label = kLabelJobName;
  // (job, its pods, its Services, pending creations and deletions, now,
  // build options) -> the plan.
  std::function<Plan(const nlohmann::json&, const std::vector<nlohmann::json>&,
                     const std::vector<nlohmann::json>&, const Pending&, int64_t, const BuildOptions&)>
      plan;
  // The job's status as the metrics read it (`state`, `replacements`,
  // `workersActive`/`workersWanted`: a DistributedJob's status); null: the
  // status as it is.
  std::function<nlohmann::json(const nlohmann::json&)> metrics_status;
  // A job's worker counts for the ringmaster_job_workers_* gauges (nullopt:
  // none yet).
  std::function<std::optional<JobWorkers>(const nlohmann::json&)> workers_of = JobWorkersOf;
};
// ringmaster.io/v1alpha1 DistributedJob (PlanJob).
JobKind DistributedJobKind();
// kubeflow.org/v1 TFJob (PlanTfJob), with --tfjob.
JobKind TfJobKind();

struct ControllerOptions {
  std::vector<std::string> namespaces;  // empty: all
  int workers = 4;
  std::chrono::seconds resync{300};
  BuildOptions build;
  JobKind kind = DistributedJobKind();
};

class Controller {
 public:
  // Events go through `events`, which has a rate budget of its own.
  Controller(KubeClient& client, KubeClient& events, OperatorMetrics& metrics, ControllerOptions options);
  ~Controller();

  void Start();  // informers and workers
  void Stop();   // drains nothing: in-flight reconciles finish, then threads join
  bool Synced() const;

 private:
  void Worker();
  Status Sync(const std::string& key);
  // The plan executor (plan_executor.cc), from here to RecordEvent.
  // Runs the plan's steps in order (the plan says which and what a failure
  // means). An error when a kStop step failed: nothing after it ran, and
  // the job is retried. Otherwise whether every action succeeded.
  StatusOr<bool> Execute(const std::string& key, size_t idx, const nlohmann::json& job,
                         const struct Plan& plan);
  // One step's actions; OK when all succeeded (a refused status write's own
  // error). `create_pods` false: its pod creations are left out.
  Status RunStep(const std::string& key, size_t idx, const nlohmann::json& job, const struct Plan& plan,
                 const struct Step& step, bool create_pods);
  // PUTs plan.status and puts the answer into job informer `idx`'s cache.
  // A 404 (the job is gone) is OK; a 409 is Aborted (retried quietly).
  Status WriteStatus(const std::string& key, size_t idx, const nlohmann::json& job, const struct Plan& plan);
  // PlanDeletedJob's patches for the cached pods of job `key`, gone or going.
  Status ReleaseDeletedPods(const std::string& key);
  // One kPatchPod action (a strategic merge patch); a 404 is fine. False
  // (logged) when it failed.
  bool PatchPod(const std::string& key, const struct ApiAction& a);
  // POSTs `object` (a's) to `collection`; AlreadyExists is fine when the
  // object there is controlled by the job. False (with a Warning event
  // `failure_reason`) otherwise.
  bool CreateOwned(const nlohmann::json& job, const std::string& collection, const struct ApiAction& a,
                   const nlohmann::json& object, const std::string& kind, const std::string& failure_reason);
  void RecordEvent(const nlohmann::json& job, bool warning, const std::string& reason,
                   const std::string& message);
  // A once-event of the plan (JobEvent::once), delivered before the plan
  // goes on (EventRecorder::Deliver, for up to kOnceEventWaitFor): an error
  // stops the plan, and the next look tells it again.
  Status TellOnce(const nlohmann::json& job, bool warning, const std::string& reason,
                  const std::string& message, const std::string& once);
  void OnPod(WatchEventType type, const nlohmann::json& pod, const nlohmann::json* old);
  void Resync();
  void UpdateJobGauge();
  // The job's status as the metrics read it (JobKind::metrics_status).
  nlohmann::json MetricsStatus(const nlohmann::json& job) const;
  std::string JobsPath(const std::string& ns) const;

  KubeClient& client_;
  EventRecorder recorder_;
  OperatorMetrics& metrics_;
  ControllerOptions options_;
  WorkQueue queue_;
  Expectations expectations_;
  std::vector<std::unique_ptr<Informer>> job_informers_, pod_informers_, service_informers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
};

}  // namespace ringmaster::op
