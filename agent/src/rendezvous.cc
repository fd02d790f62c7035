#include "rendezvous.h"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <thread>

#include "verdict.h"

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
  msg << "group formation timed out after " << FormatSeconds(timeout_s) << ": missing " << missing;
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

StatusOr<std::unique_ptr<grpc::Server>> ServeControl(AgentService* service, int port,
                                                     const std::string& task) {
  grpc::ServerBuilder builder;
  int selected = 0;
  builder.AddListeningPort("[::]:" + std::to_string(port), grpc::InsecureServerCredentials(), &selected);
  builder.RegisterService(service);
  builder.SetMaxReceiveMessageSize(64 * 1024);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  auto server = builder.BuildAndStart();
  if (server && selected != 0) return server;
  // gRPC logs the cause but returns none: bind the port ourselves to learn
  // it (usually "Address already in use": TensorFlow's server or another
  // member on this host has it).
  std::string why = "gRPC could not bind it";
  int bound = 0;
  auto probe = Listen(port, &bound);
  if (probe.ok()) {
    int fd = *probe;
    CloseFd(fd);
  } else {
    why = probe.status().message();
    if (auto colon = why.rfind(": "); colon != std::string::npos) why = why.substr(colon + 2);
  }
  for (auto& c : why) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return UnavailableError(task + ": cannot serve the agent's control service on port " +
                          std::to_string(port) + ": " + why +
                          " (RINGMASTER_PORT sets the agent's port: one for every member, or one per "
                          "member in rank order; it must differ from the TF_CONFIG port)");
}

