#include "metrics.h"

namespace ringmaster::op {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

namespace {

std::string State(const nlohmann::json& status) {
  if (!status.is_object()) return "";
  auto it = status.find("state");
  return it != status.end() && it->is_string() ? it->get<std::string>() : "";
}

// client-go's work queue buckets: 10 ns to 10 s, a factor of 10 apart.
prometheus::Histogram::BucketBoundaries QueueBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double v = 1e-8; b.size() < 10; v *= 10) b.push_back(v);
  return b;
}

}  // namespace

JobTransition JobTransitionOf(const nlohmann::json& old_status, const nlohmann::json& new_status) {
  const std::string before = State(old_status), after = State(new_status);
  JobTransition t;
  t.created = before.empty() && !after.empty();
  t.succeeded = after == "Succeeded" && before != "Succeeded";
  t.failed = after == "Failed" && before != "Failed";
  t.restarted =
      (after == "Restarting" || after == "Recovering") && before != after;  // a recovery restarts a replica
  const auto replacements = [](const nlohmann::json& status) {
    auto it = status.is_object() ? status.find("replacements") : status.end();
    return it != status.end() && it->is_object() ? *it : nlohmann::json::object();
  };
  const nlohmann::json was = replacements(old_status), is = replacements(new_status);
  for (const auto& [replica, since] : is.items()) {
    if (!was.contains(replica)) ++t.recoveries;
  }
  return t;
}

std::optional<JobWorkers> JobWorkersOf(const nlohmann::json& job) {
  if (!job.is_object() || !job.contains("metadata") || !job["metadata"].is_object()) return std::nullopt;
  auto status = job.find("status");
  if (status == job.end() || !status->is_object()) return std::nullopt;
  auto active = status->find("workersActive"), wanted = status->find("workersWanted");
  if (active == status->end() || wanted == status->end() || !active->is_number_integer() ||
      !wanted->is_number_integer())
    return std::nullopt;
  const nlohmann::json& meta = job["metadata"];
  return JobWorkers{meta.value("namespace", ""), meta.value("name", ""), active->get<int>(),
                    wanted->get<int>()};
}

std::optional<JobWorkers> TfJobWorkersOf(const nlohmann::json& tfjob) {
  if (!tfjob.is_object() || !tfjob.contains("metadata") || !tfjob["metadata"].is_object())
    return std::nullopt;
  const nlohmann::json* worker = nullptr;
  if (auto spec = tfjob.find("spec"); spec != tfjob.end() && spec->is_object())
    if (auto specs = spec->find("tfReplicaSpecs"); specs != spec->end() && specs->is_object())
      if (auto w = specs->find("Worker"); w != specs->end() && w->is_object()) worker = &*w;
  if (worker == nullptr) return std::nullopt;
  auto replicas = worker->find("replicas");
  const int wanted = replicas != worker->end() && replicas->is_number_integer() ? replicas->get<int>() : 1;
  int active = 0;
  if (auto status = tfjob.find("status"); status != tfjob.end() && status->is_object())
    if (auto rs = status->find("replicaStatuses"); rs != status->end() && rs->is_object())
      if (auto w = rs->find("Worker"); w != rs->end() && w->is_object())
        if (auto a = w->find("active"); a != w->end() && a->is_number_integer()) active = a->get<int>();
  const nlohmann::json& meta = tfjob["metadata"];
  return JobWorkers{meta.value("namespace", ""), meta.value("name", ""), active, wanted};
}

QueueMetrics::QueueMetrics(prometheus::Registry& r, const std::string& queue) {
  const prometheus::Labels name = {{"name", queue}};
  adds_ = &BuildCounter()
               .Name("workqueue_adds_total")
               .Help("Total number of adds handled by workqueue")
               .Register(r)
               .Add(name);
  retries_ = &BuildCounter()
                  .Name("workqueue_retries_total")
                  .Help("Total number of retries handled by workqueue")
                  .Register(r)
                  .Add(name);
  depth_ = &BuildGauge().Name("workqueue_depth").Help("Current depth of workqueue").Register(r).Add(name);
  unfinished_ =
      &BuildGauge()
           .Name("workqueue_unfinished_work_seconds")
           .Help(
               "How many seconds of work has been done that is in progress and hasn't been observed "
               "by work_duration. Large values indicate stuck threads.")
           .Register(r)
           .Add(name);
  longest_ = &BuildGauge()
                  .Name("workqueue_longest_running_processor_seconds")
                  .Help("How many seconds has the longest running processor for workqueue been running.")
                  .Register(r)
                  .Add(name);
  queued_ = &BuildHistogram()
                 .Name("workqueue_queue_duration_seconds")
                 .Help("How long in seconds an item stays in workqueue before being requested")
                 .Register(r)
                 .Add(name, QueueBuckets());
  worked_ = &BuildHistogram()
                 .Name("workqueue_work_duration_seconds")
                 .Help("How long in seconds processing an item from workqueue takes.")
                 .Register(r)
                 .Add(name, QueueBuckets());
}

