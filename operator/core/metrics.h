// The operator's metrics, on prometheus-cpp's registry (main.cc serves it
// with prometheus-cpp's Exposer on --metrics-address). Names follow
// Prometheus' conventions (counters end in _total, a *_build_info gauge, the
// process_* family) and, for the work queue and the REST client, client-go's
// (workqueue_*{name}, rest_client_*), so dashboards and alerts made for
// controller-runtime operators read ours unchanged.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "work_queue.h"

namespace ringmaster::op {

// What a status write says happened to a job, for the job counters: the
// first status (created), and entering Succeeded, Failed or Restarting.
struct JobTransition {
  bool created = false, succeeded = false, failed = false, restarted = false;
  // Replicas whose recovery in place began (new in status.replacements).
  int recoveries = 0;
};
// Pure: `old_status` is the job's status before the write (null or {} for a
// new job), `new_status` the one written.
JobTransition JobTransitionOf(const nlohmann::json& old_status, const nlohmann::json& new_status);

// One job's group for the per-job gauges: its namespace and name, and its
// status' workersActive/workersWanted.
struct JobWorkers {
  std::string ns, name;
  int active = 0, wanted = 0;
};
// Pure: nullopt for a job whose status has no worker counts yet.
std::optional<JobWorkers> JobWorkersOf(const nlohmann::json& job);
// Pure, a kubeflow.org/v1 TFJob: the spec's Worker replicas (1 when the
// Worker spec says none) and status.replicaStatuses.Worker.active (0 until
// training-operator's status says); nullopt for a TFJob without workers.
std::optional<JobWorkers> TfJobWorkersOf(const nlohmann::json& tfjob);

// client-go's work queue metrics for one queue (label name=<queue>).
class QueueMetrics final : public WorkQueueObserver {
 public:
  QueueMetrics(prometheus::Registry& registry, const std::string& queue);
  void Added() override { adds_->Increment(); }
  void Retried() override { retries_->Increment(); }
  void Depth(size_t n) override { depth_->Set(static_cast<double>(n)); }
  void Queued(double seconds) override { queued_->Observe(seconds); }
  void Worked(double seconds) override { worked_->Observe(seconds); }
  void Unfinished(double total_seconds, double longest_seconds) override {
    unfinished_->Set(total_seconds);
    longest_->Set(longest_seconds);
  }

 private:
  prometheus::Counter *adds_, *retries_;
  prometheus::Gauge *depth_, *unfinished_, *longest_;
  prometheus::Histogram *queued_, *worked_;
};

class OperatorMetrics {
 public:
  // `version`: ringmaster_build_info's label.
  explicit OperatorMetrics(const std::string& version);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  QueueMetrics& queue() { return queue_; }

  void Reconciled(double seconds, bool failed);
  // ringmaster_jobs{condition}: the jobs of each state. Each `kind`'s
  // counts (DistributedJobs, TFJobs: one controller each) are kept apart
  // and the gauge is their sum.
  void SetJobsByCondition(const std::map<std::string, double>& jobs_by_condition,
                          const std::string& kind = "");
  void PodCreated() { pods_created_->Increment(); }
  void PodDeleted() { pods_deleted_->Increment(); }
  void SetLeader(bool leading) { leader_->Set(leading ? 1 : 0); }
  void CountJob(const JobTransition& t, const std::string& ns);
  // ringmaster_job_workers_active / _wanted{namespace,job_name,kind}: the
  // jobs of `kind` there are now; the series of its jobs no longer listed
  // are removed. Each kind's series are its own (one controller each: a
  // TFJob and a DistributedJob may share a name).
  void SetJobWorkers(const std::vector<JobWorkers>& jobs, const std::string& kind = "DistributedJob");
  // One API request: rest_client_requests_total{code,host,method} and
  // rest_client_request_duration_seconds{host,verb}. code 0: no answer
  // (client-go's "<error>").
  void Request(std::string_view method, int code, double seconds);
  void SetApiHost(std::string host) { host_ = std::move(host); }

 private:
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  QueueMetrics queue_;
  prometheus::Counter *reconciles_, *reconcile_errors_, *pods_created_, *pods_deleted_;
  prometheus::Histogram* reconcile_seconds_;
  prometheus::Gauge* leader_;
  prometheus::Family<prometheus::Gauge>& jobs_;
  std::mutex jobs_mu_;  // the controllers report from threads of their own
  std::map<std::string, std::map<std::string, double>> jobs_by_kind_;
  prometheus::Family<prometheus::Counter>&jobs_created_, &jobs_succeeded_, &jobs_failed_, &jobs_restarted_;
  prometheus::Family<prometheus::Counter>& recoveries_;
  prometheus::Family<prometheus::Gauge>&workers_active_, &workers_wanted_;
  // The per-job series set last time, by kind, then (namespace, name).
  std::map<std::string,
           std::map<std::pair<std::string, std::string>, std::pair<prometheus::Gauge*, prometheus::Gauge*>>>
      job_workers_;  // under jobs_mu_
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  std::string host_;
};

}  // namespace ringmaster::op
