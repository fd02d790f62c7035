// An in-process Transport: members are threads sharing one Fabric. The
// engine's tests run the algorithms and the whole executor over it: ordering,
// packs, aborts and deadlines, with an EngineClock that may be fake (waits
// re-check the clock every millisecond of real time, so a test moves time by
// advancing its clock, never by sleeping through a timeout).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace ringmaster::internal {

class LocalFabric {
 public:
  explicit LocalFabric(int n) : n_(n), channels_(static_cast<size_t>(n) * n) {}
  int size() const { return n_; }

  struct Message {
    uint32_t tag;
    std::vector<char> bytes;
  };
  void Push(int from, int to, Message m) {
    std::lock_guard<std::mutex> lock(mu_);
    channels_[Index(from, to)].push_back(std::move(m));
    cv_.notify_all();
  }
  // Waits (up to `slice` of real time) for a message from `from`.
  bool TryPop(int from, int to, Message* out, std::chrono::milliseconds slice) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = channels_[Index(from, to)];
    if (!cv_.wait_for(lock, slice, [&] { return !q.empty(); })) return false;
    *out = std::move(q.front());
    q.pop_front();
    return true;
  }

 private:
  size_t Index(int from, int to) const { return static_cast<size_t>(from) * n_ + to; }
  int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::deque<Message>> channels_;
};

class LocalTransport : public Transport {
 public:
  // abort_status: OK unless the member's group was aborted (none: never).
  LocalTransport(LocalFabric* fabric, int rank, const EngineClock* clock = &EngineClock::Steady(),
                 std::function<Status()> abort_status = {})
      : fabric_(fabric), rank_(rank), clock_(clock), abort_status_(std::move(abort_status)) {}
  int rank() const override { return rank_; }
  int size() const override { return fabric_->size(); }
  void Begin(uint64_t seq, Deadline deadline) override {
    seq_ = seq;
    deadline_ = deadline;
    reqs_.clear();
    heard_ = 0;
  }
  int Isend(int peer, uint32_t tag, const void* data, size_t bytes) override {
    LocalFabric::Message m{
        tag, std::vector<char>(static_cast<const char*>(data), static_cast<const char*>(data) + bytes)};
    fabric_->Push(rank_, peer, std::move(m));  // eager: the copy completes the send
    reqs_.push_back({true, -1, 0, nullptr, 0});
    return static_cast<int>(reqs_.size()) - 1;
  }
  int Irecv(int peer, uint32_t tag, void* data, size_t bytes) override {
    reqs_.push_back({false, peer, tag, data, bytes});
    return static_cast<int>(reqs_.size()) - 1;
  }
  Status Wait(int request) override {
    // Receives complete in posting order per peer, as on a real connection.
    for (int i = 0; i <= request; ++i) RM_RETURN_IF_ERROR(Complete(i));
    return OkStatus();
  }
  Status WaitAll() override {
    for (size_t i = 0; i < reqs_.size(); ++i) RM_RETURN_IF_ERROR(Complete(static_cast<int>(i)));
    return OkStatus();
  }
  uint64_t HeardFrom() const override { return heard_; }

 private:
  struct Req {
    bool done;
    int peer;
    uint32_t tag;
    void* data;
    size_t bytes;
  };
  Status Complete(int i) {
    Req& r = reqs_[i];
    if (r.done) return OkStatus();
    LocalFabric::Message m;
    while (!fabric_->TryPop(r.peer, rank_, &m, std::chrono::milliseconds(1))) {
      if (abort_status_) RM_RETURN_IF_ERROR(abort_status_());
      if (clock_->Now() >= deadline_)
        return DeadlineExceededError("collective #" + std::to_string(seq_) + " timed out");
    }
    r.done = true;
    if (m.tag != r.tag || m.bytes.size() != r.bytes) {
      return InternalError("local transport: expected tag " + std::to_string(r.tag) + "/" +
                           std::to_string(r.bytes) + " bytes, got tag " + std::to_string(m.tag) + "/" +
                           std::to_string(m.bytes.size()));
    }
    if (r.peer < 64) heard_ |= uint64_t{1} << r.peer;
    if (r.bytes) std::memcpy(r.data, m.bytes.data(), r.bytes);
    return OkStatus();
  }
  LocalFabric* fabric_;
  int rank_;
  const EngineClock* clock_;
  std::function<Status()> abort_status_;
  uint64_t seq_ = 0;
  Deadline deadline_ = NoDeadline();
  uint64_t heard_ = 0;
  std::vector<Req> reqs_;
};

}  // namespace ringmaster::internal
