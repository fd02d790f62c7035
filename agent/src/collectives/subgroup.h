// A process set's view of the formation's Transport: its members, in rank
// order, become ranks 0..n-1, so every algorithm runs unchanged over a
// subgroup (Horovod's process sets, MPI's communicators). Messages still go
// over the same connections; the caller (the engine's process-set executor)
// keeps each set's sequence numbers apart.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/transport.h"

namespace ringmaster::internal {

class SubgroupTransport final : public Transport {
 public:
  // members: the formation ranks of the set, ascending; `parent.rank()` is
  // one of them (the engine only runs a set's collective on its members).
  SubgroupTransport(Transport& parent, const std::vector<int>& members) : parent_(parent), members_(members) {
    for (size_t i = 0; i < members_.size(); ++i)
      if (members_[i] == parent_.rank()) rank_ = static_cast<int>(i);
  }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  void Begin(uint64_t seq, Deadline deadline) override { parent_.Begin(seq, deadline); }
  int Isend(int peer, uint32_t tag, const void* data, size_t bytes) override {
    return parent_.Isend(members_[static_cast<size_t>(peer)], tag, data, bytes);
  }
  int Irecv(int peer, uint32_t tag, void* data, size_t bytes) override {
    return parent_.Irecv(members_[static_cast<size_t>(peer)], tag, data, bytes);
  }
  Status Wait(int request) override { return parent_.Wait(request); }
  Status WaitAll() override { return parent_.WaitAll(); }
  // Formation ranks, as the flight recorder and the diagnosis name them.
  std::span<const int> HeardFrom() const override { return parent_.HeardFrom(); }

 private:
  Transport& parent_;
  const std::vector<int>& members_;
  int rank_ = -1;
};

}  // namespace ringmaster::internal
