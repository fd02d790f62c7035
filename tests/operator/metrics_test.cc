#include "metrics.h"

#include <gtest/gtest.h>

namespace ringmaster::op {
namespace {

TEST(Metrics, RendersPrometheusText) {
  Metrics m;
  m.DeclareCounter("ringmaster_reconciles_total", "Reconciles done.");
  m.DeclareGauge("ringmaster_jobs", "Jobs by condition.");
  m.DeclareHistogram("ringmaster_reconcile_seconds", "Reconcile latency.", {0.01, 0.1, 1});
  m.Add("ringmaster_reconciles_total", 1);
  m.Add("ringmaster_reconciles_total", 2);
  m.SetAll("ringmaster_jobs", {{"condition=\"Running\"", 2}, {"condition=\"Failed\"", 1}});
  m.Observe("ringmaster_reconcile_seconds", 0.005);
  m.Observe("ringmaster_reconcile_seconds", 0.5);
  m.Observe("ringmaster_reconcile_seconds", 5);
  m.Add("undeclared", 1);
  EXPECT_EQ(m.Value("ringmaster_reconciles_total"), 3);
  const std::string text = m.Render();
  EXPECT_EQ(text,
            "# HELP ringmaster_jobs Jobs by condition.\n"
            "# TYPE ringmaster_jobs gauge\n"
            "ringmaster_jobs{condition=\"Failed\"} 1\n"
            "ringmaster_jobs{condition=\"Running\"} 2\n"
            "# HELP ringmaster_reconcile_seconds Reconcile latency.\n"
            "# TYPE ringmaster_reconcile_seconds histogram\n"
            "ringmaster_reconcile_seconds_bucket{le=\"0.01\"} 1\n"
            "ringmaster_reconcile_seconds_bucket{le=\"0.10000000000000001\"} 1\n"
            "ringmaster_reconcile_seconds_bucket{le=\"1\"} 2\n"
            "ringmaster_reconcile_seconds_bucket{le=\"+Inf\"} 3\n"
            "ringmaster_reconcile_seconds_sum 5.5049999999999999\n"
            "ringmaster_reconcile_seconds_count 3\n"
            "# HELP ringmaster_reconciles_total Reconciles done.\n"
            "# TYPE ringmaster_reconciles_total counter\n"
            "ringmaster_reconciles_total 3\n");
}

TEST(Metrics, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace ringmaster::op
