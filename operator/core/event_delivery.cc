// The event recorder's rule for one POST's answer (event_delivery.h).
#include "event_delivery.h"

#include <algorithm>

namespace ringmaster::op {

EventPostDecision DecideEventPost(int http_code, int attempts, std::chrono::milliseconds age) {
  using std::chrono::milliseconds;
  if ((http_code >= 200 && http_code < 300) || http_code == 409)
    return {EventPostNext::kDone, milliseconds(0)};
  const bool transient = http_code == 0 || http_code == 429 || (http_code >= 500 && http_code < 600);
  if (!transient) return {EventPostNext::kDrop, milliseconds(0)};
  const int doublings = std::clamp(attempts - 1, 0, 4);  // 250 ms, 500 ms, 1 s, 2 s, then 4 s
  const milliseconds delay(250LL << doublings);
  if (age + delay >= kEventRetryFor) return {EventPostNext::kDrop, milliseconds(0)};
  return {EventPostNext::kRetry, delay};
}

}  // namespace ringmaster::op
