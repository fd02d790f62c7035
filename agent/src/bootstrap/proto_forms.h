// The formation's values in their wire forms (proto/ringmaster/agent.proto)
// and back: a Join's claim, a round's table, a TableAsk; and the join checks
// (join_checks.h) over the wire's messages, which the auth test and the Join
// fuzzer call with them. Conversions only: what the control service
// (control_service.h) serves and the follower's client (join_client.h)
// sends both go through here.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/table.h"
#include "clock.h"
#include "ringmaster/agent.pb.h"
#include "ringmaster/status.h"
#include "transport/auth.h"

namespace ringmaster::internal {

JoinClaim ClaimOf(const ringmaster::agent::v1::JoinRequest& req);
Table TableOf(const ringmaster::agent::v1::JoinResponse& resp);
void ToProto(const Table& table, ringmaster::agent::v1::JoinResponse* resp);
void ToProto(const JoinClaim& claim, ringmaster::agent::v1::JoinRequest* req);
TableAsk AskOf(const ringmaster::agent::v1::TableRequest& req);
void ToProto(const TableAsk& ask, ringmaster::agent::v1::TableRequest* req);

// CheckClaim and TableProof (join_checks.h) over the wire's messages.
Status CheckJoin(const ringmaster::agent::v1::JoinRequest& req, const std::vector<std::string>& names,
                 const JobKey& key, NonceBook& nonces, Clock::time_point now);
Mac TableProof(const JobKey& key, const ringmaster::agent::v1::JoinRequest& req,
               const ringmaster::agent::v1::JoinResponse& table);

}  // namespace ringmaster::internal
