// CollectiveHandle: waiting for a call, or being called back when it ends.
#include "group/executor.h"
#include "ringmaster/communicator.h"

namespace ringmaster {

using internal::Clock;

namespace internal {

CollectiveHandle MakeHandle(std::shared_ptr<CallState> state) {
  return CollectiveHandle(std::move(state));
}

void CallState::Finish(const Status& s) {
  std::function<void(const Status&)> done;
  Status final_status;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!s.ok() && status.ok()) status = s;
    if (--pending == 0) {
      cv.notify_all();
      done = std::move(then);
      final_status = status;
    }
  }
  if (done) done(final_status);  // outside the lock: it may wake a framework
}

}  // namespace internal

Status CollectiveHandle::Wait() {
  if (!state_) return FailedPreconditionError("empty CollectiveHandle");
  auto& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.deadline != internal::NoDeadline()) {
    // The executors enforce the deadline (and diagnose, for up to
    // kDiagnosisBoundSeconds); this covers a call still queued behind a
    // collective without one. The deadline is on the engine's clock, the
    // grace after it in real time.
    while (s.pending > 0 && s.clock->Now() < s.deadline) {
      const auto left = std::min<Clock::duration>(s.deadline - s.clock->Now(), std::chrono::milliseconds(50));
      s.cv.wait_for(lock, left, [&] { return s.pending == 0; });
    }
    const auto grace = std::chrono::duration<double>(internal::kDiagnosisBoundSeconds + 0.5);
    if (!s.cv.wait_for(lock, grace, [&] { return s.pending == 0; })) {
      lock.unlock();
      if (s.group) {
        s.group->CollectiveFailed(DeadlineExceededError(s.what + " did not finish in time on " +
                                                        s.group->name(s.group->rank()) +
                                                        " (queued behind a collective without a timeout)"));
      }
      lock.lock();
    }
  }
  s.cv.wait(lock, [&] { return s.pending == 0; });
  return s.status;
}

void CollectiveHandle::Then(std::function<void(const Status&)> done) {
  if (!done) return;
  if (!state_) {
    done(FailedPreconditionError("empty CollectiveHandle"));
    return;
  }
  Status final_status;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->pending > 0) {
      state_->then = std::move(done);
      return;
    }
    final_status = state_->status;
  }
  done(final_status);
}

bool CollectiveHandle::Done() const {
  if (!state_) return true;
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->pending == 0;
}

}  // namespace ringmaster
