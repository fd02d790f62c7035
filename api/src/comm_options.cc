#include "ringmaster/comm_options.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace ringmaster {

std::string_view ImplementationName(Implementation impl) {
  switch (impl) {
    case Implementation::kAuto:
      return "AUTO";
    case Implementation::kRing:
      return "RING";
    case Implementation::kNccl:
      return "NCCL";
  }
  return "AUTO";
}

StatusOr<Implementation> ParseImplementation(std::string_view text, std::string_view field) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "AUTO") return Implementation::kAuto;
  if (upper == "RING") return Implementation::kRing;
  if (upper == "NCCL") return Implementation::kNccl;
  return InvalidArgumentError(std::string(field) + ": unknown implementation '" + std::string(text) +
                              "', expected one of AUTO, RING, NCCL");
}

Status CommunicationOptions::Validate() const {
  if (bytes_per_pack < 0) {
    return InvalidArgumentError("bytes_per_pack must be >= 0, got " + std::to_string(bytes_per_pack));
  }
  if (timeout_seconds && (*timeout_seconds < 0 || std::isnan(*timeout_seconds))) {
    return InvalidArgumentError("timeout_seconds must be >= 0, got " + std::to_string(*timeout_seconds));
  }
  return OkStatus();
}

CommunicationOptions CommunicationOptions::Merge(const CommunicationOptions& per_call) const {
  CommunicationOptions merged = *this;
  if (per_call.bytes_per_pack != 0) merged.bytes_per_pack = per_call.bytes_per_pack;
  if (per_call.timeout_seconds.has_value()) merged.timeout_seconds = per_call.timeout_seconds;
  if (per_call.implementation != Implementation::kAuto) merged.implementation = per_call.implementation;
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
  return {
      {kEnvImplementation, std::string(ImplementationName(implementation))},
      {kEnvBytesPerPack, std::to_string(bytes_per_pack)},
      {kEnvTimeoutSeconds, timeout_seconds ? FormatSeconds(*timeout_seconds) : "0"},
  };
}

StatusOr<CommunicationOptions> CommunicationOptions::FromEnv(
    const std::function<const char*(const char*)>& getenv_fn) {
  CommunicationOptions out;
  if (const char* v = getenv_fn(kEnvImplementation); v && *v) {
    auto impl = ParseImplementation(v, kEnvImplementation);
    if (!impl.ok()) return impl.status();
    out.implementation = *impl;
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
