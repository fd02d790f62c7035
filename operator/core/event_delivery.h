// What the event recorder does with an Event after one POST of it: the pure
// rule behind operator/kube/events.cc. An API server that is away (restarted,
// its etcd down) must not cost the job's history its events, and a retry of
// a POST that did land must not record the event twice: each Event has a
// name of its own (Record() makes it), so the server answers such a retry
// 409 AlreadyExists, which counts as delivered.
#pragma once

#include <chrono>

namespace ringmaster::op {

enum class EventPostNext { kDone, kRetry, kDrop };

struct EventPostDecision {
  EventPostNext next = EventPostNext::kDone;
  std::chrono::milliseconds delay{0};  // before the next POST (kRetry)
};

// How long an event is tried for, from its Record(): past this it is dropped
// (and logged), as a stale event says little.
inline constexpr std::chrono::seconds kEventRetryFor{120};

// `http_code`: the answer's code, 0 when none came (a transport failure);
// `attempts`: POSTs made so far (1 after the first); `age`: since Record().
// 2xx and 409 are delivered; no answer, 429 and 5xx are retried, 250 ms
// doubling up to 4 s, while the event is younger than kEventRetryFor; any
// other answer (403 of a terminating namespace, 422) is dropped.
EventPostDecision DecideEventPost(int http_code, int attempts, std::chrono::milliseconds age);

}  // namespace ringmaster::op
