// The one interface the algorithms see (in the style of Gloo: algorithms know
// nothing of sockets). Messages between two members are ordered: the n-th
// Irecv posted for a peer matches the n-th message that peer sent us, and the
// tag and size must agree (a mismatch is a protocol error, never a silent
// truncation). Posting never blocks; Wait progresses every posted operation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringmaster/status.h"

namespace ringmaster::internal {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // `data` must stay untouched (send) / unread (recv) until the request is
  // waited for. Returns a request id valid for the current collective.
  virtual int Isend(int peer, uint32_t tag, const void* data, size_t bytes) = 0;
  virtual int Irecv(int peer, uint32_t tag, void* data, size_t bytes) = 0;
  // Blocks until the request is complete; fails on the collective's
  // deadline, an abort, a lost peer or a protocol error.
  virtual Status Wait(int request) = 0;
  // Waits for every request posted so far.
  virtual Status WaitAll() = 0;
};

}  // namespace ringmaster::internal
