// Time for the engine: the steady clock, deadlines (NoDeadline: none), the
// poll() timeout until one, EngineClock, the engine's "now" that tests
// replace with a fake one, and how a message writes a duration.
#pragma once

#include <chrono>
#include <string>

namespace ringmaster::internal {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
inline Deadline NoDeadline() {
  return Deadline::max();
}
Deadline DeadlineAfter(double seconds);
// Milliseconds until the deadline for poll(): -1 for none, 0 when passed.
int PollTimeoutMs(Deadline d, int cap_ms = -1);

// The engine's "now": the steady clock in production, a fake one in tests,
// so deadlines are testable without sleeping.
class EngineClock {
 public:
  virtual ~EngineClock() = default;
  virtual Clock::time_point Now() const = 0;
  static const EngineClock& Steady();
};

// "200 ms", "5 s", "1.5 s", "2 min 30 s".
std::string FormatSeconds(double seconds);

}  // namespace ringmaster::internal
