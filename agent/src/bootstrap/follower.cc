#include "bootstrap/follower.h"

#include <algorithm>
#include <thread>

#include "bootstrap/join_checks.h"

namespace ringmaster::internal {

StatusOr<Table> JoinThrough(LeaderLink& link, const JoinParties& p, const JobKey& key, JoinClaim claim,
                            Deadline retry_until) {
  constexpr auto kFirstPause = std::chrono::milliseconds(200),
                 kLongestPause = std::chrono::milliseconds(1000);
  auto pause = kFirstPause;
  Table table;
  std::string proof;
  Status st, earlier;  // earlier: the last attempt asked again (why the leader did not answer)
  while (true) {
    FormationState::ChallengeAnswer challenge;
    st = link.Challenge(&challenge);
    if (st.ok()) {
      earlier = OkStatus();  // the leader answers: whatever kept it away before is over
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
    earlier = st;
    if (Clock::now() + pause >= retry_until) break;
    std::this_thread::sleep_for(pause);  // the leader is not up yet: ask again shortly
    pause = std::min(pause * 2, kLongestPause);
  }
  if (!st.ok()) return JoinFailed(p, st, earlier);
  RM_RETURN_IF_ERROR(CheckAnswer(p, key, claim, table, proof));
  UseLeaderAddress(table, link.AnsweredFrom());  // after the proof: it covers the table as the leader sent it
  return table;
}

}  // namespace ringmaster::internal
