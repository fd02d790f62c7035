#include "control.h"

#include <random>
#include <sstream>

namespace ringmaster::internal {

namespace pb = ringmaster::agent::v1;

uint64_t RandomId() {
  std::random_device rd;
  uint64_t v = 0;
  while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return v;
}

std::string AgentService::MissingLocked() const {
  std::string out;
  for (int r = 0; r < static_cast<int>(names_.size()); ++r) {
    if (!pending_.count(r) && !seen_.count(r)) out += (out.empty() ? "" : ", ") + names_[r];
  }
  return out;
}

bool AgentService::MaybeCompleteLocked() {
  if (pending_.size() != names_.size() || !pending_.count(0)) return false;
  pb::JoinResponse resp;
  resp.set_incarnation(RandomId());
  for (auto& [r, m] : pending_) *resp.add_members() = m;
  results_[round_] = resp;
  results_.erase(results_.begin(), results_.lower_bound(round_ >= 4 ? round_ - 4 : 0));
  pending_.clear();
  seen_.clear();
  ++round_;
  cv_.notify_all();
  return true;
}

grpc::Status AgentService::Join(grpc::ServerContext* ctx, const pb::JoinRequest* req,
                                pb::JoinResponse* resp) {
  const int n = static_cast<int>(names_.size());
  if (rank_ != 0) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, names_[rank_] + " is not the leader (rank 0)");
  }
  if (req->group_size() != n) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "group_size " + std::to_string(req->group_size()) + " != " + std::to_string(n));
  }
  if (req->rank() <= 0 || req->rank() >= n) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "rank " + std::to_string(req->rank()) + " out of range");
  }
  if (req->task_name() != names_[req->rank()]) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "rank " + std::to_string(req->rank()) + " is " +
                                                                names_[req->rank()] + ", not '" +
                                                                req->task_name().substr(0, 200) + "'");
  }
  if (req->data_port() <= 0 || req->data_port() > 65535) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "data_port out of range");
  }
  std::string peer = ctx->peer();  // "ipv4:127.0.0.1:5555" / "ipv6:[::1]:5555"
  std::string host;
  if (auto c = peer.find(':'); c != std::string::npos) {
    host = peer.substr(c + 1);
    if (auto last = host.rfind(':'); last != std::string::npos) host = host.substr(0, last);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  }
  pb::Member m;
  m.set_rank(req->rank());
  m.set_task_name(req->task_name());
  m.set_data_host(host);
  m.set_data_port(req->data_port());
  m.set_process_id(req->process_id());

  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t my_round = round_;
  pending_[req->rank()] = m;
  seen_.insert(req->rank());
  MaybeCompleteLocked();
  // Answer a little before the caller's deadline so it learns who is missing.
  auto limit = ctx->deadline() - std::chrono::milliseconds(300);
  auto cap =
      std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                             std::chrono::duration<double>(formation_timeout_s_));
  if (limit > cap) limit = cap;
  bool done =
      cv_.wait_until(lock, limit, [&] { return round_ > my_round || shutdown_ || ctx->IsCancelled(); });
  if (done && round_ > my_round && results_.count(my_round)) {
    *resp = results_[my_round];
    return grpc::Status::OK;
  }
  std::string missing = MissingLocked();
  auto it = pending_.find(req->rank());
  if (round_ == my_round && it != pending_.end() && it->second.process_id() == req->process_id())
    pending_.erase(it);
  if (shutdown_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the leader is shutting down");
  if (missing.empty()) missing = names_[req->rank()];
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                      "group formation timed out: missing " + missing + " (at the leader " + names_[0] + ")");
}

grpc::Status AgentService::GetStatus(grpc::ServerContext*, const pb::StatusRequest*,
                                     pb::StatusResponse* resp) {
  std::lock_guard<std::mutex> lock(mu_);
  resp->set_rank(rank_);
  resp->set_task_name(names_[rank_]);
  resp->set_incarnation(incarnation_);
  resp->set_aborted(!health_.ok());
  resp->set_abort_reason(health_.ToString());
  return grpc::Status::OK;
}

StatusOr<pb::JoinResponse> AgentService::LeaderRendezvous(const pb::Member& self, Deadline deadline,
                                                          double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t my_round = round_;
  pending_[0] = self;
  seen_.insert(0);
  MaybeCompleteLocked();
  bool done = cv_.wait_until(lock, deadline, [&] { return round_ > my_round || shutdown_; });
  if (done && round_ > my_round && results_.count(my_round)) return results_[my_round];
  std::string missing = MissingLocked();
  pending_.erase(0);
  if (shutdown_) return CancelledError("shutting down");
  std::ostringstream msg;
  msg << "group formation timed out after " << timeout_s << "s: missing " << missing;
  return DeadlineExceededError(msg.str());
}

void AgentService::SetState(uint64_t incarnation, const Status& health) {
  std::lock_guard<std::mutex> lock(mu_);
  incarnation_ = incarnation;
  health_ = health;
}

void AgentService::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

}  // namespace ringmaster::internal
