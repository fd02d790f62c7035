#include "bootstrap/control_service.h"

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "bootstrap/formation_tree.h"
#include "bootstrap/join_checks.h"
#include "bootstrap/join_rules.h"
#include "bootstrap/proto_forms.h"
#include "bootstrap/random_id.h"
#include "bootstrap/tree_sender.h"

namespace ringmaster::internal {

namespace pb = ringmaster::agent::v1;

namespace {

grpc::Status ToGrpc(const Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

}  // namespace

AgentService::AgentService(int rank, std::vector<std::string> names, double formation_timeout_s,
                           const JobKey* key, RefusalLog* refusals, ElasticSize elastic)
    : rank_(rank),
      names_(names),
      formation_timeout_s_(formation_timeout_s),
      key_(key),
      refusals_(refusals),
      hub_(rank, std::move(names), key, RandomId, elastic) {}

grpc::Status AgentService::Refuse(const std::string& peer, const Status& why) {
  refusals_->Refuse(PeerHost(peer), why.message());
  return ToGrpc(why);
}

grpc::ServerUnaryReactor* AgentService::Challenge(grpc::CallbackServerContext* ctx,
                                                  const pb::ChallengeRequest*, pb::ChallengeResponse* resp) {
  const auto answer = hub_.Challenge();
  resp->set_key_required(answer.key_required);
  if (answer.key_required) resp->set_server_nonce(answer.server_nonce);
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

namespace {

// One Join held by the hub: finished by the hub's answer (FollowerJoinLater)
// or given up when gRPC cancels the call. gRPC calls OnCancel only after
// Join returned the reactor, so the ticket is set by then; the hub runs the
// answer exactly once, so Finish is called exactly once.
class JoinReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit JoinReactor(FormationHub* hub) : hub_(hub) {}
  void set_ticket(uint64_t ticket) { ticket_ = ticket; }
  void OnCancel() override {
    if (const uint64_t t = ticket_.load(); t != 0) hub_->Cancel(t);
  }
  void OnDone() override { delete this; }
  bool stranger = false;  // set by the hub before a refusal's answer runs

 private:
  FormationHub* hub_;
  std::atomic<uint64_t> ticket_{0};
};

}  // namespace

grpc::ServerUnaryReactor* AgentService::Join(grpc::CallbackServerContext* ctx, const pb::JoinRequest* req,
                                             pb::JoinResponse* resp) {
  // Answer a little before the caller's deadline so it learns who is missing.
  auto limit = ctx->deadline() - std::chrono::milliseconds(300);
  const auto wall_now = std::chrono::system_clock::now();
  const auto cap = wall_now + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                  std::chrono::duration<double>(formation_timeout_s_));
  if (limit > cap) limit = cap;
  const Deadline until = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit - wall_now);
  const JoinClaim claim = ClaimOf(*req);
  auto* reactor = new JoinReactor(&hub_);
  const std::string peer = ctx->peer();
  // Runs once, maybe on another thread (the round's last joiner's, the
  // leader's, the hub's timer); `resp` and the reactor live until Finish.
  auto answer = [this, reactor, resp, claim, peer](StatusOr<Table> table) {
    if (!table.ok()) {
      reactor->Finish(reactor->stranger ? Refuse(peer, table.status()) : ToGrpc(table.status()));
      return;
    }
    // The table itself comes from the member's parent in the formation tree
    // when it can; this answer proves the incarnation fresh (the member's
    // nonces) and names who sends it.
    const JoinAnswer a = AnswerJoin(*key_, claim, *table);
    ToProto(a.table, resp);
    resp->set_forwarded(a.forwarded);
    resp->set_parent(a.parent);
    resp->set_hops(a.hops);
    resp->set_proof(a.proof);
    reactor->Finish(grpc::Status::OK);
  };
  reactor->set_ticket(
      hub_.FollowerJoinLater(claim, PeerHost(peer), until, std::move(answer), &reactor->stranger));
  return reactor;
}

