#include "transport/data_dial.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "transport/net.h"
#include "transport/peer_loss.h"
#include "transport/wire.h"

namespace ringmaster::internal {

Status ConnectorHandshake(int sock, const MeshView& view, int to, int channel, const std::string& peer_name,
                          Deadline deadline) {
  const Hello hello = MakeHello(view, to, channel, FreshNonce());
  Challenge challenge{};
  Proof proof{};
  Ack ack{};
  Status st = WriteAll(sock, &hello, sizeof hello, deadline);
  if (st.ok()) st = ReadAll(sock, &challenge, sizeof challenge, deadline);
  if (st.ok()) st = CheckChallenge(view, hello, challenge, peer_name, &proof);
  if (st.ok()) st = WriteAll(sock, &proof, sizeof proof, deadline);
  if (st.ok()) st = ReadAll(sock, &ack, sizeof ack, deadline);
  if (st.ok() && (ack.magic != kAckMagic || ack.code != 0)) st = UnauthenticatedError("");
  return st;
}

StatusOr<int> DialPeer(const MeshView& view, const DialTarget& t, int channel, Deadline deadline) {
  const Deadline until = std::min(deadline, DeadlineAfter(kFirstUseSeconds));
  auto lost = [&](const std::string& how) { return UnreachableError(t.name, t.self, how); };
  while (true) {
    // One attempt: the listener has been open since before the table went
    // out, so a refusal means the process is gone, never "not yet".
    auto fd = ConnectWithRetry(t.host, t.port, until, [](int err) -> Status {
      return err == ECONNREFUSED ? AbortedError("refused") : OkStatus();
    });
    if (!fd.ok()) {
      if (fd.status().code() == StatusCode::kFailedPrecondition) return fd.status();  // ours: no descriptors
      if (fd.status().code() == StatusCode::kAborted)
        return lost("nobody listens at its data port (the process exited or was killed)");
      return lost("no data connection to it in time (" + fd.status().message() + ")");
    }
    int sock = *fd;
    Status st = ConnectorHandshake(sock, view, t.rank, channel, t.name, until);
    if (st.ok()) {
      TuneDataSocket(sock);
      return sock;
    }
    CloseFd(sock);
    if (st.code() == StatusCode::kUnauthenticated && st.message().empty())
      return lost("it refused our data connection on channel " + std::to_string(channel));
    if (st.code() == StatusCode::kUnauthenticated) return st;
    if (st.code() == StatusCode::kDeadlineExceeded)  // its acceptor thread did not run
      return lost(
          "it did not answer our data connection's handshake in time (the process is stopped or starved)");
    if (st.code() != StatusCode::kUnavailable || Clock::now() >= until)
      return lost("no data connection to it: " + st.message());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // closed mid-handshake: once more
  }
}

}  // namespace ringmaster::internal
