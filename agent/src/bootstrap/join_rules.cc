#include "bootstrap/join_rules.h"

#include "bootstrap/join_checks.h"
#include "group/failure_messages.h"

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

Status JoinFailed(const JoinParties& p, const Status& attempt) {
  if (attempt.code() == StatusCode::kDeadlineExceeded) {
    if (attempt.message().rfind("group formation", 0) == 0) return DeadlineExceededError(attempt.message());
    return DeadlineExceededError("group formation timed out after " + FormatSeconds(p.timeout_s) +
                                 ": missing " + p.leader + " (the leader at " + p.target +
                                 " did not answer)");
  }
  return Status(attempt.code(), "group formation: the leader " + p.leader + " at " + p.target + " refused " +
                                    p.me + ": " + attempt.message());
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

Status CheckTableSize(const Table& table, int size) {
  if (static_cast<int>(table.members.size()) == size) return OkStatus();
  return InternalError("group formation: the leader sent " + std::to_string(table.members.size()) +
                       " members, expected " + std::to_string(size));
}

}  // namespace ringmaster::internal
