// The operator's metrics: names and labels by Prometheus' and client-go's
// conventions, the job counters' transitions, the process_* parsing.
#include "metrics.h"

#include <gtest/gtest.h>

#include "process_metrics.h"
#include "prometheus_text.h"

namespace ringmaster::op {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(Metrics, ConventionalNamesAndLabels) {
  OperatorMetrics m("1.2.3");
  m.SetApiHost("10.0.0.1:6443");
  m.Reconciled(0.004, false);
  m.Reconciled(0.5, true);
  m.SetJobsByCondition({{"Running", 2}, {"Failed", 1}});
  m.PodCreated();
  m.SetLeader(true);
  m.CountJob({.created = true}, "team-a");
  m.CountJob({.succeeded = true}, "team-a");
  m.CountJob({.failed = true, .restarted = true}, "team-b");
  m.CountJob({.recoveries = 2}, "team-b");
  m.SetJobWorkers({{"team-a", "gone", 3, 3}});
  m.SetJobWorkers({{"team-a", "j", 2, 3}, {"team-a", "both", 1, 1}});
  // The TFJob controller's list leaves the DistributedJobs' series alone,
  // and a TFJob may share a DistributedJob's name.
  m.SetJobWorkers({{"team-a", "gone-tf", 1, 1}}, "TFJob");
  m.SetJobWorkers({{"team-a", "both", 4, 5}}, "TFJob");
  m.Request("GET", 200, 0.01);
  m.Request("PUT", 0, 2);
  m.queue().Added();
  m.queue().Depth(3);
  const std::string text = RenderText(*m.registry());
  for (const char* line : {
           "ringmaster_build_info{version=\"1.2.3\"} 1",
           "ringmaster_reconciles_total 2",
           "ringmaster_reconcile_errors_total 1",
           "ringmaster_reconcile_duration_seconds_count 2",
           "ringmaster_reconcile_duration_seconds_bucket{le=\"0.005\"} 1",
           "ringmaster_jobs{condition=\"Running\"} 2",
           "ringmaster_jobs{condition=\"Failed\"} 1",
           "ringmaster_pods_created_total 1",
           "ringmaster_leader 1",
           "ringmaster_jobs_created_total{namespace=\"team-a\"} 1",
           "ringmaster_jobs_succeeded_total{namespace=\"team-a\"} 1",
           "ringmaster_jobs_failed_total{namespace=\"team-b\"} 1",
           "ringmaster_jobs_restarted_total{namespace=\"team-b\"} 1",
           "ringmaster_recoveries_total{namespace=\"team-b\"} 2",
           "ringmaster_job_workers_active{job_name=\"j\",kind=\"DistributedJob\",namespace=\"team-a\"} 2",
           "ringmaster_job_workers_wanted{job_name=\"j\",kind=\"DistributedJob\",namespace=\"team-a\"} 3",
           "ringmaster_job_workers_active{job_name=\"both\",kind=\"DistributedJob\",namespace=\"team-a\"} 1",
           "ringmaster_job_workers_active{job_name=\"both\",kind=\"TFJob\",namespace=\"team-a\"} 4",
           "ringmaster_job_workers_wanted{job_name=\"both\",kind=\"TFJob\",namespace=\"team-a\"} 5",
           "rest_client_requests_total{code=\"200\",host=\"10.0.0.1:6443\",method=\"GET\"} 1",
           "rest_client_requests_total{code=\"<error>\",host=\"10.0.0.1:6443\",method=\"PUT\"} 1",
           "rest_client_request_duration_seconds_count{host=\"10.0.0.1:6443\",verb=\"GET\"} 1",
           "workqueue_adds_total{name=\"distributedjobs\"} 1",
           "workqueue_depth{name=\"distributedjobs\"} 3",
       }) {
    EXPECT_TRUE(Has(text, line)) << "missing: " << line << "\n" << text;
  }
  EXPECT_NE(text.find("# TYPE ringmaster_jobs_created_total counter"), std::string::npos);
  EXPECT_EQ(text.find("job_name=\"gone\""), std::string::npos) << "a job no longer there keeps its series";
  EXPECT_EQ(text.find("job_name=\"gone-tf\""), std::string::npos)
      << "a TFJob no longer there keeps its series";
  EXPECT_NE(text.find("# TYPE workqueue_queue_duration_seconds histogram"), std::string::npos);
}

TEST(Metrics, JobsByConditionSumsTheKinds) {
  OperatorMetrics m("1.2.3");
  m.SetJobsByCondition({{"Running", 2}, {"Failed", 1}}, "DistributedJob");
  m.SetJobsByCondition({{"Running", 3}, {"Failed", 0}}, "TFJob");
  m.SetJobsByCondition({{"Running", 1}, {"Failed", 0}}, "TFJob");  // replaces the TFJobs' counts
  const std::string text = RenderText(*m.registry());
  EXPECT_TRUE(Has(text, "ringmaster_jobs{condition=\"Running\"} 3")) << text;
  EXPECT_TRUE(Has(text, "ringmaster_jobs{condition=\"Failed\"} 1")) << text;
}

TEST(JobTransitions, CountEachEntryOnce) {
  using nlohmann::json;
  const json none, running = {{"state", "Running"}}, done = {{"state", "Succeeded"}};
  auto t = JobTransitionOf(none, {{"state", "Created"}});
  EXPECT_TRUE(t.created);
  EXPECT_FALSE(t.succeeded || t.failed || t.restarted);
  EXPECT_FALSE(JobTransitionOf(json::object(), json::object()).created);  // no state written yet
  t = JobTransitionOf(running, done);
  EXPECT_TRUE(t.succeeded);
  EXPECT_FALSE(t.created);
  EXPECT_FALSE(JobTransitionOf(done, done).succeeded);  // a later status write of a finished job
  EXPECT_TRUE(JobTransitionOf(running, {{"state", "Failed"}}).failed);
  EXPECT_TRUE(JobTransitionOf(running, {{"state", "Restarting"}}).restarted);
  EXPECT_FALSE(JobTransitionOf({{"state", "Restarting"}}, {{"state", "Restarting"}}).restarted);
  // A recovery in place counts once per replica, when it enters status.replacements.
  const json one = {{"state", "Recovering"}, {"replacements", {{"worker-1", "2026-11-22T05:19:37Z"}}}};
  const json two = {
      {"state", "Recovering"},
      {"replacements", {{"worker-1", "2026-11-22T05:19:37Z"}, {"chief-0", "2026-11-22T05:19:40Z"}}}};
  EXPECT_EQ(JobTransitionOf(running, one).recoveries, 1);
  EXPECT_EQ(JobTransitionOf(one, two).recoveries, 1);
  EXPECT_EQ(JobTransitionOf(two, two).recoveries, 0);
  EXPECT_EQ(JobTransitionOf(two, running).recoveries, 0);
}

TEST(JobWorkers, ReadFromTheStatus) {
  using nlohmann::json;
  const json job = {{"metadata", {{"namespace", "ns"}, {"name", "j"}}},
                    {"status", {{"workersActive", 2}, {"workersWanted", 3}}}};
  auto w = JobWorkersOf(job);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->ns, "ns");
  EXPECT_EQ(w->name, "j");
  EXPECT_EQ(w->active, 2);
  EXPECT_EQ(w->wanted, 3);
  EXPECT_FALSE(JobWorkersOf({{"metadata", {{"name", "j"}}}}).has_value());  // no status written yet
}

