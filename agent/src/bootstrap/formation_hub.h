// The formation core (formation_state.h) behind one lock, with the waiting
// its callers need: a follower's Join waits for its round, the leader's own
// entry waits for everyone. What the gRPC control service runs per call and
// what the in-process bootstrap of the tests runs directly; the clock is
// read here, never in the core.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/formation_state.h"

namespace ringmaster::internal {

class FormationHub {
 public:
  FormationHub(int rank, std::vector<std::string> names, const JobKey* key, FormationState::IdSource ids,
               ElasticSize elastic = {})
      : state_(rank, std::move(names), key, std::move(ids), elastic) {}

  FormationState::ChallengeAnswer Challenge();
  // A follower's Join: refused at once (`*stranger` set when for want of the
  // key), or the table of its round; given up at `limit`, or when
  // `cancelled()` holds at a wake-up, naming who is missing.
  StatusOr<Table> FollowerJoin(const JoinClaim& claim, const std::string& host, Deadline limit,
                               const std::function<bool()>& cancelled, bool* stranger);
  // The leader's own side of a round: blocks until every member joined (or,
  // with an elastic size, enough of them when the rejoin bound passes: it
  // ticks the state then).
  StatusOr<Table> LeaderJoin(const MemberEntry& self, Deadline deadline, double timeout_s);
  int Joiners();                        // FormationState::Joiners
  bool Superseded(const Table& table);  // FormationState::Superseded
  Status CheckStatusCaller(std::string_view server_nonce, std::string_view client_nonce,
                           std::string_view proof);
  void Shutdown();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  FormationState state_;
};

}  // namespace ringmaster::internal
