// Internal: the gRPC control service (rendezvous at rank 0) and the
// data-plane handshake and control-frame formats.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "net.h"
#include "ringmaster/agent.grpc.pb.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

inline constexpr uint32_t kHelloMagic = 0x31484d52;    // "RMH1"
inline constexpr uint32_t kAckMagic = 0x31414d52;      // "RMA1"
inline constexpr uint32_t kControlMagic = 0x31434d52;  // "RMC1"
inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr uint32_t kMaxControlText = 4096;

struct Hello {
  uint32_t magic, version;
  uint64_t incarnation;
  uint32_t from_rank, to_rank, channel, group_size;
};
static_assert(sizeof(Hello) == 32);

enum ControlType : uint32_t { kHeartbeat = 1, kAbortFrame = 2, kGoodbye = 3 };
struct ControlHeader {
  uint32_t magic, type, code, length;
};
static_assert(sizeof(ControlHeader) == 16);

// Rank 0's rendezvous plus GetStatus on every member.
class AgentService final : public ringmaster::agent::v1::Agent::Service {
 public:
  AgentService(int rank, std::vector<std::string> names, double formation_timeout_s)
      : rank_(rank), names_(std::move(names)), formation_timeout_s_(formation_timeout_s) {}

  grpc::Status Join(grpc::ServerContext* ctx, const ringmaster::agent::v1::JoinRequest* req,
                    ringmaster::agent::v1::JoinResponse* resp) override;
  grpc::Status GetStatus(grpc::ServerContext* ctx, const ringmaster::agent::v1::StatusRequest* req,
                         ringmaster::agent::v1::StatusResponse* resp) override;

  // The leader's own side of a round: blocks until every member joined.
  StatusOr<ringmaster::agent::v1::JoinResponse> LeaderRendezvous(const ringmaster::agent::v1::Member& self,
                                                                 Deadline deadline, double timeout_s);
  void SetState(uint64_t incarnation, const Status& health);
  void Shutdown();

 private:
  bool MaybeCompleteLocked();
  std::string MissingLocked() const;

  const int rank_;
  const std::vector<std::string> names_;
  const double formation_timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shutdown_ = false;
  std::map<int, ringmaster::agent::v1::Member> pending_;
  std::set<int> seen_;  // joined during this round (for naming who is missing)
  uint64_t round_ = 0;
  std::map<uint64_t, ringmaster::agent::v1::JoinResponse> results_;
  uint64_t incarnation_ = 0;
  Status health_;
};

uint64_t RandomId();

}  // namespace ringmaster::internal
