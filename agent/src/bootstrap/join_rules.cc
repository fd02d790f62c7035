#include "bootstrap/join_rules.h"

#include "bootstrap/join_checks.h"
#include "clock.h"

namespace ringmaster::internal {

Status CheckChallengeAgrees(const JoinParties& p, bool key_required, bool have_key) {
  if (key_required && !have_key) {
    return UnauthenticatedError("group formation: the leader " + p.leader + " requires the job key and " +
                                p.me + " has none (RINGMASTER_JOB_KEY_FILE is not set)");
  }
  if (!key_required && have_key) {
    return UnauthenticatedError("group formation: the leader " + p.leader + " has no job key but " + p.me +
                                " has one (RINGMASTER_JOB_KEY_FILE): the members were started with "
                                "different keys");
  }
  return OkStatus();
}

bool JoinAgain(const Status& attempt) {
  return attempt.code() == StatusCode::kUnavailable || attempt.code() == StatusCode::kCancelled ||
         (attempt.code() == StatusCode::kUnauthenticated &&
          attempt.message().find("challenge") != std::string::npos);
}

Status JoinFailed(const JoinParties& p, const Status& attempt, const Status& earlier) {
  const bool unanswered = JoinAgain(attempt);  // still not there when the time ran out
  if (attempt.code() == StatusCode::kDeadlineExceeded || unanswered) {
    if (attempt.message().rfind("group formation", 0) == 0) return DeadlineExceededError(attempt.message());
    const std::string why = unanswered ? attempt.message() : earlier.ok() ? "" : earlier.message();
    return DeadlineExceededError("group formation timed out after " + FormatSeconds(p.timeout_s) +
                                 ": missing " + p.leader + " (the leader at " + p.target + " did not answer" +
                                 (why.empty() ? "" : ": " + why) + ")");
  }
  return Status(attempt.code(), "group formation: the leader " + p.leader + " at " + p.target + " refused " +
                                    p.me + ": " + attempt.message());
}

std::string PeerHost(const std::string& peer) {
  const bool v4 = peer.rfind("ipv4:", 0) == 0, v6 = peer.rfind("ipv6:", 0) == 0;
  if (!v4 && !v6) return "";
  std::string host = peer.substr(5);
  const auto last = host.rfind(':');
  if (last == std::string::npos) return "";
  host.resize(last);
  if (v6 && host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return host;
}

void UseLeaderAddress(Table& table, const std::string& answered_from) {
  if (answered_from.empty() || table.members.empty()) return;
  table.members.front().data_host = answered_from;
}

Status CheckAnswer(const JoinParties& p, const JobKey& key, const JoinClaim& claim, const Table& table,
                   std::string_view proof) {
  if (!key.empty() && !MacEquals(TableProof(key, claim, table), proof)) {
    return UnauthenticatedError("group formation: the answer from " + p.target +
                                " does not prove the job key: "
                                "it is not the leader of this job");
  }
  return OkStatus();
}

StatusOr<Table> TakeFetchedTable(const JoinParties& p, const JobKey& key, const TableAsk& ask,
                                 FetchedRound round, const std::string& why, const Table& table,
                                 std::string_view table_proof, std::string_view answer_proof) {
  if (!key.empty() && !MacEquals(TableAnswerProof(key, ask, round, why, table), answer_proof)) {
    return UnavailableError("the answer from " + p.target + " does not prove the job key");
  }
  switch (round) {
    case FetchedRound::kFormed:
      if (table.incarnation != ask.incarnation || table.members.empty())
        return UnavailableError("the leader's table is not of this round");
      if (!key.empty() && !MacEquals(ForwardedTableProof(key, table), table_proof))
        return UnavailableError("the leader's table does not prove the job key");
      return table;
    case FetchedRound::kSuperseded:
      return AbortedError("group formation: the leader " + p.leader + " says this round was left (" +
                          why.substr(0, 200) + ")");
    default:
      return UnavailableError("the leader has not formed this round");
  }
}

StatusOr<int> CheckTable(const Table& table, int size, int min_size, int rank) {
  const int n = static_cast<int>(table.members.size());
  const int least = min_size > 0 && min_size < size ? min_size : size;
  if (n < least || n > size) {
    return InternalError(
        "group formation: the leader sent " + std::to_string(n) + " members, expected " +
        (least == size ? std::to_string(size) : std::to_string(least) + " to " + std::to_string(size)));
  }
  int place = -1;
  for (int i = 0; i < n; ++i) {
    const int r = table.members[i].rank;
    if (r < 0 || r >= size || (i > 0 && r <= table.members[i - 1].rank) || (i == 0 && r != 0)) {
      return InternalError("group formation: the leader's table is not in rank order from rank 0 (entry " +
                           std::to_string(i) + " is rank " + std::to_string(r) + ")");
    }
    if (r == rank) place = i;
  }
  if (place < 0) {
    return InternalError("group formation: the leader's table leaves out rank " + std::to_string(rank) +
                         ", which joined it");
  }
  return place;
}

}  // namespace ringmaster::internal