TEST(JobWorkers, ReadFromATfJob) {
  using nlohmann::json;
  json tfjob = {{"metadata", {{"namespace", "ns"}, {"name", "t"}}},
                {"spec", {{"tfReplicaSpecs", {{"Chief", {{"replicas", 1}}}, {"Worker", {{"replicas", 4}}}}}}},
                {"status", {{"replicaStatuses", {{"Chief", {{"active", 1}}}, {"Worker", {{"active", 3}}}}}}}};
  auto w = TfJobWorkersOf(tfjob);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->ns, "ns");
  EXPECT_EQ(w->name, "t");
  EXPECT_EQ(w->active, 3);
  EXPECT_EQ(w->wanted, 4);
  tfjob.erase("status");                                        // training-operator's status not written yet
  tfjob["spec"]["tfReplicaSpecs"]["Worker"].erase("replicas");  // kubeflow's default: 1
  w = TfJobWorkersOf(tfjob);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->active, 0);
  EXPECT_EQ(w->wanted, 1);
  tfjob["spec"]["tfReplicaSpecs"].erase("Worker");  // a chief alone: no worker gauges
  EXPECT_FALSE(TfJobWorkersOf(tfjob).has_value());
}

TEST(ProcessMetrics, ParsesProcSelfStatWithAnAwkwardName) {
  // pid (comm) state ppid ... : comm may hold spaces and ')'.
  const char* stat =
      "4242 (ring) master) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0 12345 104857600 2560 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto p = ParseProcStat(stat);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->utime_ticks, 250u);
  EXPECT_EQ(p->stime_ticks, 50u);
  EXPECT_EQ(p->start_ticks, 12345u);
  EXPECT_EQ(p->vsize_bytes, 104857600u);
  EXPECT_EQ(p->rss_pages, 2560);
  EXPECT_FALSE(ParseProcStat("garbage").has_value());
  EXPECT_FALSE(ParseProcStat("1 (x) S 1 2").has_value());
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nbtime 1764000000\nprocesses 9\n"), 1764000000);
  EXPECT_FALSE(ParseBootTime("cpu 1\n").has_value());
}

TEST(ProcessMetrics, CollectsThisProcess) {
  const std::string text = RenderText(ProcessCollector());
  for (const char* name :
       {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_virtual_memory_bytes ",
        "process_start_time_seconds ", "process_open_fds ", "process_max_fds "})
    EXPECT_NE(text.find(std::string("\n") + name), std::string::npos) << name << "\n" << text;
}

}  // namespace
}  // namespace ringmaster::op
