// One unit of work of the executor: a collective (or one pack of one) that
// runs over a Transport, and the shared state of the call it belongs to.
// This is the whole seam between the engine and what builds collectives
// (collectives.cc, the GPU backend).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "collectives/op_info.h"
#include "transport/transport.h"

namespace ringmaster::internal {

class Group;

// The state behind a CollectiveHandle: the call's packs still pending, its
// first error, and its deadline.
struct CallState {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0;
  Status status;
  Deadline deadline = NoDeadline();  // on `clock`
  const EngineClock* clock = &EngineClock::Steady();
  std::string what;  // "all-reduce of 3 tensors", for errors
  std::shared_ptr<Group> group;
  std::function<void(const Status&)> then;  // CollectiveHandle::Then
  void Finish(const Status& s);
};

struct Op {
  OpInfo info;       // for the flight recorder and the diagnosis
  std::string what;  // "all-reduce pack 0 of 3" (empty: the call's)
  std::function<Status(Transport&)> run;
  int slot = -1;  // >= 0: always this executor slot (GPU calls: one order for NCCL)
  // Asked after `run` failed: whether every member failed this op alike and
  // knows it (what it exchanged says so), so that the call fails but the
  // group stays formed (a GPU fusion buffer some member cannot allocate).
  std::function<bool()> failed_alike;
  // Set by the executor. `seq` numbers the executor's collectives (the
  // flight recorder's key); `wire_seq` is what the transport checks: the same
  // as `seq`, or, for a process set, the set's own count (every member of the
  // set, and only they, counts its collectives).
  uint64_t seq = 0;
  uint64_t wire_seq = 0;
  std::shared_ptr<CallState> call;
};

}  // namespace ringmaster::internal
