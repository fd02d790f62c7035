#include "bootstrap/formation_state.h"

#include "bootstrap/join_checks.h"
#include "clock.h"
#include "ringmaster/join_list.h"

namespace ringmaster::internal {

namespace {
constexpr uint64_t kRoundsKept = 4;  // tables kept for waiters that wake late
}

FormationState::FormationState(int rank, std::vector<std::string> names, const JobKey* key,
                               IdSource new_incarnation, ElasticSize elastic)
    : rank_(rank),
      names_(std::move(names)),
      key_(key),
      new_incarnation_(std::move(new_incarnation)),
      elastic_(elastic) {}

FormationState::ChallengeAnswer FormationState::Challenge(Clock::time_point now) {
  ChallengeAnswer a;
  a.key_required = !key_->empty();
  if (a.key_required) {
    Nonce n = nonces_.Issue(now);
    a.server_nonce.assign(n.data(), n.size());
  }
  return a;
}

FormationState::Admission FormationState::Join(const JoinClaim& claim, const std::string& host,
                                               Clock::time_point now) {
  Admission a;
  if (rank_ != 0) {
    a.refused = FailedPreconditionError(names_[rank_] + " is not the leader (rank 0)");
    return a;
  }
  // Nothing below runs, and no state changes, for a claim that fails here.
  if (Status st = CheckClaim(claim, names_, *key_, nonces_, now); !st.ok()) {
    a.stranger = st.code() == StatusCode::kUnauthenticated;
    a.refused = st;
    return a;
  }
  a.round = round_;
  pending_[claim.rank] =
      MemberEntry{claim.rank, claim.task_name, host, claim.data_port, claim.process_id, claim.control_port};
  seen_.insert(claim.rank);
  a.completed = MaybeComplete();
  return a;
}

FormationState::Admission FormationState::LeaderJoins(const MemberEntry& self, Clock::time_point now) {
  Admission a;
  a.round = round_;
  opened_ = now;
  pending_[0] = self;
  seen_.insert(0);
  a.completed = MaybeComplete();
  return a;
}

bool FormationState::MaybeComplete() {
  if (pending_.size() != names_.size() || !pending_.count(0)) return false;
  Complete();
  return true;
}

std::optional<Clock::time_point> FormationState::ShrinkDue() const {
  const int n = static_cast<int>(names_.size());
  if (elastic_.min_size <= 0 || elastic_.min_size >= n || !pending_.count(0) || !opened_) return std::nullopt;
  return *opened_ +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(elastic_.rejoin_s));
}

bool FormationState::Tick(Clock::time_point now) {
  const auto due = ShrinkDue();
  if (!due || now < *due || static_cast<int>(pending_.size()) < elastic_.min_size) return false;
  Complete();
  return true;
}

void FormationState::Complete() {
  Table t;
  t.incarnation = new_incarnation_();
  for (auto& [r, m] : pending_) t.members.push_back(m);
  results_[round_] = std::move(t);
  results_.erase(results_.begin(), results_.lower_bound(round_ >= kRoundsKept ? round_ - kRoundsKept : 0));
  pending_.clear();
  seen_.clear();
  opened_.reset();
  ++round_;
}

bool FormationState::Superseded(const Table& table) const {
  if (pending_.count(0)) return false;  // the leader is in the next round itself
  for (const auto& m : table.members) {
    if (m.rank != 0 && pending_.count(m.rank)) return true;
  }
  return false;
}

FormationState::TableFetch FormationState::FetchTable(const TableAsk& ask, Clock::time_point now) {
  TableFetch f;
  if (rank_ != 0) {
    f.refused = FailedPreconditionError(names_[rank_] + " is not the leader (rank 0)");
    return f;
  }
  if (Status st = CheckTableAsk(ask, names_, *key_, nonces_, now); !st.ok()) {
    f.stranger = st.code() == StatusCode::kUnauthenticated;
    f.refused = st;
    return f;
  }
  f.round = FetchedRound::kSuperseded;
  const Table* latest = round_ > 0 ? Result(round_ - 1) : nullptr;
  if (latest && latest->incarnation == ask.incarnation) {
    if (pending_.count(0)) {
      f.why = "the leader left it for the next round";
    } else if (Superseded(*latest)) {
      f.why = "a member of it joined the next round";
    } else {
      f.round = FetchedRound::kFormed;
      f.table = *latest;
    }
    return f;
  }
  bool kept = false;
  for (const auto& [r, t] : results_) kept = kept || t.incarnation == ask.incarnation;
  f.why = kept ? "the leader formed a later round"
               : "the leader does not know it (it restarted, or formed several rounds since)";
  return f;
}

const Table* FormationState::Result(uint64_t round) const {
  auto it = results_.find(round);
  return it == results_.end() ? nullptr : &it->second;
}

Status FormationState::FollowerGivesUp(uint64_t round, int rank, uint64_t process_id) {
  std::string missing = Missing();
  auto it = pending_.find(rank);
  if (round_ == round && it != pending_.end() && it->second.process_id == process_id) pending_.erase(it);
  if (shutdown_) return UnavailableError("the leader is shutting down");
  if (missing.empty()) missing = names_[rank];
  return DeadlineExceededError("group formation timed out: missing " + missing + " (at the leader " +
                               names_[0] + ")");
}

Status FormationState::LeaderGivesUp(double timeout_s) {
  std::string missing = Missing();
  pending_.erase(0);
  opened_.reset();
  if (shutdown_) return CancelledError("shutting down");
  std::string elastic;
  if (elastic_.min_size > 0 && elastic_.min_size < static_cast<int>(names_.size())) {
    elastic = " (elastic size: at least " + std::to_string(elastic_.min_size) + " of " +
              std::to_string(names_.size()) + " members needed)";
  }
  return DeadlineExceededError("group formation timed out after " + FormatSeconds(timeout_s) + ": missing " +
                               missing + elastic);
}

Status FormationState::CheckStatusCaller(std::string_view server_nonce, std::string_view client_nonce,
                                         std::string_view proof, Clock::time_point now) {
  if (key_->empty()) return OkStatus();
  // Nothing, not even our name, to a caller that does not prove the key.
  const bool ok =
      nonces_.Redeem(server_nonce, now) && key_->Verify(proof, "status", {server_nonce, client_nonce});
  return ok ? OkStatus() : UnauthenticatedError("GetStatus needs the job key");
}

std::vector<MemberEntry> FormationState::Pending() const {
  std::vector<MemberEntry> out;
  for (const auto& [r, m] : pending_) out.push_back(m);
  return out;
}

std::string FormationState::Missing() const {
  std::vector<std::string> missing;
  for (int r = 0; r < static_cast<int>(names_.size()); ++r) {
    if (!pending_.count(r) && !seen_.count(r)) missing.push_back(names_[r]);
  }
  return JoinList(missing);
}

}  // namespace ringmaster::internal
