#include "bootstrap/formation_hub.h"

#include <algorithm>
#include <optional>
#include <utility>

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
  if (a.completed) {
    cv_.notify_all();
    Ready ready;
    TakeCompleted(&ready);
    Run(lock, &ready);
  }
  cv_.wait_until(lock, limit,
                 [&] { return state_.Completed(a.round) || state_.shutting_down() || cancelled(); });
  if (state_.Completed(a.round)) {
    if (const Table* t = state_.Result(a.round)) return *t;
  }
  return state_.FollowerGivesUp(a.round, claim.rank, claim.process_id);
}

FormationHub::~FormationHub() {
  Shutdown();
  if (timer_.joinable()) timer_.join();
}

uint64_t FormationHub::FollowerJoinLater(const JoinClaim& claim, const std::string& host, Deadline limit,
                                         Answer answer, bool* stranger) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto a = state_.Join(claim, host, Clock::now());
  *stranger = a.stranger;
  Ready ready;
  uint64_t ticket = 0;
  if (!a.refused.ok()) {
    ready.emplace_back(std::move(answer), a.refused);
  } else if (state_.shutting_down()) {
    ready.emplace_back(std::move(answer), state_.FollowerGivesUp(a.round, claim.rank, claim.process_id));
  } else {
    ticket = next_ticket_++;
    waiters_[ticket] = Waiter{a.round, claim.rank, claim.process_id, limit, std::move(answer)};
    if (a.completed) {
      cv_.notify_all();
      TakeCompleted(&ready);
      if (!waiters_.count(ticket)) ticket = 0;
    } else {
      if (!timer_.joinable()) timer_ = std::thread([this] { Timer(); });
      timer_cv_.notify_one();
    }
  }
  Run(lock, &ready);
  return ticket;
}

void FormationHub::Cancel(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = waiters_.find(ticket);
  if (it == waiters_.end()) return;
  Ready ready;
  ready.emplace_back(std::move(it->second.answer),
                     state_.FollowerGivesUp(it->second.round, it->second.rank, it->second.process_id));
  waiters_.erase(it);
  Run(lock, &ready);
}

int FormationHub::Waiting() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(waiters_.size());
}

void FormationHub::TakeCompleted(Ready* ready) {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    const Waiter& w = it->second;
    if (!state_.Completed(w.round)) {
      ++it;
      continue;
    }
    if (const Table* t = state_.Result(w.round)) {
      ready->emplace_back(std::move(it->second.answer), *t);
    } else {
      ready->emplace_back(std::move(it->second.answer),
                          state_.FollowerGivesUp(w.round, w.rank, w.process_id));
    }
    it = waiters_.erase(it);
  }
}

void FormationHub::Run(std::unique_lock<std::mutex>& lock, Ready* ready) {
  if (ready->empty()) return;
  lock.unlock();
  for (auto& [answer, result] : *ready) answer(std::move(result));
  ready->clear();
  lock.lock();
}

void FormationHub::Timer() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_timer_) {
    Ready ready;
    const auto now = Clock::now();
    std::optional<Deadline> next;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      Waiter& w = it->second;
      if (w.limit <= now) {
        ready.emplace_back(std::move(w.answer), state_.FollowerGivesUp(w.round, w.rank, w.process_id));
        it = waiters_.erase(it);
        continue;
      }
      if (!next || w.limit < *next) next = w.limit;
      ++it;
    }
    if (!ready.empty()) {
      Run(lock, &ready);
      continue;
    }
    if (next) {
      timer_cv_.wait_until(lock, *next);
    } else {
      timer_cv_.wait(lock);
    }
  }
}

StatusOr<Table> FormationHub::LeaderJoin(const MemberEntry& self, Deadline deadline, double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto a = state_.LeaderJoins(self, Clock::now());
  Ready ready;
  if (a.completed) {
    cv_.notify_all();
    TakeCompleted(&ready);
    Run(lock, &ready);
  }
  auto done = [&] { return state_.Completed(a.round) || state_.shutting_down(); };
  while (!done() && Clock::now() < deadline) {
    const auto due = state_.ShrinkDue();
    cv_.wait_until(lock, due ? std::min(*due, deadline) : deadline, done);
    if (!done() && state_.Tick(Clock::now())) {
      cv_.notify_all();
      TakeCompleted(&ready);
      Run(lock, &ready);
    }
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

FormationState::TableFetch FormationHub::FetchTable(const TableAsk& ask) {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.FetchTable(ask, Clock::now());
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
  std::unique_lock<std::mutex> lock(mu_);
  state_.Shutdown();
  stop_timer_ = true;
  cv_.notify_all();
  timer_cv_.notify_all();
  Ready ready;
  for (auto& [ticket, w] : waiters_)
    ready.emplace_back(std::move(w.answer), state_.FollowerGivesUp(w.round, w.rank, w.process_id));
  waiters_.clear();
  Run(lock, &ready);
}

}  // namespace ringmaster::internal
