// The job key's part in formation (auth.h holds the key itself): what a
// member proves with its Join, the leader's proof over the table it answers,
// the proof a GetStatus caller gives, and the checks of a Join before it may
// touch any state. Pure: the time is passed in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/table.h"
#include "clock.h"
#include "ringmaster/status.h"
#include "transport/auth.h"

namespace ringmaster::internal {

// A member's proof: the key over the leader's challenge, its own nonce and
// every field it claims.
Mac JoinProof(const JobKey& key, const JoinClaim& claim);
// The checks of a Join: its fields against the group's names, then (when
// the leader has a key) that it answers a challenge the leader handed out
// (single use) and proves the key over it. Unauthenticated for a failed
// proof (the shell logs those as refused peers), InvalidArgument for a field.
Status CheckClaim(const JoinClaim& claim, const std::vector<std::string>& names, const JobKey& key,
                  NonceBook& nonces, Clock::time_point now);
// The leader's proof over the request's nonces, the incarnation and the
// whole table, so a member takes its table only from the real leader.
Mac TableProof(const JobKey& key, const JoinClaim& claim, const Table& table);
// The leader's proof over a table sent down the formation tree
// (formation_tree.h): the incarnation and every member, no member's nonces
// (the member's own Join answer proves its incarnation fresh).
Mac ForwardedTableProof(const JobKey& key, const Table& table);
// A member's proof with its TableAsk: the key over the leader's challenge,
// its own nonce, its rank and name and the incarnation.
Mac TableAskProof(const JobKey& key, const TableAsk& ask);
// The checks of a TableAsk, as CheckClaim's of a Join: its fields against
// the group's names, then (with a key) a challenge of the leader's redeemed
// once and the key proved over it. Unauthenticated for a failed proof.
Status CheckTableAsk(const TableAsk& ask, const std::vector<std::string>& names, const JobKey& key,
                     NonceBook& nonces, Clock::time_point now);
// The leader's proof over its answer to `ask`: the request's nonces, the
// incarnation, what it says of the round, why, and the table it gives
// (no members: none), so a member takes the answer only from the real
// leader, and only for this request.
Mac TableAnswerProof(const JobKey& key, const TableAsk& ask, FetchedRound round, std::string_view why,
                     const Table& table);
// What GetStatus's caller must prove.
Mac StatusProof(const JobKey& key, std::string_view server_nonce, std::string_view client_nonce);

}  // namespace ringmaster::internal
