// The in-process bootstrap (bootstrap/bootstrap.h) for tests: every member's
// Exchange reaches one formation hub in this process, the leader's entry
// directly and a follower's through the follower's own protocol (challenge,
// proof of the key, Join, the answer checked: bootstrap/follower.h), so
// formation runs as in the agent but without gRPC or sockets. With
// SendTablesDownTree the table travels as the agent's does, down the
// formation tree (bootstrap/formation_tree.h) from member to member.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/follower.h"
#include "bootstrap/formation_hub.h"
#include "bootstrap/formation_tree.h"
#include "bootstrap/join_checks.h"
#include "bootstrap/join_rules.h"

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
        deliveries_(names.size()),
        entries_(names.size()),
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
  // The table goes down the formation tree, as the agent's does: each
  // follower offers an inbox (a control port), the leader answers its Join
  // with the incarnation, and the table is delivered from member to member
  // with the leader's proof (checked on delivery). Set before any member
  // starts.
  void SendTablesDownTree() {
    tree_ = true;
    for (size_t r = 0; r < names_.size(); ++r) inboxes_.push_back(std::make_unique<Inbox>());
  }
  // Tables member `rank` delivered to its children and took from its parent
  // (each a request and an answer on the wire).
  uint32_t DeliveriesOf(int rank) const { return deliveries_[rank].load(); }
  // Member entries `rank` sent: the tables in its answers and deliveries.
  uint64_t EntriesSentBy(int rank) const { return entries_[rank].load(); }

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
      internal::JoinAnswer a = internal::AnswerJoin(hub_->key_, claim, *t);
      hub_->entries_[0] += a.table.members.size();
      *table = std::move(a.table);
      *proof = std::move(a.proof);
      forwarded_ = a.forwarded;
      parent_ = a.parent;
      return OkStatus();
    }
    std::string AnsweredFrom() const override { return hub_->seen_host_; }
    bool forwarded() const { return forwarded_; }
    int parent() const { return parent_; }

   private:
    LocalBootstrapHub* hub_;
    int rank_;
    std::string host_;
    internal::Deadline deadline_;
    bool forwarded_ = false;
    int parent_ = 0;
  };

  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::pair<internal::Table, std::string>> got;
  };
  // `from` sends `table` to `to`, which takes it only with the leader's proof.
  void Deliver(int from, int to, const internal::Table& table, const std::string& proof) {
    ++deliveries_[from];
    ++deliveries_[to];
    entries_[from] += table.members.size();
    if (!key_.empty() && !internal::MacEquals(internal::ForwardedTableProof(key_, table), proof)) return;
    Inbox& in = *inboxes_[to];
    {
      std::lock_guard<std::mutex> lock(in.mu);
      in.got.emplace_back(table, proof);
    }
    in.cv.notify_all();
  }
  // Sends the table on to the children of `rank`'s place.
  void SendDown(int rank, const internal::Table& table, const std::string& proof) {
    const int place = internal::PlaceOf(table, rank);
    if (place < 0) return;
    for (int child : internal::TreeChildren(place, static_cast<int>(table.members.size())))
      Deliver(rank, table.members[child].rank, table, proof);
  }

  class LocalMember final : public internal::Bootstrap {
   public:
    LocalMember(LocalBootstrapHub* hub, int rank, const std::string& key)
        : hub_(hub), rank_(rank), key_(key) {}
    StatusOr<internal::Table> Exchange(const internal::MemberEntry& self,
                                       internal::Deadline deadline) override {
      if (rank_ == 0) {
        auto table = hub_->hub_.LeaderJoin(self, deadline, hub_->timeout_s_);
        if (hub_->tree_ && table.ok() && internal::TableTravelsDownTree(*table)) {
          std::string proof;
          if (!hub_->key_.empty()) {
            internal::Mac m = internal::ForwardedTableProof(hub_->key_, *table);
            proof.assign(m.data(), m.size());
          }
          hub_->SendDown(0, *table, proof);
        }
        return table;
      }
      Link link(hub_, rank_, self.data_host, deadline);
      internal::JoinParties p{hub_->names_[rank_], hub_->names_[0], "in-process", hub_->timeout_s_};
      internal::JoinClaim claim;
      claim.rank = rank_;
      claim.group_size = static_cast<int>(hub_->names_.size());
      claim.task_name = hub_->names_[rank_];
      claim.data_port = self.data_port;
      claim.process_id = self.process_id;
      claim.control_port = hub_->tree_ ? 1 : 0;  // an inbox, in place of a port
      auto table = internal::JoinThrough(link, p, key_, std::move(claim), deadline);
      if (!table.ok() || !link.forwarded()) return table;
      Inbox& in = *hub_->inboxes_[rank_];
      std::unique_lock<std::mutex> lock(in.mu);
      const std::pair<internal::Table, std::string>* got = nullptr;
      in.cv.wait_until(lock, deadline, [&] {
        for (const auto& d : in.got) {
          if (d.first.incarnation == table->incarnation) got = &d;
        }
        return got != nullptr;
      });
      if (!got) {
        return DeadlineExceededError("group formation timed out: the table of this round never came from " +
                                     hub_->names_[link.parent()] + " (its parent in the formation tree)");
      }
      internal::Table full = got->first;
      const std::string proof = got->second;
      lock.unlock();
      hub_->SendDown(rank_, full, proof);
      internal::UseLeaderAddress(full, link.AnsweredFrom());
      return full;
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
  std::vector<std::atomic<uint32_t>> deliveries_;
  std::vector<std::atomic<uint64_t>> entries_;
  bool tree_ = false;                            // set before any member starts
  std::vector<std::unique_ptr<Inbox>> inboxes_;  // by rank, with tree_
  std::string seen_host_;                        // set before any member starts
  std::atomic<uint64_t> next_incarnation_{101};
  internal::FormationHub hub_;
};

}  // namespace ringmaster::testing