grpc::ServerUnaryReactor* AgentService::GetStatus(grpc::CallbackServerContext* ctx,
                                                  const pb::StatusRequest* req, pb::StatusResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (Status st = hub_.CheckStatusCaller(req->server_nonce(), req->client_nonce(), req->proof()); !st.ok()) {
    reactor->Finish(Refuse(ctx->peer(), st));
    return reactor;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    resp->set_refused(refusals_->count());
    resp->set_rank(rank_);
    resp->set_task_name(names_[rank_]);
    resp->set_incarnation(incarnation_);
    resp->set_aborted(!health_.ok());
    resp->set_abort_reason(health_.ToString());
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* AgentService::Deliver(grpc::CallbackServerContext* ctx,
                                                const pb::TableDelivery* req, pb::Delivered*) {
  auto* reactor = ctx->DefaultReactor();
  Table table = TableOf(req->table());
  if (!key_->empty() && !MacEquals(ForwardedTableProof(*key_, table), req->proof())) {
    reactor->Finish(Refuse(ctx->peer(), UnauthenticatedError("a table that does not prove the job key")));
    return reactor;
  }
  if (table.members.empty()) {
    reactor->Finish(ToGrpc(InvalidArgumentError("a table with no members")));
    return reactor;
  }
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.push_back(Delivery{std::move(table), req->proof()});
    while (inbox_.size() > kDeliveriesKept) inbox_.pop_front();
  }
  inbox_cv_.notify_all();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* AgentService::FetchTable(grpc::CallbackServerContext* ctx,
                                                   const pb::TableRequest* req, pb::TableAnswer* resp) {
  auto* reactor = ctx->DefaultReactor();
  const TableAsk ask = AskOf(*req);
  const auto f = hub_.FetchTable(ask);
  if (!f.refused.ok()) {
    reactor->Finish(f.stranger ? Refuse(ctx->peer(), f.refused) : ToGrpc(f.refused));
    return reactor;
  }
  resp->set_round(static_cast<pb::TableAnswer::Round>(f.round));
  resp->set_why(f.why);
  if (f.round == FetchedRound::kFormed) {
    ToProto(f.table, resp->mutable_table()->mutable_table());
    if (!key_->empty()) {
      Mac m = ForwardedTableProof(*key_, f.table);
      resp->mutable_table()->set_proof(std::string(m.data(), m.size()));
    }
  }
  if (!key_->empty()) {
    Mac m = TableAnswerProof(*key_, ask, f.round, f.why, f.table);
    resp->set_proof(std::string(m.data(), m.size()));
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

StatusOr<TableInbox::Delivery> AgentService::AwaitTable(uint64_t incarnation, Deadline deadline) {
  std::unique_lock<std::mutex> lock(inbox_mu_);
  const Delivery* found = nullptr;
  auto seen = [&] {
    for (const auto& d : inbox_) {
      if (d.table.incarnation == incarnation) found = &d;
    }
    return found != nullptr || inbox_closed_;
  };
  inbox_cv_.wait_until(lock, deadline, seen);
  if (found) return *found;
  if (inbox_closed_) return CancelledError("shutting down");
  return DeadlineExceededError("no table");
}

StatusOr<Table> AgentService::LeaderRendezvous(const MemberEntry& self, Deadline deadline, double timeout_s) {
  auto table = hub_.LeaderJoin(self, deadline, timeout_s);
  if (table.ok() && TableTravelsDownTree(*table)) {
    std::string proof;
    if (!key_->empty()) {
      Mac m = ForwardedTableProof(*key_, *table);
      proof.assign(m.data(), m.size());
    }
    SendDownTree(*table, proof, 0, deadline);
  }
  return table;
}

void AgentService::SetState(uint64_t incarnation, const Status& health) {
  std::lock_guard<std::mutex> lock(mu_);
  incarnation_ = incarnation;
  health_ = health;
}

void AgentService::Shutdown() {
  hub_.Shutdown();
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_closed_ = true;
  }
  inbox_cv_.notify_all();
}

}  // namespace ringmaster::internal
