// The leader's half of formation as a pure state machine, as group_state.h
// is for a formed group: events in (a challenge asked for, a Join with its
// claims, where it came from and when, the leader's own entry, a waiter
// giving up, shutdown), decisions out (refuse, and whether the refusal is a
// stranger's to log; the round a joiner waits for; the table once every
// member joined, with a fresh incarnation; who is missing when a waiter
// gives up). No clock, no sockets, no threads: the gRPC control service
// (control_service.h) and the in-process bootstrap of the tests drive it
// behind a lock (formation_hub.h) and feed it the time.
//
// Rounds: each completed round hands out one table with a new incarnation
// and the next Join starts the next round, so a re-formation (Reform() on
// every member) is simply the next round. Within a round the latest Join of
// a rank wins: a member that restarted (a new process id) replaces its old
// entry. The tables of the last few rounds are kept for waiters that wake
// late.
//
// Elastic size (ElasticSize): a round may also complete without the members
// that have not joined `rejoin_s` after the leader did (its re-formation
// begins with the others'; a joiner that waited since before must not cut
// that short), once at least `min_size` joined, the leader among them (its
// port is the one everyone knows). Its table lists the members present, in
// rank order; they number themselves by their place in it. A member left
// out joins a later round, and the leader learns it waits (Joiners()): the
// group grows at its next re-formation.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/table.h"
#include "clock.h"
#include "ringmaster/status.h"
#include "transport/auth.h"

namespace ringmaster::internal {

// 0 members: every member, always (the default: no elastic size).
struct ElasticSize {
  int min_size = 0;
  double rejoin_s = 30;
};

class FormationState {
 public:
  // A fresh incarnation per completed round (random in the agent; a counter
  // in tests, so their output is the same every run).
  using IdSource = std::function<uint64_t()>;
  // `rank`: this member's own (only rank 0 admits Joins); `key`: never
  // null, empty for none.
  FormationState(int rank, std::vector<std::string> names, const JobKey* key, IdSource new_incarnation,
                 ElasticSize elastic = {});

  struct ChallengeAnswer {
    bool key_required = false;
    std::string server_nonce;  // redeemable once by a Join or a GetStatus
  };
  ChallengeAnswer Challenge(Clock::time_point now);

  struct Admission {
    Status refused;          // not OK: the Join is refused and nothing changed
    bool stranger = false;   // the refusal is for want of the key: log the caller
    uint64_t round = 0;      // admitted: the round whose table it waits for
    bool completed = false;  // this Join completed that round
  };
  // A follower's Join, checked (join_checks.h) before it touches any state;
  // `host` is the address it came from, the data host the table lists.
  Admission Join(const JoinClaim& claim, const std::string& host, Clock::time_point now);
  // The leader's own entry (rank 0), unchecked.
  Admission LeaderJoins(const MemberEntry& self, Clock::time_point now);
  // Elastic size: when the round may complete without whoever has not
  // joined (nullopt: not elastic, or the leader has not joined it), and the
  // clock's tick at or after that time, which completes it when at least
  // min_size members joined. True: it completed.
  std::optional<Clock::time_point> ShrinkDue() const;
  bool Tick(Clock::time_point now);
  // Members waiting in a round the leader has not joined yet: left out of
  // the current group (or restarted), they wait for its next re-formation.
  int Joiners() const { return pending_.count(0) ? 0 : static_cast<int>(pending_.size()); }
  // Whether the group of `table` (a completed round's) can no longer form
  // its mesh: one of its members joined the next round already. It either
  // restarted (a new process: the one in the table is gone) or gave up on
  // that mesh itself. The leader, still connecting it, starts over with
  // everyone rather than waiting for a dead entry until the deadline.
  bool Superseded(const Table& table) const;

  // A member's request for the table of the round its Join was answered in
  // (its parent in the formation tree never sent it), checked as a Join is
  // (CheckTableAsk). kFormed with the table when that round is the latest
  // completed and still forming its mesh: nobody of it has joined the next
  // round, the leader included. Otherwise kSuperseded, with why: a later
  // round formed or is forming, or the incarnation is not known here (the
  // leader restarted, or formed more rounds than it keeps): every
  // incarnation a member holds was formed before its Join was answered, so
  // none is "not formed yet".
  struct TableFetch {
    Status refused;         // not OK: refused, nothing changed
    bool stranger = false;  // the refusal is for want of the key: log the caller
    FetchedRound round = FetchedRound::kUnknown;
    Table table;      // kFormed
    std::string why;  // kSuperseded
  };
  TableFetch FetchTable(const TableAsk& ask, Clock::time_point now);

  // Whether `round` completed; its table while it is kept (else null).
  bool Completed(uint64_t round) const { return round_ > round; }
  const Table* Result(uint64_t round) const;

  // A follower's Join waiting for `round` gives up (its deadline, its call
  // cancelled, the leader shutting down): its entry leaves the round unless
  // the round completed or another process of its rank replaced it. The
  // answer names who never joined this round.
  Status FollowerGivesUp(uint64_t round, int rank, uint64_t process_id);
  // The leader's own wait ends without a table: its entry leaves the round.
  Status LeaderGivesUp(double timeout_s);
  // The leader is going away: every waiter gives up, Unavailable/Cancelled.
  void Shutdown() { shutdown_ = true; }
  bool shutting_down() const { return shutdown_; }
  // GetStatus's check: a challenge of ours redeemed, and the key proved.
  Status CheckStatusCaller(std::string_view server_nonce, std::string_view client_nonce,
                           std::string_view proof, Clock::time_point now);

  // For tests and logs: the round being formed, who is in it, who is missing.
  uint64_t round() const { return round_; }
  std::vector<MemberEntry> Pending() const;
  std::string Missing() const;  // "a, b": not joined this round

 private:
  bool MaybeComplete();
  void Complete();  // the round, with the members in pending_

  const int rank_;
  const std::vector<std::string> names_;
  const JobKey* key_;
  IdSource new_incarnation_;
  const ElasticSize elastic_;
  std::optional<Clock::time_point> opened_;  // the leader's entry into the round
  NonceBook nonces_;
  bool shutdown_ = false;
  std::map<int, MemberEntry> pending_;
  std::set<int> seen_;  // joined during this round (for naming who is missing)
  uint64_t round_ = 0;
  std::map<uint64_t, Table> results_;
};

}  // namespace ringmaster::internal
