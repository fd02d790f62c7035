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
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "transport/transport.h"

namespace ringmaster::internal {

// Grown for thousands of members in one process: each member has its own
// inbox (one lock, one condition variable), holding a queue per sender that
// opens on the first message, so memory grows with the pairs that talk, not
// N², and members contend only with those that write to them. It counts what
// a network would: messages each member sent, and its connections (the
// peers it sent to or heard from, as a first-use data connection opens).
class LocalFabric {
 public:
  explicit LocalFabric(int n) : n_(n), inboxes_(static_cast<size_t>(n)) {}
  int size() const { return n_; }

  struct Message {
    uint32_t tag;
    std::vector<char> bytes;
  };
  void Push(int from, int to, Message m) {
    {
      Inbox& src = inboxes_[from];
      std::lock_guard<std::mutex> lock(src.mu);
      ++src.sent;
      src.peers.insert(to);
    }
    Inbox& dst = inboxes_[to];
    std::lock_guard<std::mutex> lock(dst.mu);
    dst.peers.insert(from);
    dst.queues[from].push_back(std::move(m));
    dst.cv.notify_all();
  }
  // Waits (up to `slice` of real time) for a message from `from`.
  bool TryPop(int from, int to, Message* out, std::chrono::milliseconds slice) {
    Inbox& dst = inboxes_[to];
    std::unique_lock<std::mutex> lock(dst.mu);
    auto ready = [&] {
      auto it = dst.queues.find(from);
      return it != dst.queues.end() && !it->second.empty();
    };
    if (!dst.cv.wait_for(lock, slice, ready)) return false;
    auto& q = dst.queues[from];
    *out = std::move(q.front());
    q.pop_front();
    ++dst.received;
    return true;
  }

  struct Counts {
    uint64_t sent = 0, received = 0;  // messages
    int peers = 0;                    // connections: the members it sent to or heard from
  };
  Counts CountsOf(int rank) {
    Inbox& b = inboxes_[rank];
    std::lock_guard<std::mutex> lock(b.mu);
    return {b.sent, b.received, static_cast<int>(b.peers.size())};
  }

 private:
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::unordered_map<int, std::deque<Message>> queues;  // by sender, opened on first use
    std::unordered_set<int> peers;
    uint64_t sent = 0, received = 0;
  };
  int n_;
  std::vector<Inbox> inboxes_;
};

class LocalTransport : public Transport {
 public:
  // abort_status: OK unless the member's group was aborted (none: never).
  LocalTransport(LocalFabric* fabric, int rank, const EngineClock* clock = &EngineClock::Steady(),
                 std::function<Status()> abort_status = {})
      : fabric_(fabric), rank_(rank), clock_(clock), abort_status_(std::move(abort_status)) {}
  int rank() const override { return rank_; }
  int size() const override { return fabric_->size(); }
  // How long a wait sleeps before it looks at the clock and the abort again
  // (a message wakes it at once). Thousands of members raise it.
  void SetWaitSlice(std::chrono::milliseconds slice) { slice_ = slice; }
  void Begin(uint64_t seq, Deadline deadline) override {
    seq_ = seq;
    deadline_ = deadline;
    reqs_.clear();
    for (int p : heard_list_) heard_bits_[static_cast<size_t>(p) / 64] = 0;
    heard_list_.clear();
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
  std::span<const int> HeardFrom() const override { return heard_list_; }
  // Every member a message of the current collective came from, any rank.
  const std::vector<int>& Heard() const { return heard_list_; }

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
    while (!fabric_->TryPop(r.peer, rank_, &m, slice_)) {
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
    Hear(r.peer);
    if (r.bytes) std::memcpy(r.data, m.bytes.data(), r.bytes);
    return OkStatus();
  }
  // A dynamic bit set of ranks (one bit each, any N), and the ranks set in it.
  void Hear(int peer) {
    const size_t word = static_cast<size_t>(peer) / 64;
    const uint64_t bit = uint64_t{1} << (peer % 64);
    if (heard_bits_.size() <= word) heard_bits_.resize(word + 1, 0);
    if (heard_bits_[word] & bit) return;
    heard_bits_[word] |= bit;
    heard_list_.push_back(peer);
  }
  LocalFabric* fabric_;
  int rank_;
  const EngineClock* clock_;
  std::function<Status()> abort_status_;
  uint64_t seq_ = 0;
  Deadline deadline_ = NoDeadline();
  std::chrono::milliseconds slice_{1};
  std::vector<uint64_t> heard_bits_;
  std::vector<int> heard_list_;
  std::vector<Req> reqs_;
};

// Runs `fn(transport)` on n threads over one fabric.
template <typename F>
void OnFabric(int n, F fn) {
  LocalFabric fabric(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      LocalTransport t(&fabric, r);
      fn(t);
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace ringmaster::internal
