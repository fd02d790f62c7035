// A follower's half of a round, over any link to the leader's control
// service (join_client.h: gRPC; tests: in-process): a fresh challenge per
// attempt, then Join proving the key over it, asked again while the leader
// is not there yet or going away (join_rules.h decides), and the answer
// taken only when it proves the key.
#pragma once

#include <string>

#include "bootstrap/formation_state.h"
#include "bootstrap/join_rules.h"

namespace ringmaster::internal {

// The two calls of the control protocol; a failed call's status carries the
// leader's code and words.
class LeaderLink {
 public:
  virtual ~LeaderLink() = default;
  virtual Status Challenge(FormationState::ChallengeAnswer* out) = 0;
  virtual Status Join(const JoinClaim& claim, Table* table, std::string* proof) = 0;
  // The address the last successful Join was answered from ("" unknown):
  // where the leader's data listener is (join_rules.h UseLeaderAddress).
  virtual std::string AnsweredFrom() const { return ""; }
};

// `claim` holds the member's own fields; the nonces and proof are filled in
// per attempt. Attempts stop at `retry_until`; the pause between them grows
// from 0.2 s to 1 s, so a leader that is slow to come up is not flooded.
StatusOr<Table> JoinThrough(LeaderLink& link, const JoinParties& parties, const JobKey& key, JoinClaim claim,
                            Deadline retry_until);

}  // namespace ringmaster::internal
