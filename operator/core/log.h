// Structured logs: one JSON object a line on stderr ({"ts","level","msg",...}).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ringmaster::op {

enum class LogLevel { kDebug, kInfo, kWarning, kError };
void SetLogLevel(LogLevel level);
void Log(LogLevel level, const std::string& msg, const nlohmann::json& fields = nlohmann::json::object());
inline void LogInfo(const std::string& m, const nlohmann::json& f = nlohmann::json::object()) {
  Log(LogLevel::kInfo, m, f);
}
inline void LogWarning(const std::string& m, const nlohmann::json& f = nlohmann::json::object()) {
  Log(LogLevel::kWarning, m, f);
}
inline void LogError(const std::string& m, const nlohmann::json& f = nlohmann::json::object()) {
  Log(LogLevel::kError, m, f);
}

}  // namespace ringmaster::op
