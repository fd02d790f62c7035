// The one interface the algorithms and the executor see (in the style of
// Gloo: algorithms know nothing of sockets). Messages between two members are
// ordered: the n-th Irecv posted for a peer matches the n-th message that
// peer sent us, and the tag and size must agree (a mismatch is a protocol
// error, never a silent truncation). Posting never blocks; Wait progresses
// every posted operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "clock.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

// "collective #12", or "collective #3 of process-set key 2" for a process set's
// wire number (the set in the bits above 40; executor.h).
inline std::string WireSeqName(uint64_t seq) {
  const uint64_t set = seq >> 40, n = seq & ((uint64_t{1} << 40) - 1);
  return "collective #" + std::to_string(n) +
         (set ? " of process-set key " + std::to_string(set) : std::string());
}

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Starts collective `seq`: forgets the previous one's requests. Every wait
  // of this collective fails with DeadlineExceeded once `deadline` passed.
  virtual void Begin(uint64_t seq, Deadline deadline) = 0;
  // `data` must stay untouched (send) / unread (recv) until the request is
  // waited for. Returns a request id valid for the current collective.
  virtual int Isend(int peer, uint32_t tag, const void* data, size_t bytes) = 0;
  virtual int Irecv(int peer, uint32_t tag, void* data, size_t bytes) = 0;
  // Blocks until the request is complete; fails on the collective's
  // deadline, an abort, a lost peer or a protocol error.
  virtual Status Wait(int request) = 0;
  // Waits for every request posted so far.
  virtual Status WaitAll() = 0;
  // The members a message of the current collective came from, each once,
  // in the order first heard (any group size): the flight recorder's
  // "heard from". Valid until the next Begin.
  virtual std::span<const int> HeardFrom() const = 0;
};

}  // namespace ringmaster::internal
