// An in-process Transport: members are threads sharing one Fabric. Used by
// the algorithm tests (the functional core without sockets).
#pragma once

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "transport.h"

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
  Message Pop(int from, int to) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = channels_[Index(from, to)];
    cv_.wait(lock, [&] { return !q.empty(); });
    Message m = std::move(q.front());
    q.pop_front();
    return m;
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
  LocalTransport(LocalFabric* fabric, int rank) : fabric_(fabric), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return fabric_->size(); }
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
    r.done = true;
    auto m = fabric_->Pop(r.peer, rank_);
    if (m.tag != r.tag || m.bytes.size() != r.bytes) {
      return InternalError("local transport: expected tag " + std::to_string(r.tag) + "/" +
                           std::to_string(r.bytes) + " bytes, got tag " + std::to_string(m.tag) + "/" +
                           std::to_string(m.bytes.size()));
    }
    if (r.bytes) std::memcpy(r.data, m.bytes.data(), r.bytes);
    return OkStatus();
  }
  LocalFabric* fabric_;
  int rank_;
  std::vector<Req> reqs_;
};

}  // namespace ringmaster::internal