OperatorMetrics::OperatorMetrics(const std::string& version)
    : queue_(*registry_, "distributedjobs"),
      jobs_(BuildGauge()
                .Name("ringmaster_jobs")
                .Help("DistributedJobs by their current condition.")
                .Register(*registry_)),
      jobs_created_(BuildCounter()
                        .Name("ringmaster_jobs_created_total")
                        .Help("DistributedJobs the operator started (their first status), by namespace.")
                        .Register(*registry_)),
      jobs_succeeded_(BuildCounter()
                          .Name("ringmaster_jobs_succeeded_total")
                          .Help("DistributedJobs that succeeded, by namespace.")
                          .Register(*registry_)),
      jobs_failed_(BuildCounter()
                       .Name("ringmaster_jobs_failed_total")
                       .Help("DistributedJobs that failed, by namespace.")
                       .Register(*registry_)),
      jobs_restarted_(
          BuildCounter()
              .Name("ringmaster_jobs_restarted_total")
              .Help("Times a DistributedJob entered Restarting (replicas recreated), by namespace.")
              .Register(*registry_)),
      recoveries_(BuildCounter()
                      .Name("ringmaster_recoveries_total")
                      .Help("Replicas of DistributedJobs (runPolicy.recovery InPlace) that failed and were "
                            "replaced while the others kept running, by namespace.")
                      .Register(*registry_)),
      workers_active_(BuildGauge()
                          .Name("ringmaster_job_workers_active")
                          .Help("Worker pods of a job that run (a DistributedJob's status.workersActive).")
                          .Register(*registry_)),
      workers_wanted_(BuildGauge()
                          .Name("ringmaster_job_workers_wanted")
                          .Help("Worker replicas a job asks for (a DistributedJob's status.workersWanted).")
                          .Register(*registry_)),
      requests_(BuildCounter()
                    .Name("rest_client_requests_total")
                    .Help("Number of HTTP requests, partitioned by status code, method, and host.")
                    .Register(*registry_)),
      request_seconds_(BuildHistogram()
                           .Name("rest_client_request_duration_seconds")
                           .Help("Request latency in seconds. Broken down by verb, and host.")
                           .Register(*registry_)) {
  auto& r = *registry_;
  reconciles_ = &BuildCounter()
                     .Name("ringmaster_reconciles_total")
                     .Help("Reconciles of DistributedJobs.")
                     .Register(r)
                     .Add({});
  reconcile_errors_ = &BuildCounter()
                           .Name("ringmaster_reconcile_errors_total")
                           .Help("Reconciles that failed and were retried.")
                           .Register(r)
                           .Add({});
  reconcile_seconds_ = &BuildHistogram()
                            .Name("ringmaster_reconcile_duration_seconds")
                            .Help("Time to reconcile one job.")
                            .Register(r)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.005, 0.01, 0.025, 0.05,
                                                                             0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  pods_created_ =
      &BuildCounter().Name("ringmaster_pods_created_total").Help("Pods created.").Register(r).Add({});
  pods_deleted_ =
      &BuildCounter().Name("ringmaster_pods_deleted_total").Help("Pods deleted.").Register(r).Add({});
  leader_ = &BuildGauge()
                 .Name("ringmaster_leader")
                 .Help("1 when this process holds the leader lease.")
                 .Register(r)
                 .Add({});
  BuildGauge()
      .Name("ringmaster_build_info")
      .Help("Which Ringmaster operator this is: always 1, with its version as a label.")
      .Register(r)
      .Add({{"version", version}})
      .Set(1);
}

void OperatorMetrics::Reconciled(double seconds, bool failed) {
  reconciles_->Increment();
  reconcile_seconds_->Observe(seconds);
  if (failed) reconcile_errors_->Increment();
}

void OperatorMetrics::SetJobsByCondition(const std::map<std::string, double>& by_condition,
                                         const std::string& kind) {
  std::lock_guard<std::mutex> lock(jobs_mu_);
  jobs_by_kind_[kind] = by_condition;
  std::map<std::string, double> sum;
  for (const auto& [k, counts] : jobs_by_kind_) {
    for (const auto& [condition, n] : counts) sum[condition] += n;
  }
  for (const auto& [condition, n] : sum) jobs_.Add({{"condition", condition}}).Set(n);
}

void OperatorMetrics::CountJob(const JobTransition& t, const std::string& ns) {
  const prometheus::Labels labels = {{"namespace", ns}};
  if (t.created) jobs_created_.Add(labels).Increment();
  if (t.succeeded) jobs_succeeded_.Add(labels).Increment();
  if (t.failed) jobs_failed_.Add(labels).Increment();
  if (t.restarted) jobs_restarted_.Add(labels).Increment();
  if (t.recoveries > 0) recoveries_.Add(labels).Increment(t.recoveries);
}

void OperatorMetrics::SetJobWorkers(const std::vector<JobWorkers>& jobs, const std::string& kind) {
  std::lock_guard<std::mutex> lock(jobs_mu_);
  std::map<std::pair<std::string, std::string>, std::pair<prometheus::Gauge*, prometheus::Gauge*>> now;
  for (const auto& j : jobs) {
    const prometheus::Labels labels = {{"namespace", j.ns}, {"job_name", j.name}, {"kind", kind}};
    auto& [active, wanted] = now[{j.ns, j.name}];
    active = &workers_active_.Add(labels);
    wanted = &workers_wanted_.Add(labels);
    active->Set(j.active);
    wanted->Set(j.wanted);
  }
  auto& before = job_workers_[kind];
  for (const auto& [key, gauges] : before) {
    if (now.count(key)) continue;
    workers_active_.Remove(gauges.first);
    workers_wanted_.Remove(gauges.second);
  }
  before = std::move(now);
}

void OperatorMetrics::Request(std::string_view method, int code, double seconds) {
  const std::string m(method);
  requests_.Add({{"code", code > 0 ? std::to_string(code) : "<error>"}, {"host", host_}, {"method", m}})
      .Increment();
  request_seconds_
      .Add({{"host", host_}, {"verb", m}},
           prometheus::Histogram::BucketBoundaries{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60})
      .Observe(seconds);
}

}  // namespace ringmaster::op
