#include "bootstrap/formation_hub.h"

#include <algorithm>

namespace ringmaster::internal {

FormationState::ChallengeAnswer FormationHub::Challenge() {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.Challenge(Clock::now());
}

StatusOr<Table> FormationHub::FollowerJoin(const JoinClaim& claim, const std::string& host, Deadline limit,
                                           const std::function<bool()>& cancelled, bool* stranger) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto a = state_.Join(claim, host, Clock::now());
  *stranger = a.stranger;
  if (!a.refused.ok()) return a.refused;
  if (a.completed) cv_.notify_all();
  cv_.wait_until(lock, limit,
                 [&] { return state_.Completed(a.round) || state_.shutting_down() || cancelled(); });
  if (state_.Completed(a.round)) {
    if (const Table* t = state_.Result(a.round)) return *t;
  }
  return state_.FollowerGivesUp(a.round, claim.rank, claim.process_id);
}

StatusOr<Table> FormationHub::LeaderJoin(const MemberEntry& self, Deadline deadline, double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto a = state_.LeaderJoins(self, Clock::now());
  if (a.completed) cv_.notify_all();
  auto done = [&] { return state_.Completed(a.round) || state_.shutting_down(); };
  while (!done() && Clock::now() < deadline) {
    const auto due = state_.ShrinkDue();
    cv_.wait_until(lock, due ? std::min(*due, deadline) : deadline, done);
    if (!done() && state_.Tick(Clock::now())) cv_.notify_all();
  }
  if (state_.Completed(a.round)) {
    if (const Table* t = state_.Result(a.round)) return *t;
  }
  return state_.LeaderGivesUp(timeout_s);
}

int FormationHub::Joiners() {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.Joiners();
}

bool FormationHub::Superseded(const Table& table) {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.Superseded(table);
}

Status FormationHub::CheckStatusCaller(std::string_view server_nonce, std::string_view client_nonce,
                                       std::string_view proof) {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.CheckStatusCaller(server_nonce, client_nonce, proof, Clock::now());
}

void FormationHub::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.Shutdown();
  cv_.notify_all();
}

}  // namespace ringmaster::internal
