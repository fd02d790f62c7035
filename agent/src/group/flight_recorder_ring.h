// The flight recorder: what this member did in its last K collectives, in
// fixed memory (K entries allocated once), so a failure can say who was
// where. Entry k holds collective #seq with seq % K == k: sequence numbers are
// dense, so finding a collective is one index, and the oldest entry is the
// one overwritten. One spin lock, held for a few stores per collective and
// almost never contended (the cost is measured in docs/benchmarks/allreduce.md).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "collectives/op_info.h"
#include "group/flight_entry.h"
#include "ringmaster/communicator.h"

namespace ringmaster::internal {

// A member's answer about one collective (what the diagnosis exchanges).
struct ProgressReport {
  Progress progress = Progress::kUnknown;  // kUnknown: no answer
  uint64_t last_finished = 0;              // its highest finished collective
  uint64_t last_started = 0;
  OpInfo info;  // valid when progress is not kNeverEntered/kUnknown
};

// A lock for a few stores: cheaper than a mutex when, as here, the holder
// never blocks and contention is rare (a diagnosis or a dump reading).
class SpinLock {
 public:
  void lock() {
    while (flag_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_ = ATOMIC_FLAG_INIT;
};

class Timeline;

class FlightRecorder {
 public:
  explicit FlightRecorder(size_t capacity = 1024);
  size_t capacity() const { return ring_.size(); }

  // A new formation: sequence numbers start again at 1.
  void Reset();
  void Queued(uint64_t seq, const OpInfo& info);
  void Started(uint64_t seq);
  void Finished(uint64_t seq, StatusCode outcome, const HeardRanks& heard_from);
  // `heard_from` as a bit mask of ranks (tests of small groups).
  void Finished(uint64_t seq, StatusCode outcome, uint64_t heard_from) {
    Finished(seq, outcome, HeardRanks::FromMask(heard_from));
  }

  // Every collective finished from now on also goes to `timeline` (null:
  // none), on row `stream` (timeline.h).
  void SetTimeline(std::shared_ptr<Timeline> timeline, int stream);

  ProgressReport Report(uint64_t seq) const;
  // The entries still held, oldest first (for dumps and tests).
  std::vector<FlightEntry> Snapshot() const;

 private:
  FlightEntry* Find(uint64_t seq);
  mutable SpinLock mu_;
  std::vector<FlightEntry> ring_;
  uint64_t last_finished_ = 0, last_started_ = 0, last_queued_ = 0;
  std::shared_ptr<Timeline> timeline_;
  int timeline_stream_ = 0;
};

// One JSON line (no newline) of the recorder's dump: the task, its abort
// cause and the last `max_entries` entries (docs/agent.md; `ringmaster
// flight-recorder` reads it).
std::string FlightDumpJson(const std::string& task, int rank, int size, const Status& cause,
                           const std::vector<FlightEntry>& entries, size_t max_entries);

}  // namespace ringmaster::internal
