// A follower's decisions while it joins, apart from how it reaches the
// leader (join_client.h over gRPC, or in-process in tests): whether the
// leader's challenge and our own key agree, whether a failed attempt is
// asked again, the words of a Join that failed for good, and whether an
// answer proves the key. Pure.
#pragma once

#include <string>

#include "bootstrap/table.h"
#include "ringmaster/status.h"
#include "transport/auth.h"

namespace ringmaster::internal {

// Who is joining whom, for the messages.
struct JoinParties {
  std::string me, leader;
  std::string target;  // the leader's control address, "host:port"
  double timeout_s = 0;
};

// Both keyed or both not: otherwise the members were started with
// different keys, and asking again will not help.
Status CheckChallengeAgrees(const JoinParties& p, bool key_required, bool have_key);
// A leader that is not there yet or going away (a restart of the group), or
// whose challenge expired under a flood, is asked again until the deadline.
bool JoinAgain(const Status& attempt);
// What the member reports when its Join failed for good: the leader's own
// timeout words (naming who is missing); ours naming the leader when it never
// answered, with why (`attempt`'s words, or those of the `earlier` attempt
// when the last one only ran out of time: a DNS failure, a refused or
// never-made connection); or the leader's refusal.
Status JoinFailed(const JoinParties& p, const Status& attempt, const Status& earlier = OkStatus());
// The host of a gRPC peer address: "ipv4:10.0.0.5:5555" -> "10.0.0.5",
// "ipv6:[::1]:5555" -> "::1"; "" for any other form.
std::string PeerHost(const std::string& peer);
// The leader lists itself under its TF_CONFIG host, a name. When its pod is
// replaced, that name keeps giving the old pod's address for seconds, while
// the address our Join was answered from is the leader itself: the mesh
// connects there. `answered_from` empty: the table is left as it is.
void UseLeaderAddress(Table& table, const std::string& answered_from);
// Takes the table only from the real leader (a keyed group) with one entry
// per member.
Status CheckAnswer(const JoinParties& p, const JobKey& key, const JoinClaim& claim, const Table& table,
                   std::string_view proof);
// What a member makes of the leader's answer to its TableAsk (FetchTable):
// the table when the round is formed and the answer proves the key over our
// nonces and the table the leader's forwarding proof (`table_proof`, which
// we send on to our children); Aborted, the words of a round that was left,
// when it was superseded (the member takes the next round, as when a member
// of its round left: mesh.cc); Unavailable, why, for anything else (ask
// again later).
StatusOr<Table> TakeFetchedTable(const JoinParties& p, const JobKey& key, const TableAsk& ask,
                                 FetchedRound round, const std::string& why, const Table& table,
                                 std::string_view table_proof, std::string_view answer_proof);
// A table for a group of `size` members, `rank` ours: one entry per member,
// or with an elastic size (min_size > 0) at least min_size of them; in rank
// order, the leader (0) and ourselves among them. Our place in it: our rank
// in the group it forms.
StatusOr<int> CheckTable(const Table& table, int size, int min_size, int rank);

}  // namespace ringmaster::internal
