// The executor of one formation: a fixed set of slots (streams), each with
// its own Transport, a bounded queue and one thread; no thread per
// collective. Collectives get dense sequence numbers in submission order,
// the same on every member; slot = seq % streams (or the op's pinned slot),
// so the n-th collective of a slot pairs with the n-th on every peer.
// A failure here is diagnosed (who is behind, whose shapes differ) before
// the group is aborted with it.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/op.h"
#include "group/group.h"
#include "ringmaster/communicator.h"

namespace ringmaster::internal {

// How long a broken data connection waits for its peer's abort notice.
inline constexpr int kAbortWordGraceMs = 200;
// Calls queued per slot before a submitter waits.
inline constexpr size_t kMaxQueuedPerSlot = 4096;

class Executor {
 public:
  struct Options {
    // Where collectives are recorded (null: the group's recorder).
    std::shared_ptr<FlightRecorder> recorder;
    // Whether a failure asks the other members where they stand (the group's
    // progress query knows the group's own sequence numbers only).
    bool exchange = true;
    // The last `reserved` slots run only ops pinned to them (Op::slot): the
    // GPU's, so that no host collective queues behind a GPU call.
    int reserved = 0;
  };
  // transports[s] carries slot s (at least one).
  Executor(std::shared_ptr<Group> group, std::vector<std::unique_ptr<Transport>> transports,
           const EngineClock* clock = &EngineClock::Steady());
  Executor(std::shared_ptr<Group> group, std::vector<std::unique_ptr<Transport>> transports, Options options,
           const EngineClock* clock = &EngineClock::Steady());
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues the ops of one call. sync: the caller waits at once, so a call
  // of one op whose slot is idle runs on the caller's thread (no hand-off).
  CollectiveHandle Submit(std::vector<Op> ops, Deadline deadline, const std::string& what, bool sync = false);
  // The same for process set `set` (> 0): its ops get the set's own wire
  // sequence numbers, so members outside the set need not count them.
  CollectiveHandle SubmitToSet(int set, std::vector<Op> ops, Deadline deadline, const std::string& what,
                               bool sync = false);
  // Stops the threads once what is queued has drained (it fails fast: abort
  // the group first) and no caller runs an op inline.
  void Stop();

  const std::shared_ptr<Group>& group() const { return group_; }
  static CollectiveHandle Failed(const Status& s);

 private:
  struct Slot {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Op> queue;
    bool stop = false;
    bool busy = false;  // an op is running on the transport (its thread or an inline caller)
    std::unique_ptr<Transport> transport;
    std::thread thread;
  };
  Slot* SlotFor(const Op& op) const;
  void Loop(Slot* slot);
  Status RunOp(Slot* slot, const Op& op);  // on the thread that holds slot->busy
  // What a failed collective's status should say: who is behind on a
  // timeout, whose shapes differ on a protocol error.
  Status Diagnose(const Op& op, Status st);

  // Numbers op for submission (under mu_).
  void Number(Op& op, int set);
  FlightRecorder& recorder() { return *recorder_; }

  std::shared_ptr<Group> group_;
  const EngineClock* clock_;
  std::shared_ptr<FlightRecorder> own_recorder_;  // Options::recorder
  FlightRecorder* recorder_;
  bool exchange_ = true;
  size_t unpinned_ = 1;  // the slots that take ops pinned nowhere: the first ones
  std::mutex mu_;        // submission order
  uint64_t next_seq_ = 1;
  std::map<int, uint64_t> set_seq_;  // the last wire number of each process set
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace ringmaster::internal
