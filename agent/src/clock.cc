#include "clock.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace ringmaster::internal {

const EngineClock& EngineClock::Steady() {
  struct SteadyClock final : EngineClock {
    Clock::time_point Now() const override { return Clock::now(); }
  };
  static const SteadyClock clock;
  return clock;
}

Deadline DeadlineAfter(double seconds) {
  if (seconds <= 0 || seconds > 1e9) return NoDeadline();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int PollTimeoutMs(Deadline d, int cap_ms) {
  if (d == NoDeadline()) return cap_ms;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count() + 1;
  if (left <= 0) return 0;
  if (cap_ms >= 0 && left > cap_ms) return cap_ms;
  return static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

std::string FormatSeconds(double s) {
  char buf[64];
  if (!(s >= 0) || std::isinf(s)) return "forever";
  if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.0f ms", s * 1000);
  } else if (s < 120) {
    std::snprintf(buf, sizeof buf, "%.3g s", s);
  } else {
    const long total = std::lround(s);
    if (total % 60)
      std::snprintf(buf, sizeof buf, "%ld min %ld s", total / 60, total % 60);
    else
      std::snprintf(buf, sizeof buf, "%ld min", total / 60);
  }
  return buf;
}

}  // namespace ringmaster::internal
