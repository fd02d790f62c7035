#include "ringmaster/comm_options.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "ringmaster/enum_names.h"

namespace ringmaster {

std::string_view ImplementationName(Implementation impl) {
  return ImplementationTable().NameOf(static_cast<int>(impl));
}

StatusOr<Implementation> ParseImplementation(std::string_view text, std::string_view field) {
  auto v = ImplementationTable().Parse(text, field);
  if (!v.ok()) return v.status();
  return static_cast<Implementation>(*v);
}

std::string_view AlgorithmName(Algorithm algorithm) {
  return AlgorithmTable().NameOf(static_cast<int>(algorithm));
}

StatusOr<Algorithm> ParseAlgorithm(std::string_view text, std::string_view field) {
  auto v = AlgorithmTable().Parse(text, field);
  if (!v.ok()) return v.status();
  return static_cast<Algorithm>(*v);
}

Status CommunicationOptions::Validate() const {
  if (bytes_per_pack < 0) {
    return InvalidArgumentError("bytes_per_pack must be >= 0, got " + std::to_string(bytes_per_pack));
  }
  if (timeout_seconds && (*timeout_seconds < 0 || std::isnan(*timeout_seconds))) {
    return InvalidArgumentError("timeout_seconds must be >= 0, got " + std::to_string(*timeout_seconds));
  }
  // Enums cast from integers (the C API, bindings) can hold anything.
  RM_RETURN_IF_ERROR(ImplementationTable().CheckValue(static_cast<int>(implementation), "implementation"));
  return AlgorithmTable().CheckValue(static_cast<int>(algorithm), "algorithm");
}

CommunicationOptions CommunicationOptions::Merge(const CommunicationOptions& per_call) const {
  CommunicationOptions merged = *this;
  if (per_call.bytes_per_pack != 0) merged.bytes_per_pack = per_call.bytes_per_pack;
  if (per_call.timeout_seconds.has_value()) merged.timeout_seconds = per_call.timeout_seconds;
  if (per_call.implementation != Implementation::kAuto) merged.implementation = per_call.implementation;
  if (per_call.algorithm != Algorithm::kAuto) merged.algorithm = per_call.algorithm;
  return merged;
}

std::optional<double> CommunicationOptions::EffectiveTimeout() const {
  if (timeout_seconds && *timeout_seconds > 0) return timeout_seconds;
  return std::nullopt;
}

namespace {

// Shortest text that reads back as the same double ("120", "0.5").
std::string FormatSeconds(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

template <typename T>
bool ParseWhole(std::string_view s, T& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

}  // namespace

std::map<std::string, std::string> CommunicationOptions::ToEnv() const {
  std::map<std::string, std::string> env = {
      {kEnvImplementation, std::string(ImplementationName(implementation))},
      {kEnvBytesPerPack, std::to_string(bytes_per_pack)},
      {kEnvTimeoutSeconds, timeout_seconds ? FormatSeconds(*timeout_seconds) : "0"},
  };
  // Absent is auto: jobs that never force an algorithm keep their three variables.
  if (algorithm != Algorithm::kAuto) env[kEnvAlgorithm] = std::string(AlgorithmName(algorithm));
  return env;
}

StatusOr<CommunicationOptions> CommunicationOptions::FromEnv(
    const std::function<const char*(const char*)>& getenv_fn) {
  CommunicationOptions out;
  if (const char* v = getenv_fn(kEnvImplementation); v && *v) {
    auto impl = ParseImplementation(v, kEnvImplementation);
    if (!impl.ok()) return impl.status();
    out.implementation = *impl;
  }
  if (const char* v = getenv_fn(kEnvAlgorithm); v && *v) {
    auto algorithm = ParseAlgorithm(v, kEnvAlgorithm);
    if (!algorithm.ok()) return algorithm.status();
    out.algorithm = *algorithm;
  }
  if (const char* v = getenv_fn(kEnvBytesPerPack); v && *v) {
    if (!ParseWhole(v, out.bytes_per_pack)) {
      return InvalidArgumentError(std::string(kEnvBytesPerPack) + ": not an integer: '" + v + "'");
    }
    if (out.bytes_per_pack < 0) {
      return InvalidArgumentError(std::string(kEnvBytesPerPack) + " must be >= 0, got " + v);
    }
  }
  if (const char* v = getenv_fn(kEnvTimeoutSeconds); v && *v) {
    double t = 0;
    if (!ParseWhole(std::string_view(v), t) || std::isnan(t) || std::isinf(t)) {
      return InvalidArgumentError(std::string(kEnvTimeoutSeconds) + ": not a number: '" + v + "'");
    }
    if (t < 0) return InvalidArgumentError(std::string(kEnvTimeoutSeconds) + " must be >= 0, got " + v);
    // 0 in the environment is the operator's spelling of "no timeout".
    if (t > 0) out.timeout_seconds = t;
  }
  return out;
}

}  // namespace ringmaster
