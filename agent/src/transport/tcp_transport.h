// The Transport over the data plane: one TCP connection per peer per stream,
// driven by the thread that runs the collective (poll + non-blocking I/O; no
// thread hand-off). Every message carries a 24-byte header (magic, tag,
// collective sequence, length) that must match what the receiver posted;
// payloads go straight into the posted buffer, so nothing on the wire decides
// how much we allocate.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace ringmaster::internal {

inline constexpr uint32_t kDataMagic = 0x31444d52;  // "RMD1"
// How long a wait keeps polling without sleeping (yielding the CPU between
// tries) after the last byte moved; measured in docs/benchmarks/allreduce.md.
inline constexpr std::chrono::microseconds kSpinBeforePoll{250};
// Messages from this size on are acknowledged without delay (TCP_QUICKACK)
// while they stream in.
inline constexpr size_t kQuickAckBytes = 16 * 1024;

struct WireHeader {
  uint32_t magic;
  uint32_t tag;
  uint64_t seq;
  uint64_t length;
};
static_assert(sizeof(WireHeader) == 24);

class TcpTransport : public Transport {
 public:
  // Connections opened the first time a request names a peer with none
  // (-1 in `fds`); the higher rank connects, as in formation.
  struct FirstUse {
    // To a lower rank: connect and authenticate, bounded (data_dial.h); an
    // error names the peer.
    std::function<StatusOr<int>(int peer, Deadline deadline)> dial;
    // From a higher rank: its connection once it came, else -1.
    std::function<int(int peer)> take;
    int ready_fd = -1;            // readable when `take` may have one more
    std::function<void()> drain;  // reads ready_fd empty, before looking again
  };
  struct Hooks {
    std::function<std::string(int)> peer_name;  // rank -> "/job:worker/task:1"
    std::function<Status()> abort_status;       // OK unless the group was aborted
    int abort_fd = -1;                          // readable once aborted
    FirstUse first_use;                         // empty: `fds` are all there are
  };
  TcpTransport(int rank, int size, std::vector<int> fds, Hooks hooks);
  ~TcpTransport() override;

  // Starts collective `seq`: forgets the previous one's requests.
  void Begin(uint64_t seq, Deadline deadline) override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int Isend(int peer, uint32_t tag, const void* data, size_t bytes) override;
  int Irecv(int peer, uint32_t tag, void* data, size_t bytes) override;
  Status Wait(int request) override;
  Status WaitAll() override;
  std::span<const int> HeardFrom() const override { return heard_; }
  void CloseAll();
  // Peers this transport holds a connection to (tests, the benchmarks).
  int connected() const;

 private:
  struct Req {
    bool send;
    bool complete = false;
    int peer;
    uint32_t tag;
    char* data;
    size_t bytes;
    size_t done = 0;  // header + payload bytes moved
    WireHeader hdr{};
  };
  static msghdr Remaining(Req& r, iovec iov[2]);
  Status Progress(bool* moved);
  // Opens what the posted requests need (FirstUse); *awaiting: a higher
  // rank's connection is still to come.
  Status ConnectNeeded(bool* awaiting);
  Status PeerError(int peer, int err);  // err 0: the peer closed
  Status WaitUntil(const std::function<bool()>& done);

  int rank_, size_;
  std::vector<int> fds_;
  Hooks hooks_;
  uint64_t seq_ = 0;
  Deadline deadline_ = NoDeadline();
  std::vector<Req> reqs_;
  std::vector<std::deque<int>> sendq_, recvq_;
  size_t pending_ = 0;
  std::vector<int> heard_;         // this collective's senders, first heard first
  std::vector<uint8_t> is_heard_;  // per rank: in heard_
};

}  // namespace ringmaster::internal
