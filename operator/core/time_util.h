// RFC 3339 timestamps as Kubernetes writes them ("2026-01-02T03:04:05Z").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringmaster::op {

std::string FormatRfc3339(int64_t seconds_since_epoch);
// Accepts "Z" or a numeric offset and fractional seconds (dropped).
std::optional<int64_t> ParseRfc3339(std::string_view text);
// Wall-clock seconds since the epoch (timestamps written to the API server).
int64_t NowSeconds();

}  // namespace ringmaster::op
