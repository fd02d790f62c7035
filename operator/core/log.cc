#include "log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "time_util.h"

namespace ringmaster::op {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;
const char* Name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}
}  // namespace

void SetLogLevel(LogLevel level) {
  g_level = static_cast<int>(level);
}

void Log(LogLevel level, const std::string& msg, const nlohmann::json& fields) {
  if (static_cast<int>(level) < g_level.load()) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  nlohmann::json line = {{"ts", FormatRfc3339(std::chrono::duration_cast<std::chrono::seconds>(now).count())},
                         {"level", Name(level)},
                         {"msg", msg}};
  if (fields.is_object()) {
    for (const auto& [k, v] : fields.items()) line[k] = v;
  }
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace ringmaster::op
