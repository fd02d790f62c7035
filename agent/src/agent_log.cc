#include "agent_log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "ringmaster/env_vars.h"

namespace ringmaster::internal {

bool DebugLogEnabled() {
  static const bool on = [] {
    const char* v = std::getenv(kEnvLogLevel);
    return v && std::string(v) == "debug";
  }();
  return on;
}

void DebugLog(const std::string& msg) {
  if (DebugLogEnabled()) WriteStderr("ringmaster: debug: " + msg + "\n");
}

void Warn(const std::string& msg) {
  WriteStderr("ringmaster: warning: " + msg + "\n");
}

void Info(const std::string& msg) {
  WriteStderr("ringmaster: " + msg + "\n");
}

void WriteStderr(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace ringmaster::internal
