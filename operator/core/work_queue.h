// A work queue keyed by "namespace/name", with client-go's semantics: a key is
// queued at most once, never handed to two workers at a time (a key added
// while it is being processed is handed out again after Done), delayed
// re-adds, and per-key exponential backoff for failures. Bounded by the
// number of distinct keys. Thread-safe. Time comes from an injected clock, so
// tests need no sleeps; what happens is told to an optional observer (the
// metrics: client-go's workqueue_* names).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace ringmaster::op {

// Per-key exponential backoff: base * 2^failures, capped.
class ItemBackoff {
 public:
  ItemBackoff(std::chrono::milliseconds base, std::chrono::milliseconds cap) : base_(base), cap_(cap) {}
  // The delay before the next retry of `key`; counts a failure.
  std::chrono::milliseconds When(const std::string& key);
  void Forget(const std::string& key) { failures_.erase(key); }
  int Failures(const std::string& key) const;

 private:
  std::chrono::milliseconds base_, cap_;
  std::map<std::string, int> failures_;
};

// What the queue reports, as client-go's workqueue metrics provider does.
class WorkQueueObserver {
 public:
  virtual ~WorkQueueObserver() = default;
  virtual void Added() = 0;                 // every Add (adds_total)
  virtual void Retried() = 0;               // every AddRateLimited (retries_total)
  virtual void Depth(size_t keys) = 0;      // after every change of the ready keys
  virtual void Queued(double seconds) = 0;  // from Add to Get
  virtual void Worked(double seconds) = 0;  // from Get to Done
  // Of the keys being processed: the seconds summed, and the longest.
  virtual void Unfinished(double total_seconds, double longest_seconds) = 0;
};

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;
  explicit WorkQueue(std::chrono::milliseconds backoff_base = std::chrono::milliseconds(5),
                     std::chrono::milliseconds backoff_cap = std::chrono::seconds(60), Now now = Clock::now,
                     WorkQueueObserver* observer = nullptr);

  void Add(const std::string& key);
  // Adds the key after `delay` (the earliest pending time wins).
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);
  // A failed attempt: re-add after the key's backoff.
  void AddRateLimited(const std::string& key);
  // Success: reset the key's backoff.
  void Forget(const std::string& key);
  // Blocks up to `timeout` for a key; nullopt on timeout or shutdown.
  std::optional<std::string> Get(std::chrono::milliseconds timeout);
  // The worker finished `key`.
  void Done(const std::string& key);
  // Wakes every Get; later Gets return nullopt at once.
  void ShutDown();
  bool ShuttingDown() const;
  size_t Len() const;  // keys ready to be handed out
  int Failures(const std::string& key) const;
  // Tells the observer how long the keys being processed have taken so far
  // (called periodically: client-go's unfinished and longest-running work).
  void ReportUnfinished() const;

 private:
  void PromoteDueLocked(Clock::time_point now);
  void AddLocked(const std::string& key);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;
  std::map<std::string, Clock::time_point> processing_;  // key -> when Get handed it out
  std::map<std::string, Clock::time_point> added_;       // key -> when it was queued (for Queued)
  std::map<std::string, Clock::time_point> delayed_;
  ItemBackoff backoff_;
  Now now_;
  WorkQueueObserver* observer_;
  bool shutdown_ = false;
};

}  // namespace ringmaster::op