namespace {

// A follower's half of the round: Join at the leader, retried while the
// leader is not there yet or going away, until the formation deadline.
StatusOr<pb::JoinResponse> JoinLeader(const MeshConfig& c, int data_port) {
  const std::string& leader_host = c.hosts[0];
  std::string target = leader_host + ":" + std::to_string(c.leader_port);
  if (leader_host.find(':') != std::string::npos)
    target = "[" + leader_host + "]:" + std::to_string(c.leader_port);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(1 << 20);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  auto stub = pb::Agent::NewStub(channel);
  pb::JoinRequest req;
  req.set_rank(c.rank);
  req.set_group_size(static_cast<int>(c.names.size()));
  req.set_task_name(c.names[c.rank]);
  req.set_data_port(data_port);
  req.set_process_id(c.process_id);
  const auto wall_deadline =
      std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                             std::chrono::duration<double>(std::min(c.timeout_s, 1e7)));
  pb::JoinResponse table;
  grpc::Status st;
  while (true) {
    grpc::ClientContext ctx;
    ctx.set_deadline(wall_deadline);
    ctx.set_wait_for_ready(true);
    st = stub->Join(&ctx, req, &table);
    if (st.error_code() != grpc::StatusCode::UNAVAILABLE && st.error_code() != grpc::StatusCode::CANCELLED)
      break;
    if (std::chrono::system_clock::now() + std::chrono::milliseconds(200) >= wall_deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (st.ok()) return table;
  if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    if (st.error_message().rfind("group formation", 0) == 0) return DeadlineExceededError(st.error_message());
    return DeadlineExceededError("group formation timed out after " + FormatSeconds(c.timeout_s) +
                                 ": missing " + c.names[0] + " (the leader at " + target +
                                 " did not answer)");
  }
  return Status(static_cast<StatusCode>(st.error_code()), "group formation: the leader " + c.names[0] +
                                                              " at " + target + " refused " +
                                                              c.names[c.rank] + ": " + st.error_message());
}

// The mesh: the higher rank connects, once per channel, and says who it is;
// the lower one accepts, checks, and acknowledges.
Status ConnectMesh(const MeshConfig& c, const pb::JoinResponse& table, int listen_fd, Deadline deadline,
                   std::vector<std::vector<int>>& conns) {
  const int rank = c.rank, size = static_cast<int>(c.names.size()), channels = c.channels;
  const uint64_t incarnation = table.incarnation();
  for (int p = 0; p < rank; ++p) {
    const auto& m = table.members(p);
    for (int ch = 0; ch < channels; ++ch) {
      auto fd = ConnectWithRetry(c.hosts[p], m.data_port(), deadline);
      if (!fd.ok())
        return UnavailableError("group formation: cannot reach " + c.names[p] + ": " + fd.status().message());
      conns[p][ch] = *fd;
      Hello hello{kHelloMagic,
                  kProtocolVersion,
                  incarnation,
                  static_cast<uint32_t>(rank),
                  static_cast<uint32_t>(p),
                  static_cast<uint32_t>(ch),
                  static_cast<uint32_t>(size)};
      RM_RETURN_IF_ERROR(WriteAll(*fd, &hello, sizeof hello, deadline));
    }
  }
  int expected = (size - 1 - rank) * channels;
  while (expected > 0) {
    pollfd pf{listen_fd, POLLIN, 0};
    int t = PollTimeoutMs(deadline);
    if (t == 0 || ::poll(&pf, 1, t) == 0) {
      std::string missing;
      for (int p = rank + 1; p < size; ++p) {
        if (std::find(conns[p].begin(), conns[p].end(), -1) != conns[p].end())
          missing += (missing.empty() ? "" : ", ") + c.names[p];
      }
      return DeadlineExceededError("group formation timed out after " + FormatSeconds(c.timeout_s) +
                                   ": no data connection from " + missing);
    }
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    Hello hello{};
    // A stranger gets two seconds to say hello; garbage is dropped.
    Deadline hd = std::min(deadline, DeadlineAfter(2.0));
    bool ok =
        ReadAll(fd, &hello, sizeof hello, hd).ok() && hello.magic == kHelloMagic &&
        hello.version == kProtocolVersion && hello.incarnation == incarnation &&
        hello.to_rank == static_cast<uint32_t>(rank) && hello.group_size == static_cast<uint32_t>(size) &&
        hello.from_rank > static_cast<uint32_t>(rank) && hello.from_rank < static_cast<uint32_t>(size) &&
        hello.channel < static_cast<uint32_t>(channels) && conns[hello.from_rank][hello.channel] < 0;
    uint32_t ack[2] = {kAckMagic, 0};
    if (!ok || !WriteAll(fd, ack, sizeof ack, hd).ok()) {
      ::close(fd);
      continue;
    }
    conns[hello.from_rank][hello.channel] = fd;
    --expected;
  }
  for (int p = 0; p < rank; ++p) {
    for (int ch = 0; ch < channels; ++ch) {
      uint32_t ack[2] = {0, 1};
      Status r = ReadAll(conns[p][ch], ack, sizeof ack, deadline);
      if (!r.ok() || ack[0] != kAckMagic || ack[1] != 0) {
        return UnavailableError("group formation: " + c.names[p] + " rejected our data connection" +
                                (r.ok() ? std::string() : ": " + r.message()));
      }
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<Mesh> FormMesh(const MeshConfig& c, AgentService* service) {
  const int size = static_cast<int>(c.names.size());
  Mesh mesh;
  mesh.conns.assign(size, std::vector<int>(c.channels, -1));
  if (size == 1) {
    mesh.incarnation = RandomId();
    return mesh;
  }
  const Deadline deadline = DeadlineAfter(c.timeout_s);
  int data_port = 0;
  auto lfd = Listen(0, &data_port);
  if (!lfd.ok()) return lfd.status();
  int listen_fd = *lfd;
  StatusOr<pb::JoinResponse> table = InternalError("no table");
  if (c.rank == 0) {
    pb::Member self;
    self.set_rank(0);
    self.set_task_name(c.names[0]);
    self.set_data_host(c.hosts[0]);
    self.set_data_port(data_port);
    self.set_process_id(c.process_id);
    table = service->LeaderRendezvous(self, deadline, c.timeout_s);
  } else {
    table = JoinLeader(c, data_port);
  }
  Status st = table.status();
  if (st.ok() && table->members_size() != size) {
    st = InternalError("group formation: the leader sent " + std::to_string(table->members_size()) +
                       " members, expected " + std::to_string(size));
  }
  if (st.ok()) st = ConnectMesh(c, *table, listen_fd, deadline, mesh.conns);
  CloseFd(listen_fd);
  if (!st.ok()) {
    for (auto& v : mesh.conns)
      for (int& fd : v) CloseFd(fd);
    return st;
  }
  mesh.incarnation = table->incarnation();
  for (auto& v : mesh.conns)
    for (int fd : v)
      if (fd >= 0) TuneDataSocket(fd);
  return mesh;
}

}  // namespace ringmaster::internal
