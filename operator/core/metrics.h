// The operator's metrics, rendered in the Prometheus text format (0.0.4) for
// /metrics. A small registry: counters and gauges with one optional label
// set each, and fixed-bucket histograms. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ringmaster::op {

class Metrics {
 public:
  // Names must be declared before use; an undeclared name is ignored.
  void DeclareCounter(const std::string& name, const std::string& help);
  void DeclareGauge(const std::string& name, const std::string& help);
  void DeclareHistogram(const std::string& name, const std::string& help, std::vector<double> buckets);

  // `labels` is the rendered label set without braces, e.g. `condition="Running"`.
  void Add(const std::string& name, double delta, const std::string& labels = "");
  void Set(const std::string& name, double value, const std::string& labels = "");
  // Replaces every series of a gauge (e.g. jobs by condition).
  void SetAll(const std::string& name, const std::map<std::string, double>& by_labels);
  void Observe(const std::string& name, double value);

  double Value(const std::string& name, const std::string& labels = "") const;
  std::string Render() const;

 private:
  struct Family {
    std::string help, type;
    std::map<std::string, double> series;
    std::vector<double> buckets;   // histogram upper bounds
    std::vector<uint64_t> counts;  // per bucket (non-cumulative)
    double sum = 0;
    uint64_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

// Escapes a label value for the text format (backslash, quote, newline).
std::string EscapeLabelValue(const std::string& v);

}  // namespace ringmaster::op
