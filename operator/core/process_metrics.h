// Prometheus' process_* metrics for this process (what every client library
// exports; prometheus-cpp has no collector for them): CPU seconds, resident
// and virtual memory, start time, open and maximum file descriptors, read
// from /proc at each scrape. The parsing is pure and unit-tested.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ringmaster::op {

struct ProcStat {
  uint64_t utime_ticks = 0, stime_ticks = 0;  // user and system CPU, in clock ticks
  uint64_t start_ticks = 0;                   // start time after boot, in clock ticks
  uint64_t vsize_bytes = 0;
  int64_t rss_pages = 0;
};

// /proc/self/stat's fields (the command name may hold spaces and parentheses:
// it ends at the last ')'); nullopt when the text is not one.
std::optional<ProcStat> ParseProcStat(std::string_view text);
// /proc/stat's "btime" (boot time, seconds since the epoch).
std::optional<int64_t> ParseBootTime(std::string_view proc_stat);

class ProcessCollector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace ringmaster::op
