#include "process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace ringmaster::op {

namespace {

std::string Slurp(const char* path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type, double v) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter)
    m.counter.value = v;
  else
    m.gauge.value = v;
  f.metric.push_back(m);
  return f;
}

double OpenFds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return 0;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1;  // the directory's own descriptor
}

}  // namespace

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  // After "pid (comm) ": field 3 (state) onwards; we need 14, 15, 22, 23, 24.
  std::vector<std::string_view> f;
  for (size_t i = close + 1; i < text.size();) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\n') ++j;
    if (j > i) f.push_back(text.substr(i, j - i));
    i = j;
  }
  if (f.size() < 22) return std::nullopt;
  auto num = [&](size_t field, auto& out) {  // field: 1-based in proc(5)
    const std::string_view s = f[field - 3];
    return std::from_chars(s.data(), s.data() + s.size(), out).ec == std::errc();
  };
  ProcStat p;
  if (!num(14, p.utime_ticks) || !num(15, p.stime_ticks) || !num(22, p.start_ticks) ||
      !num(23, p.vsize_bytes) || !num(24, p.rss_pages))
    return std::nullopt;
  return p;
}

std::optional<int64_t> ParseBootTime(std::string_view proc_stat) {
  for (size_t at = 0; at < proc_stat.size();) {
    size_t end = proc_stat.find('\n', at);
    if (end == std::string_view::npos) end = proc_stat.size();
    std::string_view line = proc_stat.substr(at, end - at);
    if (line.rfind("btime ", 0) == 0) {
      int64_t v = 0;
      line.remove_prefix(6);
      if (std::from_chars(line.data(), line.data() + line.size(), v).ec == std::errc()) return v;
      return std::nullopt;
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (auto p = ParseProcStat(Slurp("/proc/self/stat")); p && ticks > 0) {
    out.push_back(Family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                         MetricType::Counter, static_cast<double>(p->utime_ticks + p->stime_ticks) / ticks));
    out.push_back(Family("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
                         static_cast<double>(p->rss_pages) * static_cast<double>(sysconf(_SC_PAGESIZE))));
    out.push_back(Family("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
                         static_cast<double>(p->vsize_bytes)));
    if (auto boot = ParseBootTime(Slurp("/proc/stat")))
      out.push_back(Family("process_start_time_seconds",
                           "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                           static_cast<double>(*boot) + static_cast<double>(p->start_ticks) / ticks));
  }
  out.push_back(Family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, OpenFds()));
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    out.push_back(Family("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
                         static_cast<double>(lim.rlim_cur)));
  return out;
}

}  // namespace ringmaster::op
