// The in-process bootstrap (bootstrap/bootstrap.h) for tests: every member's
// Exchange reaches one formation hub in this process, the leader's entry
// directly and a follower's through the follower's own protocol (challenge,
// proof of the key, Join, the answer checked: bootstrap/follower.h), so
// formation runs as in the agent but without gRPC or sockets.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/follower.h"
#include "bootstrap/formation_hub.h"
#include "bootstrap/join_checks.h"

namespace ringmaster::testing {

class LocalBootstrapHub {
 public:
  // `key`: the leader's job key ("" for none). Incarnations count from 101.
  LocalBootstrapHub(std::vector<std::string> names, const std::string& key, double timeout_s = 300,
                    internal::ElasticSize elastic = {})
      : names_(names),
        key_(key),
        timeout_s_(timeout_s),
        calls_(names.size()),
        hub_(
            0, std::move(names), &key_, [this] { return next_incarnation_++; }, elastic) {}

  // Member `rank`'s bootstrap, holding `key` ("" for none).
  std::unique_ptr<internal::Bootstrap> Member(int rank, const std::string& key) {
    return std::make_unique<LocalMember>(this, rank, key);
  }
  void Shutdown() { hub_.Shutdown(); }
  // The calls member `rank` made to the leader so far (Challenge, Join: each
  // one request and one answer on the wire). The leader makes none.
  uint32_t CallsOf(int rank) const { return calls_[rank].load(); }
  // Every Join seems to come from `host`, and every follower's answer from
  // `host` (as over a network, whatever the members' configured hosts say).
  void SeeEveryoneAt(std::string host) { seen_host_ = std::move(host); }

 private:
  class Link final : public internal::LeaderLink {
   public:
    Link(LocalBootstrapHub* hub, int rank, std::string host, internal::Deadline deadline)
        : hub_(hub),
          rank_(rank),
          host_(hub->seen_host_.empty() ? std::move(host) : hub->seen_host_),
          deadline_(deadline) {}
    Status Challenge(internal::FormationState::ChallengeAnswer* out) override {
      ++hub_->calls_[rank_];
      *out = hub_->hub_.Challenge();
      return OkStatus();
    }
    Status Join(const internal::JoinClaim& claim, internal::Table* table, std::string* proof) override {
      ++hub_->calls_[rank_];
      bool stranger = false;
      auto t = hub_->hub_.FollowerJoin(
          claim, host_, deadline_, [] { return false; }, &stranger);
      if (!t.ok()) return t.status();
      *table = *t;
      if (!hub_->key_.empty()) {
        internal::Mac m = internal::TableProof(hub_->key_, claim, *t);
        proof->assign(m.data(), m.size());
      }
      return OkStatus();
    }
    std::string AnsweredFrom() const override { return hub_->seen_host_; }

   private:
    LocalBootstrapHub* hub_;
    int rank_;
    std::string host_;
    internal::Deadline deadline_;
  };

  class LocalMember final : public internal::Bootstrap {
   public:
    LocalMember(LocalBootstrapHub* hub, int rank, const std::string& key)
        : hub_(hub), rank_(rank), key_(key) {}
    StatusOr<internal::Table> Exchange(const internal::MemberEntry& self,
                                       internal::Deadline deadline) override {
      if (rank_ == 0) return hub_->hub_.LeaderJoin(self, deadline, hub_->timeout_s_);
      Link link(hub_, rank_, self.data_host, deadline);
      internal::JoinParties p{hub_->names_[rank_], hub_->names_[0], "in-process", hub_->timeout_s_};
      internal::JoinClaim claim;
      claim.rank = rank_;
      claim.group_size = static_cast<int>(hub_->names_.size());
      claim.task_name = hub_->names_[rank_];
      claim.data_port = self.data_port;
      claim.process_id = self.process_id;
      return internal::JoinThrough(link, p, key_, std::move(claim), deadline);
    }
    bool Superseded(const internal::Table& table) override {
      return rank_ == 0 && hub_->hub_.Superseded(table);
    }
    int Waiting() override { return rank_ == 0 ? hub_->hub_.Joiners() : 0; }

   private:
    LocalBootstrapHub* hub_;
    int rank_;
    internal::JobKey key_;
  };

  std::vector<std::string> names_;
  internal::JobKey key_;
  double timeout_s_;
  std::vector<std::atomic<uint32_t>> calls_;  // by rank
  std::string seen_host_;                     // set before any member starts
  std::atomic<uint64_t> next_incarnation_{101};
  internal::FormationHub hub_;
};

}  // namespace ringmaster::testing
