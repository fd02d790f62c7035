// The agent's own log lines on stderr: warnings always, debug lines when
// RINGMASTER_LOG_LEVEL=debug.
#pragma once

#include <string>

namespace ringmaster::internal {

bool DebugLogEnabled();
void DebugLog(const std::string& msg);
void Warn(const std::string& msg);

}  // namespace ringmaster::internal
