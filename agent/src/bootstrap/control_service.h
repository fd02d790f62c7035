// The gRPC control service every member serves (proto/ringmaster/agent.proto):
// Challenge and Join at the leader (rank 0), GetStatus everywhere. A shell:
// it converts the messages and runs the formation core (formation_hub.h);
// the decisions are the core's (the messages' forms: proto_forms.h). Also
// the leader's own bootstrap (its entry into the same round).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/formation_hub.h"
#include "bootstrap/table_inbox.h"
#include "ringmaster/agent.grpc.pb.h"
#include "transport/auth.h"

namespace ringmaster::internal {

// Every method is gRPC's callback form: none holds a server thread while it
// waits. Challenge and GetStatus answer at once; Join is answered by the
// formation hub when its round completes, its deadline passes, its call is
// cancelled or the service shuts down (FormationHub::FollowerJoinLater), so
// the leader holds no thread per joiner.
//
// Deliver takes a round's table sent down the formation tree
// (formation_tree.h) when it proves the job key, for the member's own Join
// waiting in AwaitTable (TableInbox). FetchTable, at the leader, answers at
// once with the table of a member's round while it is the current one, or
// that the round was left (FormationState::FetchTable): for a member whose
// parent never sent it.
class AgentService final : public ringmaster::agent::v1::Agent::CallbackService, public TableInbox {
 public:
  AgentService(int rank, std::vector<std::string> names, double formation_timeout_s, const JobKey* key,
               RefusalLog* refusals, ElasticSize elastic = {});

  grpc::ServerUnaryReactor* Challenge(grpc::CallbackServerContext* ctx,
                                      const ringmaster::agent::v1::ChallengeRequest* req,
                                      ringmaster::agent::v1::ChallengeResponse* resp) override;
  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext* ctx,
                                 const ringmaster::agent::v1::JoinRequest* req,
                                 ringmaster::agent::v1::JoinResponse* resp) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const ringmaster::agent::v1::StatusRequest* req,
                                      ringmaster::agent::v1::StatusResponse* resp) override;
  grpc::ServerUnaryReactor* Deliver(grpc::CallbackServerContext* ctx,
                                    const ringmaster::agent::v1::TableDelivery* req,
                                    ringmaster::agent::v1::Delivered* resp) override;
  grpc::ServerUnaryReactor* FetchTable(grpc::CallbackServerContext* ctx,
                                       const ringmaster::agent::v1::TableRequest* req,
                                       ringmaster::agent::v1::TableAnswer* resp) override;
  StatusOr<Delivery> AwaitTable(uint64_t incarnation, Deadline deadline) override;

  // The leader's own side of a round: blocks until every member joined (or
  // enough of them, with an elastic size: formation_state.h), then sends the
  // table to its children in the formation tree.
  StatusOr<Table> LeaderRendezvous(const MemberEntry& self, Deadline deadline, double timeout_s);
  // The leader's: members waiting to join the next round (FormationState::Joiners).
  int Joiners() { return hub_.Joiners(); }
  bool Superseded(const Table& table) { return hub_.Superseded(table); }  // FormationState::Superseded
  // What GetStatus reports of this member.
  void SetState(uint64_t incarnation, const Status& health);
  void Shutdown();

 private:
  grpc::Status Refuse(const std::string& peer, const Status& why);

  const int rank_;
  const std::vector<std::string> names_;
  const double formation_timeout_s_;
  const JobKey* key_;
  RefusalLog* refusals_;
  FormationHub hub_;
  static constexpr size_t kDeliveriesKept = 4;
  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::deque<Delivery> inbox_;  // the latest tables delivered, oldest first
  bool inbox_closed_ = false;
  std::mutex mu_;  // guards what GetStatus reports
  uint64_t incarnation_ = 0;
  Status health_;
};

// Rank 0's bootstrap: its own entry into the round its service forms.
class LeaderBootstrap final : public Bootstrap {
 public:
  LeaderBootstrap(AgentService* service, double timeout_s) : service_(service), timeout_s_(timeout_s) {}
  StatusOr<Table> Exchange(const MemberEntry& self, Deadline deadline) override {
    return service_->LeaderRendezvous(self, deadline, timeout_s_);
  }
  bool Superseded(const Table& table) override { return service_->Superseded(table); }

 private:
  AgentService* service_;
  double timeout_s_;
};

}  // namespace ringmaster::internal
