#include "bootstrap/follower.h"

#include <thread>

#include "bootstrap/join_checks.h"

namespace ringmaster::internal {

StatusOr<Table> JoinThrough(LeaderLink& link, const JoinParties& p, const JobKey& key, JoinClaim claim,
                            Deadline retry_until) {
  constexpr auto kPause = std::chrono::milliseconds(200);
  Table table;
  std::string proof;
  Status st;
  while (true) {
    FormationState::ChallengeAnswer challenge;
    st = link.Challenge(&challenge);
    if (st.ok()) {
      RM_RETURN_IF_ERROR(CheckChallengeAgrees(p, challenge.key_required, !key.empty()));
      if (!key.empty()) {
        Nonce mine = FreshNonce();
        claim.server_nonce = challenge.server_nonce;
        claim.client_nonce.assign(mine.data(), mine.size());
        Mac m = JoinProof(key, claim);
        claim.proof.assign(m.data(), m.size());
      }
      st = link.Join(claim, &table, &proof);
    }
    if (!JoinAgain(st)) break;
    if (Clock::now() + kPause >= retry_until) break;
    std::this_thread::sleep_for(kPause);  // the leader is not up yet: ask again shortly
  }
  if (!st.ok()) return JoinFailed(p, st);
  RM_RETURN_IF_ERROR(CheckAnswer(p, key, claim, table, proof));
  return table;
}

}  // namespace ringmaster::internal
