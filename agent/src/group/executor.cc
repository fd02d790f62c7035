#include "group/executor.h"

#include <algorithm>

#include "group/failure_messages.h"

namespace ringmaster::internal {

Executor::Executor(std::shared_ptr<Group> group, std::vector<std::unique_ptr<Transport>> transports,
                   const EngineClock* clock)
    : Executor(std::move(group), std::move(transports), Options{}, clock) {}

Executor::Executor(std::shared_ptr<Group> group, std::vector<std::unique_ptr<Transport>> transports,
                   Options options, const EngineClock* clock)
    : group_(std::move(group)),
      clock_(clock),
      own_recorder_(std::move(options.recorder)),
      recorder_(own_recorder_ ? own_recorder_.get() : &group_->recorder()),
      exchange_(options.exchange) {
  recorder_->Reset();  // every member counts collectives from the formation on
  for (auto& t : transports) {
    auto slot = std::make_unique<Slot>();
    slot->transport = std::move(t);
    slots_.push_back(std::move(slot));
  }
  unpinned_ = slots_.size() > static_cast<size_t>(std::max(options.reserved, 0))
                  ? slots_.size() - static_cast<size_t>(std::max(options.reserved, 0))
                  : 1;
  for (auto& slot : slots_) slot->thread = std::thread([this, s = slot.get()] { Loop(s); });
}

Executor::~Executor() {
  Stop();
}

void Executor::Stop() {
  for (auto& slot : slots_) {
    {
      std::lock_guard<std::mutex> lock(slot->mu);
      slot->stop = true;
    }
    slot->cv.notify_all();
  }
  for (auto& slot : slots_) {
    if (slot->thread.joinable()) slot->thread.join();
    std::unique_lock<std::mutex> lock(slot->mu);
    slot->cv.wait(lock, [&] { return !slot->busy; });  // a caller running a collective inline
  }
}

CollectiveHandle Executor::Failed(const Status& s) {
  auto st = std::make_shared<CallState>();
  st->status = s;
  return MakeHandle(st);
}

Executor::Slot* Executor::SlotFor(const Op& op) const {
  if (op.slot >= 0) return slots_[static_cast<size_t>(op.slot) % slots_.size()].get();
  return slots_[op.seq % unpinned_].get();
}

void Executor::Loop(Slot* slot) {
  while (true) {
    Op op;
    {
      std::unique_lock<std::mutex> lock(slot->mu);
      slot->cv.wait(lock, [&] { return slot->stop || (!slot->queue.empty() && !slot->busy); });
      if (slot->queue.empty()) return;
      op = std::move(slot->queue.front());
      slot->queue.pop_front();
      slot->busy = true;
    }
    slot->cv.notify_all();  // room for a blocked submitter
    Status st = RunOp(slot, op);
    {
      std::lock_guard<std::mutex> lock(slot->mu);
      slot->busy = false;
    }
    op.call->Finish(st);
  }
}

Status Executor::RunOp(Slot* slot, const Op& op) {
  Group& g = *group_;
  FlightRecorder& rec = recorder();
  if (Status aborted = g.ForNewCall(); !aborted.ok()) {
    rec.Finished(op.seq, aborted.code(), 0);
    return aborted;  // queued when the group failed: fail fast with its cause
  }
  const Deadline deadline = op.call->deadline;
  if (clock_->Now() >= deadline) {
    Status st =
        DeadlineExceededError(DescribeCollective(op.seq, op.info) + " did not start before its deadline on " +
                              g.name(g.rank()) + " (queued behind earlier collectives)");
    rec.Finished(op.seq, st.code(), 0);
    g.CollectiveFailed(st);
    return g.ForFailedCall(st);
  }
  rec.Started(op.seq);
  slot->transport->Begin(op.wire_seq, deadline);
  Status st = op.run(*slot->transport);
  if (st.ok() || (op.failed_alike && op.failed_alike())) {
    rec.Finished(op.seq, st.code(), HeardRanks::FromRanks(slot->transport->HeardFrom()));
    return st;
  }
  st = Diagnose(op, st);
  // Recorded before the group fails, so the dump shows this collective's end.
  rec.Finished(op.seq, st.code(), HeardRanks::FromRanks(slot->transport->HeardFrom()));
  g.CollectiveFailed(st);
  return g.ForFailedCall(st);
}

Status Executor::Diagnose(const Op& op, Status st) {
  Group& g = *group_;
  if (g.aborted()) return st;  // an earlier cause, already diagnosed, wins
  if (st.code() == StatusCode::kUnavailable) {
    // A member that aborts says so on its control connection, then may tear
    // its data connections down (Reform, exit) before our monitor has read
    // its word: give that word a moment, so the error names the abort and
    // its culprit rather than a reset socket. A member that really died is
    // reported by the monitor at once too.
    g.WaitForAbort(kAbortWordGraceMs);
  } else if (!exchange_) {
    // A process set's collective: the progress query does not know its
    // numbers, so name it by the call ("process set 5: all-reduce of ...")
    // and the set's own count of collectives.
    return Status(st.code(), op.call->what + ": " + st.message() + " on " + g.name(g.rank()));
  } else if (st.code() == StatusCode::kDeadlineExceeded) {
    auto reports = g.Exchange(op.seq, DeadlineAfter(kDiagnosisBoundSeconds));
    if (!g.aborted()) {
      // A GPU call knows what it waited for here (the caller's stream, NCCL).
      const std::string here = op.info.kind == OpKind::kGpuAllReduce ? "; here: " + st.message() : "";
      st = DeadlineExceededError(DescribeTimeout(op.seq, op.info, g.names(), reports) + here);
    }
  } else if (st.code() == StatusCode::kInternal) {
    // A protocol error on the data plane is most often members disagreeing
    // on what this collective is: ask them.
    auto reports = g.Exchange(op.seq, DeadlineAfter(kDiagnosisBoundSeconds));
    if (Status m = DescribeMismatch(op.seq, g.rank(), op.info, g.names(), reports); !m.ok()) st = m;
  }
  return st;
}

void Executor::Number(Op& op, int set) {
  op.seq = next_seq_++;
  op.wire_seq = set > 0 ? (static_cast<uint64_t>(set) << 40) | ++set_seq_[set] : op.seq;
}

CollectiveHandle Executor::Submit(std::vector<Op> ops, Deadline deadline, const std::string& what,
                                  bool sync) {
  return SubmitToSet(0, std::move(ops), deadline, what, sync);
}

CollectiveHandle Executor::SubmitToSet(int set, std::vector<Op> ops, Deadline deadline,
                                       const std::string& what, bool sync) {
  auto call = std::make_shared<CallState>();
  call->what = what;
  call->deadline = deadline;
  call->clock = clock_;
  call->group = group_;
  std::unique_lock<std::mutex> lock(mu_);
  // Fail fast once the group is aborted, with its cause.
  if (Status s = group_->ForNewCall(); !s.ok()) return Failed(s);
  call->pending = static_cast<int>(ops.size());
  if (ops.empty()) return MakeHandle(call);
  FlightRecorder& rec = recorder();
  if (sync && ops.size() == 1) {
    // A caller about to wait for one collective whose stream is idle runs it
    // itself: the executor's hand-offs (two thread wake-ups) would cost more
    // than a small all-reduce. Order is kept: the stream is idle and its
    // queue empty, so every earlier collective on it has finished, and a
    // later one waits for `busy` to clear.
    Op& op = ops.front();
    op.seq = next_seq_;
    Slot* slot = SlotFor(op);
    std::unique_lock<std::mutex> sl(slot->mu);
    if (!slot->stop && !slot->busy && slot->queue.empty()) {
      Number(op, set);
      op.call = call;
      if (op.what.empty()) op.what = what;
      rec.Queued(op.seq, op.info);
      slot->busy = true;
      sl.unlock();
      lock.unlock();
      Status st = RunOp(slot, op);
      sl.lock();
      slot->busy = false;
      // Wake only whom `busy` held up: the slot's thread if work was queued
      // behind us, Stop if it waits to free the slot. An idle thread is left
      // asleep: waking it on every inline call cost two futex calls and a
      // context switch per small all-reduce.
      if (!slot->queue.empty() || slot->stop) slot->cv.notify_all();
      sl.unlock();
      call->Finish(st);
      return MakeHandle(call);
    }
  }
  for (auto& op : ops) {
    Number(op, set);
    op.call = call;
    if (op.what.empty()) op.what = what;
    rec.Queued(op.seq, op.info);
    Slot* slot = SlotFor(op);
    std::unique_lock<std::mutex> sl(slot->mu);
    // Bounded queue: a caller far ahead of the network waits here.
    slot->cv.wait(sl, [&] { return slot->queue.size() < kMaxQueuedPerSlot || slot->stop; });
    if (slot->stop) {  // the group is going away under us
      sl.unlock();
      op.call->Finish(AbortedError("the group was stopped while " + what + " was being submitted"));
      continue;
    }
    slot->queue.push_back(std::move(op));
    sl.unlock();
    slot->cv.notify_all();
  }
  return MakeHandle(call);
}

}  // namespace ringmaster::internal
