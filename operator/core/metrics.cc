#include "metrics.h"

#include <cstdint>
#include <sstream>

namespace ringmaster::op {
namespace {

std::string FormatValue(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Metrics::DeclareCounter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& f = families_[name];
  f.help = help;
  f.type = "counter";
}

void Metrics::DeclareGauge(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& f = families_[name];
  f.help = help;
  f.type = "gauge";
}

void Metrics::DeclareHistogram(const std::string& name, const std::string& help,
                               std::vector<double> buckets) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& f = families_[name];
  f.help = help;
  f.type = "histogram";
  f.buckets = std::move(buckets);
  f.counts.assign(f.buckets.size(), 0);
}

void Metrics::Add(const std::string& name, double delta, const std::string& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type == "histogram") return;
  it->second.series[labels] += delta;
}

void Metrics::Set(const std::string& name, double value, const std::string& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type == "histogram") return;
  it->second.series[labels] = value;
}

void Metrics::SetAll(const std::string& name, const std::map<std::string, double>& by_labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type != "gauge") return;
  it->second.series = by_labels;
}

void Metrics::Observe(const std::string& name, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type != "histogram") return;
  Family& f = it->second;
  for (size_t i = 0; i < f.buckets.size(); ++i) {
    if (value <= f.buckets[i]) {
      ++f.counts[i];
      break;
    }
  }
  f.sum += value;
  ++f.count;
}

double Metrics::Value(const std::string& name, const std::string& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  if (it->second.type == "histogram") return static_cast<double>(it->second.count);
  auto s = it->second.series.find(labels);
  return s == it->second.series.end() ? 0 : s->second;
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream os;
  for (const auto& [name, f] : families_) {
    os << "# HELP " << name << " " << f.help << "\n# TYPE " << name << " " << f.type << "\n";
    if (f.type == "histogram") {
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += f.counts[i];
        os << name << "_bucket{le=\"" << FormatValue(f.buckets[i]) << "\"} " << cumulative << "\n";
      }
      os << name << "_bucket{le=\"+Inf\"} " << f.count << "\n";
      os << name << "_sum " << FormatValue(f.sum) << "\n";
      os << name << "_count " << f.count << "\n";
      continue;
    }
    if (f.series.empty() && f.type == "counter") os << name << " 0\n";
    for (const auto& [labels, v] : f.series) {
      os << name;
      if (!labels.empty()) os << "{" << labels << "}";
      os << " " << FormatValue(v) << "\n";
    }
  }
  return os.str();
}

}  // namespace ringmaster::op
