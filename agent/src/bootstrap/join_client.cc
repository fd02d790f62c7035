#include "bootstrap/join_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "bootstrap/control_service.h"
#include "bootstrap/follower.h"
#include "bootstrap/join_rules.h"

namespace ringmaster::internal {

namespace pb = ringmaster::agent::v1;

namespace {

Status FromGrpc(const grpc::Status& st) {
  return Status(static_cast<StatusCode>(st.error_code()), st.error_message());
}

// A leader not yet connected gets this long to accept a connection before
// its channel is dropped and its name resolved anew: when the leader's pod is
// replaced, its name gives the old pod's address for seconds, and gRPC keeps
// a channel's resolution for up to 30 s, as long as a whole formation.
constexpr auto kConnectWithin = std::chrono::seconds(5);

// The two calls, each bounded by the formation's deadline. The channel is
// made on first use and dropped when the leader cannot be reached through
// it (a DNS failure, a refused connection, none within kConnectWithin), so
// the next attempt looks the leader up again. No wait_for_ready: a failure
// to reach the leader comes back at once, with gRPC's words for why.
class GrpcLeaderLink final : public LeaderLink {
 public:
  GrpcLeaderLink(std::string target, std::chrono::system_clock::time_point deadline)
      : target_(std::move(target)), deadline_(deadline) {}
  Status Challenge(FormationState::ChallengeAnswer* out) override {
    if (!stub_) Connect();
    // A connected leader answers at once however loaded it is; one not yet
    // connected gets kConnectWithin.
    const bool connected = channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY;
    const auto by =
        connected ? deadline_ : std::min(deadline_, std::chrono::system_clock::now() + kConnectWithin);
    pb::ChallengeResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(by);
    grpc::Status st = stub_->Challenge(&ctx, pb::ChallengeRequest(), &resp);
    if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && by < deadline_) {
      // Our own bound, not the formation's: asked again (join_rules.h).
      if (channel_->GetState(false) != GRPC_CHANNEL_READY) {
        Drop();
        return UnavailableError("no connection to it within " +
                                std::to_string(std::chrono::seconds(kConnectWithin).count()) + " s");
      }
      return UnavailableError("connected, but its challenge took over " +
                              std::to_string(std::chrono::seconds(kConnectWithin).count()) + " s");
    }
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE) Drop();
    out->key_required = resp.key_required();
    out->server_nonce = resp.server_nonce();
    return FromGrpc(st);
  }
  Status Join(const JoinClaim& claim, Table* table, std::string* proof) override {
    pb::JoinRequest req;
    ToProto(claim, &req);
    pb::JoinResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline_);
    grpc::Status st = stub_->Join(&ctx, req, &resp);
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
      Drop();
      return FromGrpc(st);
    }
    *table = TableOf(resp);
    *proof = resp.proof();
    answered_from_ = st.ok() ? PeerHost(ctx.peer()) : "";
    return FromGrpc(st);
  }
  std::string AnsweredFrom() const override { return answered_from_; }

 private:
  void Connect() {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(1 << 20);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // A channel of its own: a new one must not reuse a shared connection
    // (or its backoff) to the address the last one resolved.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel_ = grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(), args);
    stub_ = pb::Agent::NewStub(channel_);
  }
  void Drop() {
    stub_.reset();
    channel_.reset();
  }
  std::string target_;
  std::chrono::system_clock::time_point deadline_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Agent::Stub> stub_;
  std::string answered_from_;
};

}  // namespace

StatusOr<Table> GrpcJoinBootstrap::Exchange(const MemberEntry& self, Deadline deadline) {
  JoinParties p;
  p.me = names_[self.rank];
  p.leader = names_[0];
  p.target = leader_host_ + ":" + std::to_string(leader_port_);
  // An IPv6 literal goes in brackets; a full gRPC target ("dns://SERVER/NAME")
  // is taken as it is.
  if (leader_host_.find(':') != std::string::npos && leader_host_.find("://") == std::string::npos)
    p.target = "[" + leader_host_ + "]:" + std::to_string(leader_port_);
  p.timeout_s = timeout_s_;
  // The calls' deadline on gRPC's clock (at most 1e7 s away).
  const double left = deadline == NoDeadline()
                          ? 1e7
                          : std::min(1e7, std::chrono::duration<double>(deadline - Clock::now()).count());
  const auto wall_left =
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(left));
  GrpcLeaderLink link(p.target, std::chrono::system_clock::now() + wall_left);
  JoinClaim claim;
  claim.rank = self.rank;
  claim.group_size = static_cast<int>(names_.size());
  claim.task_name = p.me;
  claim.data_port = self.data_port;
  claim.process_id = self.process_id;
  return JoinThrough(link, p, *key_, std::move(claim),
                     Clock::now() + std::chrono::duration_cast<Clock::duration>(wall_left));
}

}  // namespace ringmaster::internal
