// The agent's own log lines on stderr: warnings and notices always, debug lines when
// RINGMASTER_LOG_LEVEL=debug.
#pragma once

#include <string>

namespace ringmaster::internal {

bool DebugLogEnabled();
void DebugLog(const std::string& msg);
void Warn(const std::string& msg);
// Lines worth a line without being wrong (a recovery's resume point).
void Info(const std::string& msg);

// Writes `text` to stderr in one write(2) (retried only for the part a short
// write left). The agent's lines share stderr with the training program's
// other threads; std::cerr's `<<` pieces are separate writes, so another
// thread's line could land in the middle of ours.
void WriteStderr(const std::string& text);

}  // namespace ringmaster::internal
