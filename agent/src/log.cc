#include "log.h"

#include <cstdlib>
#include <iostream>

namespace ringmaster::internal {

bool DebugLogEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("RINGMASTER_LOG_LEVEL");
    return v && std::string(v) == "debug";
  }();
  return on;
}

void DebugLog(const std::string& msg) {
  if (DebugLogEnabled()) std::cerr << "ringmaster: debug: " << msg << std::endl;
}

void Warn(const std::string& msg) {
  std::cerr << "ringmaster: warning: " << msg << std::endl;
}

}  // namespace ringmaster::internal
