// The formation core (formation_state.h) behind one lock, with the waiting
// its callers need: a follower's Join waits for its round, the leader's own
// entry waits for everyone. What the gRPC control service runs per call and
// what the in-process bootstrap of the tests runs directly; the clock is
// read here, never in the core.
//
// A follower's Join is waited for in one of two ways. FollowerJoin blocks
// its caller (the in-process bootstrap of the tests: a thread per member
// anyway). FollowerJoinLater holds no thread: the hub keeps the joiner's
// answer and runs it when its round completes, when its deadline passes
// (one timer thread for all of them), when its call is cancelled (Cancel)
// or at Shutdown. The gRPC control service answers Join this way, so the
// leader holds no thread per joiner, whatever N.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/formation_state.h"

namespace ringmaster::internal {

class FormationHub {
 public:
  FormationHub(int rank, std::vector<std::string> names, const JobKey* key, FormationState::IdSource ids,
               ElasticSize elastic = {})
      : state_(rank, std::move(names), key, std::move(ids), elastic) {}
  ~FormationHub();  // Shutdown, and the timer thread joined
  FormationHub(const FormationHub&) = delete;
  FormationHub& operator=(const FormationHub&) = delete;

  FormationState::ChallengeAnswer Challenge();
  // A follower's Join: refused at once (`*stranger` set when for want of the
  // key), or the table of its round; given up at `limit`, or when
  // `cancelled()` holds at a wake-up, naming who is missing.
  StatusOr<Table> FollowerJoin(const JoinClaim& claim, const std::string& host, Deadline limit,
                               const std::function<bool()>& cancelled, bool* stranger);
  // The same Join without a waiting thread. `answer` runs exactly once, never
  // under the hub's lock: at once for a refusal (`*stranger` as above), else
  // with the table of its round, or at `limit`, Cancel or Shutdown with who
  // is missing. Returns the ticket for Cancel (0: answered already).
  using Answer = std::function<void(StatusOr<Table>)>;
  uint64_t FollowerJoinLater(const JoinClaim& claim, const std::string& host, Deadline limit, Answer answer,
                             bool* stranger);
  // The call of `ticket` was cancelled: it gives up now (nothing when it was
  // answered already).
  void Cancel(uint64_t ticket);
  int Waiting();  // joiners held by FollowerJoinLater, not answered yet
  // The leader's own side of a round: blocks until every member joined (or,
  // with an elastic size, enough of them when the rejoin bound passes: it
  // ticks the state then).
  StatusOr<Table> LeaderJoin(const MemberEntry& self, Deadline deadline, double timeout_s);
  // FormationState::FetchTable, answered at once.
  FormationState::TableFetch FetchTable(const TableAsk& ask);
  int Joiners();                        // FormationState::Joiners
  bool Superseded(const Table& table);  // FormationState::Superseded
  Status CheckStatusCaller(std::string_view server_nonce, std::string_view client_nonce,
                           std::string_view proof);
  void Shutdown();

 private:
  struct Waiter {
    uint64_t round = 0;
    int rank = 0;
    uint64_t process_id = 0;
    Deadline limit;
    Answer answer;
  };
  using Ready = std::vector<std::pair<Answer, StatusOr<Table>>>;
  // Under the lock: the waiters whose round completed, with their tables.
  void TakeCompleted(Ready* ready);
  // Runs `ready` with the lock released, then takes it again.
  static void Run(std::unique_lock<std::mutex>& lock, Ready* ready);
  void Timer();  // answers the waiters whose limit passed, until Shutdown

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable timer_cv_;
  FormationState state_;
  std::map<uint64_t, Waiter> waiters_;
  uint64_t next_ticket_ = 1;
  bool stop_timer_ = false;
  std::thread timer_;  // started with the first FollowerJoinLater
};

}  // namespace ringmaster::internal
