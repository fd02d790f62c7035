// Kubernetes Events, sent off the reconcile path: Record() only queues (a
// bounded queue; when it is full the event is dropped and logged), and one
// thread posts them through a client of its own, so events never use the
// rate budget that pod creation needs (as controller-runtime's recorder).
// A POST that gets no answer, 429 or 5xx (the API server restarting, etcd
// away) is tried again, in order, for up to two minutes
// (core/event_delivery.h); a retry of one that landed is a 409, delivered.
// A once-event whose telling cannot wait (a restart's, before its pod is
// deleted) is posted by Deliver on the caller's thread instead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "client.h"

namespace ringmaster::op {

// How long a plan waits for its once-events (EventRecorder::Deliver).
inline constexpr std::chrono::milliseconds kOnceEventWaitFor{5000};

class EventRecorder {
 public:
  EventRecorder(KubeClient& client, size_t capacity = 1000);
  ~EventRecorder();
  void Start();
  // Sends what is queued for up to `grace`, then stops.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  // `involved` is the object the event is about (its apiVersion is given).
  // `once` (not empty): the one event under that key for the object
  // (JobEvent::once: "end", "restart.<pod uid>"), named for the key and the
  // object's uid ("<name>.<once>.<uid>"): queued only if this recorder has
  // not queued or delivered it already, and a repeat POST of another
  // recorder's is answered 409, delivered. Returns whether it was queued.
  bool Record(const nlohmann::json& involved, const std::string& api_version, const std::string& kind,
              bool warning, const std::string& reason, const std::string& message,
              const std::string& once = "");
  // The same event, posted now on the caller's thread until it lands or
  // `within` has passed (retried as the queue's are): for a once-event the
  // caller must not go on without, as the evidence that would tell it again
  // is about to go (a failed pod's restart). OK when it is delivered, by
  // this call or before (409 included); else Unavailable naming it, and a
  // later telling may deliver it.
  Status Deliver(const nlohmann::json& involved, const std::string& api_version, const std::string& kind,
                 bool warning, const std::string& reason, const std::string& message, const std::string& once,
                 std::chrono::milliseconds within);
  // Whether the once-event `once` of `involved` is queued or delivered here.
  bool Known(const nlohmann::json& involved, const std::string& once);
  uint64_t dropped() const { return dropped_; }

 private:
  // A once-event's "namespace/name".
  static std::string OnceKey(const nlohmann::json& involved, const std::string& once);
  // The Event object (its name: the once key's, or a fresh one).
  nlohmann::json Make(const nlohmann::json& involved, const std::string& api_version, const std::string& kind,
                      bool warning, const std::string& reason, const std::string& message,
                      const std::string& once);
  // Remembers a once-event's key (under mu_).
  void KnowOnce(const std::string& key);
  struct Queued {
    nlohmann::json event;
    std::chrono::steady_clock::time_point recorded;
    int attempts = 0;
    bool once = false;  // named by its once key
  };
  // Once-events queued or delivered, the oldest forgotten past kOnceKept.
  static constexpr size_t kOnceKept = 4096;
  std::set<std::string> once_known_;
  std::deque<std::string> once_order_;
  void Run();
  KubeClient& client_;
  size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;          // the thread's: an event queued, or stop
  std::condition_variable stopped_cv_;  // Deliver's waits: stop
  std::deque<Queued> queue_;
  bool stop_ = false;
  std::chrono::steady_clock::time_point stop_by_{};
  std::atomic<uint64_t> dropped_{0}, seq_{0};
  std::thread thread_;
};

}  // namespace ringmaster::op
