#include "bootstrap/join_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "bootstrap/control_service.h"
#include "bootstrap/follower.h"

namespace ringmaster::internal {

namespace pb = ringmaster::agent::v1;

namespace {

Status FromGrpc(const grpc::Status& st) {
  return Status(static_cast<StatusCode>(st.error_code()), st.error_message());
}

// The two calls over one channel, each bounded by the formation's deadline
// and waiting for the leader to come up (wait_for_ready).
class GrpcLeaderLink final : public LeaderLink {
 public:
  GrpcLeaderLink(const std::string& target, std::chrono::system_clock::time_point deadline)
      : deadline_(deadline) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(1 << 20);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    stub_ = pb::Agent::NewStub(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  }
  Status Challenge(FormationState::ChallengeAnswer* out) override {
    pb::ChallengeResponse resp;
    grpc::ClientContext ctx;
    Prepare(ctx);
    grpc::Status st = stub_->Challenge(&ctx, pb::ChallengeRequest(), &resp);
    out->key_required = resp.key_required();
    out->server_nonce = resp.server_nonce();
    return FromGrpc(st);
  }
  Status Join(const JoinClaim& claim, Table* table, std::string* proof) override {
    pb::JoinRequest req;
    ToProto(claim, &req);
    pb::JoinResponse resp;
    grpc::ClientContext ctx;
    Prepare(ctx);
    grpc::Status st = stub_->Join(&ctx, req, &resp);
    *table = TableOf(resp);
    *proof = resp.proof();
    return FromGrpc(st);
  }

 private:
  void Prepare(grpc::ClientContext& ctx) const {
    ctx.set_deadline(deadline_);
    ctx.set_wait_for_ready(true);
  }
  std::chrono::system_clock::time_point deadline_;
  std::unique_ptr<pb::Agent::Stub> stub_;
};

}  // namespace

StatusOr<Table> GrpcJoinBootstrap::Exchange(const MemberEntry& self, Deadline deadline) {
  JoinParties p;
  p.me = names_[self.rank];
  p.leader = names_[0];
  p.target = leader_host_ + ":" + std::to_string(leader_port_);
  if (leader_host_.find(':') != std::string::npos)
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
