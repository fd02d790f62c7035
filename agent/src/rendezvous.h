// Forming the group, both halves: the gRPC control service (the leader,
// rank 0, collects every member's data address and hands out the table and
// a fresh incarnation), the followers' Join, and the data mesh (one TCP
// connection per pair and channel, the higher rank connecting and saying
// Hello; wire.h). Formation names the missing tasks when it times out.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "auth.h"
#include "net.h"
#include "ringmaster/agent.grpc.pb.h"
#include "ringmaster/status.h"
#include "wire.h"

namespace grpc {
class Server;
}

namespace ringmaster::internal {

// The checks of a Join, before it may touch any state: its fields, then
// (when the leader has a key) that it answers a challenge the leader handed
// out and proves the key over it and over every field it claims.
Status CheckJoin(const ringmaster::agent::v1::JoinRequest& req, const std::vector<std::string>& names,
                 const JobKey& key, NonceBook& nonces, Clock::time_point now);
// The leader's proof over the request's nonces, the incarnation and the
// whole table, so a member takes its table only from the real leader.
Mac TableProof(const JobKey& key, const ringmaster::agent::v1::JoinRequest& req,
               const ringmaster::agent::v1::JoinResponse& table);
// What GetStatus's caller must prove.
Mac StatusProof(const JobKey& key, std::string_view server_nonce, std::string_view client_nonce);

// Rank 0's rendezvous, the challenges, plus GetStatus on every member.
class AgentService final : public ringmaster::agent::v1::Agent::Service {
 public:
  AgentService(int rank, std::vector<std::string> names, double formation_timeout_s, const JobKey* key,
               RefusalLog* refusals)
      : rank_(rank),
        names_(std::move(names)),
        formation_timeout_s_(formation_timeout_s),
        key_(key),
        refusals_(refusals) {}

  grpc::Status Challenge(grpc::ServerContext* ctx, const ringmaster::agent::v1::ChallengeRequest* req,
                         ringmaster::agent::v1::ChallengeResponse* resp) override;
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

  grpc::Status Refuse(grpc::ServerContext* ctx, const Status& why);

  const int rank_;
  const std::vector<std::string> names_;
  const double formation_timeout_s_;
  const JobKey* key_;
  RefusalLog* refusals_;
  NonceBook nonces_;
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

// Serves `service` on `port` (0: the kernel picks), bounded for a group of
// `members` (memory, threads, and strangers' idle or half-open connections
// closed within seconds). A port that cannot be bound fails with its cause
// ("address already in use") and names `task`.
StatusOr<std::unique_ptr<grpc::Server>> ServeControl(AgentService* service, int port, const std::string& task,
                                                     int members);

struct MeshConfig {
  int rank = 0;
  std::vector<std::string> names, hosts;  // per member, rank order
  uint64_t process_id = 0;
  int leader_port = 0;  // the leader's control port
  int channels = 1;     // connections per pair: 0 control, 1.. data
  double timeout_s = 300;
  const JobKey* key = nullptr;     // never null; empty: no key
  RefusalLog* refusals = nullptr;  // never null
};
struct Mesh {
  uint64_t incarnation = 0;
  std::vector<std::vector<int>> conns;  // [peer][channel]; -1 for ourselves
};
// Joins the round (through `service` on the leader, over gRPC elsewhere) and
// connects the mesh, all within the formation timeout. Every connection is
// authenticated (handshake.h); strangers' connections are handled
// concurrently, at most kMaxPendingHandshakes at a time, each dropped after
// kHandshakeSeconds, so a flood cannot hold formation up past its timeout.
inline constexpr size_t kMaxPendingHandshakes = 128;
inline constexpr double kHandshakeSeconds = 2.0;
StatusOr<Mesh> FormMesh(const MeshConfig& config, AgentService* service);

}  // namespace ringmaster::internal
