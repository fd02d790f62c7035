// How much slower the engine runs in a sanitizer build: a test's timeouts
// and its bounds on waiting ("long before the deadline") are multiplied by
// it, so that a ThreadSanitizer tree on a loaded 2-core machine (CI builds
// beside it) is not failed for being slow. A test that waits for a deadline
// on purpose waits that much longer there.
#pragma once

namespace ringmaster::testing {

#if defined(__SANITIZE_THREAD__)
inline constexpr double kSanitizerPace = 3;  // 64 members over gRPC: 7.5 s idle, 0.3 s in build/
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr double kSanitizerPace = 1.5;
#else
inline constexpr double kSanitizerPace = 1;
#endif

}  // namespace ringmaster::testing
