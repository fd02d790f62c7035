#include "rendezvous.h"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <thread>

#include "handshake.h"
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

namespace {

// "ipv4:127.0.0.1:5555" / "ipv6:[::1]:5555" -> "127.0.0.1" / "::1".
std::string PeerHost(const std::string& peer) {
  std::string host;
  if (auto c = peer.find(':'); c != std::string::npos) {
    host = peer.substr(c + 1);
    if (auto last = host.rfind(':'); last != std::string::npos) host = host.substr(0, last);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  }
  return host;
}

grpc::Status ToGrpc(const Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

}  // namespace

Status CheckJoin(const pb::JoinRequest& req, const std::vector<std::string>& names, const JobKey& key,
                 NonceBook& nonces, Clock::time_point now) {
  const int n = static_cast<int>(names.size());
  if (req.group_size() != n) {
    return InvalidArgumentError("group_size " + std::to_string(req.group_size()) +
                                " != " + std::to_string(n));
  }
  if (req.rank() <= 0 || req.rank() >= n) {
    return InvalidArgumentError("rank " + std::to_string(req.rank()) + " out of range");
  }
  if (req.task_name() != names[req.rank()]) {
    return InvalidArgumentError("rank " + std::to_string(req.rank()) + " is " + names[req.rank()] +
                                ", not '" + req.task_name().substr(0, 200) + "'");
  }
  if (req.data_port() <= 0 || req.data_port() > 65535) return InvalidArgumentError("data_port out of range");
  if (key.empty()) return OkStatus();
  if (req.proof().empty()) {
    return UnauthenticatedError(req.task_name() + " has no job key and the leader requires one");
  }
  if (!nonces.Redeem(req.server_nonce(), now)) {
    return UnauthenticatedError("an unknown or expired challenge (ask again)");
  }
  if (req.client_nonce().size() != kNonceBytes ||
      !key.Verify(req.proof(), "join",
                  {req.server_nonce(), req.client_nonce(), U64(static_cast<uint64_t>(req.rank())),
                   U64(static_cast<uint64_t>(req.group_size())), req.task_name(),
                   U64(static_cast<uint64_t>(req.data_port())), U64(req.process_id())})) {
    return UnauthenticatedError("the proof of " + req.task_name().substr(0, 200) +
                                " does not match the leader's job key (a different key)");
  }
  return OkStatus();
}

Mac TableProof(const JobKey& key, const pb::JoinRequest& req, const pb::JoinResponse& table) {
  std::string members;
  for (const auto& m : table.members()) {
    members += U64(static_cast<uint64_t>(m.rank())) + U64(m.task_name().size()) + m.task_name() +
               U64(m.data_host().size()) + m.data_host() + U64(static_cast<uint64_t>(m.data_port())) +
               U64(m.process_id());
  }
  return key.Sign("join-ok", {req.server_nonce(), req.client_nonce(), U64(table.incarnation()), members});
}

Mac StatusProof(const JobKey& key, std::string_view server_nonce, std::string_view client_nonce) {
  return key.Sign("status", {server_nonce, client_nonce});
}

grpc::Status AgentService::Refuse(grpc::ServerContext* ctx, const Status& why) {
  refusals_->Refuse(PeerHost(ctx->peer()), why.message());
  return ToGrpc(why);
}

grpc::Status AgentService::Challenge(grpc::ServerContext*, const pb::ChallengeRequest*,
                                     pb::ChallengeResponse* resp) {
  resp->set_key_required(!key_->empty());
  if (!key_->empty()) {
    Nonce n = nonces_.Issue(Clock::now());
    resp->set_server_nonce(n.data(), n.size());
  }
  return grpc::Status::OK;
}

grpc::Status AgentService::Join(grpc::ServerContext* ctx, const pb::JoinRequest* req,
                                pb::JoinResponse* resp) {
  if (rank_ != 0) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, names_[rank_] + " is not the leader (rank 0)");
  }
  // Nothing below runs, and no state changes, for a request that fails here.
  if (Status st = CheckJoin(*req, names_, *key_, nonces_, Clock::now()); !st.ok()) {
    return st.code() == StatusCode::kUnauthenticated ? Refuse(ctx, st) : ToGrpc(st);
  }
  const std::string host = PeerHost(ctx->peer());
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
    if (!key_->empty()) {
      Mac proof = TableProof(*key_, *req, *resp);
      resp->set_proof(proof.data(), proof.size());
    }
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

grpc::Status AgentService::GetStatus(grpc::ServerContext* ctx, const pb::StatusRequest* req,
                                     pb::StatusResponse* resp) {
  if (!key_->empty()) {
    // Nothing, not even our name, to a caller that does not prove the key.
    const bool ok = nonces_.Redeem(req->server_nonce(), Clock::now()) &&
                    key_->Verify(req->proof(), "status", {req->server_nonce(), req->client_nonce()});
    if (!ok) return Refuse(ctx, UnauthenticatedError("GetStatus needs the job key"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  resp->set_refused(refusals_->count());
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

StatusOr<std::unique_ptr<grpc::Server>> ServeControl(AgentService* service, int port, const std::string& task,
                                                     int members) {
  grpc::ServerBuilder builder;
  int selected = 0;
  builder.AddListeningPort("[::]:" + std::to_string(port), grpc::InsecureServerCredentials(), &selected);
  builder.RegisterService(service);
  builder.SetMaxReceiveMessageSize(64 * 1024);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Bounded under abuse: a connection must finish HTTP/2's handshake within
  // 2 s and is closed after 5 s without a call; all of it within 32 MiB and
  // enough threads for every member's Join (each waits for the round) plus
  // a few callers.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 2000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 5000);
  grpc::ResourceQuota quota("ringmaster-agent");
  quota.Resize(32 << 20);
  quota.SetMaxThreads(std::max(16, 2 * members + 8));
  builder.SetResourceQuota(quota);
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
  const std::string& me = c.names[c.rank];
  const std::string& leader = c.names[0];
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
  req.set_task_name(me);
  req.set_data_port(data_port);
  req.set_process_id(c.process_id);
  const auto wall_deadline =
      std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                             std::chrono::duration<double>(std::min(c.timeout_s, 1e7)));
  pb::JoinResponse table;
  grpc::Status st;
  while (true) {
    // A fresh challenge per attempt; then Join, proving the key over it.
    pb::ChallengeResponse challenge;
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(wall_deadline);
      ctx.set_wait_for_ready(true);
      st = stub->Challenge(&ctx, pb::ChallengeRequest(), &challenge);
    }
    if (st.ok()) {
      if (challenge.key_required() && c.key->empty()) {
        return UnauthenticatedError("group formation: the leader " + leader + " requires the job key and " +
                                    me + " has none (RINGMASTER_JOB_KEY_FILE is not set)");
      }
      if (!challenge.key_required() && !c.key->empty()) {
        return UnauthenticatedError("group formation: the leader " + leader + " has no job key but " + me +
                                    " has one (RINGMASTER_JOB_KEY_FILE): the members were started with "
                                    "different keys");
      }
      if (!c.key->empty()) {
        Nonce mine = FreshNonce();
        req.set_server_nonce(challenge.server_nonce());
        req.set_client_nonce(mine.data(), mine.size());
        Mac proof = c.key->Sign(
            "join", {req.server_nonce(), req.client_nonce(), U64(static_cast<uint64_t>(c.rank)),
                     U64(c.names.size()), me, U64(static_cast<uint64_t>(data_port)), U64(c.process_id)});
        req.set_proof(proof.data(), proof.size());
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(wall_deadline);
      ctx.set_wait_for_ready(true);
      st = stub->Join(&ctx, req, &table);
    }
    // A leader that is going away (a restart of the group), or whose
    // challenge expired under a flood, is asked again until the deadline.
    const bool again = st.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       st.error_code() == grpc::StatusCode::CANCELLED ||
                       (st.error_code() == grpc::StatusCode::UNAUTHENTICATED &&
                        st.error_message().find("challenge") != std::string::npos);
    if (!again) break;
    if (std::chrono::system_clock::now() + std::chrono::milliseconds(200) >= wall_deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (st.ok()) {
    if (!c.key->empty() && !MacEquals(TableProof(*c.key, req, table), table.proof())) {
      return UnauthenticatedError("group formation: the answer from " + target +
                                  " does not prove the job key: "
                                  "it is not the leader of this job");
    }
    return table;
  }
  if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    if (st.error_message().rfind("group formation", 0) == 0) return DeadlineExceededError(st.error_message());
    return DeadlineExceededError("group formation timed out after " + FormatSeconds(c.timeout_s) +
                                 ": missing " + leader + " (the leader at " + target + " did not answer)");
  }
  return Status(static_cast<StatusCode>(st.error_code()), "group formation: the leader " + leader + " at " +
                                                              target + " refused " + me + ": " +
                                                              st.error_message());
}

// Our side of one connection to a lower rank: Hello, check its Challenge,
// Proof, Ack (handshake.h).
StatusOr<int> ConnectTo(const MeshConfig& c, const MeshView& view, const pb::JoinResponse& table, int p,
                        int ch, Deadline deadline) {
  const std::string& peer = c.names[p];
  auto fd = ConnectWithRetry(c.hosts[p], table.members(p).data_port(), deadline);
  if (!fd.ok())
    return UnavailableError("group formation: cannot reach " + peer + ": " + fd.status().message());
  int sock = *fd;
  const Hello hello = MakeHello(view, p, ch, FreshNonce());
  Challenge challenge{};
  Proof proof{};
  Ack ack{};
  Status st = WriteAll(sock, &hello, sizeof hello, deadline);
  if (st.ok()) st = ReadAll(sock, &challenge, sizeof challenge, deadline);
  if (st.ok()) st = CheckChallenge(view, hello, challenge, peer, &proof);
  if (st.ok()) st = WriteAll(sock, &proof, sizeof proof, deadline);
  if (st.ok()) st = ReadAll(sock, &ack, sizeof ack, deadline);
  if (st.ok() && (ack.magic != kAckMagic || ack.code != 0)) st = UnauthenticatedError("");
  if (!st.ok()) {
    CloseFd(sock);
    if (st.code() == StatusCode::kUnauthenticated && st.message().empty()) {
      return UnauthenticatedError("group formation: " + peer +
                                  " did not accept our proof of the job key (the "
                                  "members were started with different keys)");
    }
    if (st.code() == StatusCode::kUnauthenticated)
      return UnauthenticatedError("group formation: " + st.message());
    return UnavailableError("group formation: " + peer + " rejected our data connection: " + st.message());
  }
  return sock;
}

// One stranger's connection while it says who it is.
struct PendingHandshake {
  int fd;
  std::string host;
  Deadline until;
  HandshakeAcceptor hs;
};

// The mesh: the higher rank connects, once per channel, and authenticates;
// the lower one accepts, handling every pending handshake at once (a slow or
// hostile connection holds up nobody else).
Status ConnectMesh(const MeshConfig& c, const pb::JoinResponse& table, int listen_fd, Deadline deadline,
                   std::vector<std::vector<int>>& conns) {
  const int rank = c.rank, size = static_cast<int>(c.names.size()), channels = c.channels;
  const MeshView view{c.key, table.incarnation(), rank, size, channels};
  for (int p = 0; p < rank; ++p) {
    for (int ch = 0; ch < channels; ++ch) {
      auto fd = ConnectTo(c, view, table, p, ch, deadline);
      if (!fd.ok()) return fd.status();
      conns[p][ch] = *fd;
    }
  }
  int expected = (size - 1 - rank) * channels;
  std::vector<PendingHandshake> pending;
  auto drop = [&](size_t i, const std::string& why) {
    if (!why.empty()) c.refusals->Refuse(pending[i].host, why);
    CloseFd(pending[i].fd);
    pending.erase(pending.begin() + static_cast<long>(i));
  };
  while (expected > 0) {
    const auto now = Clock::now();
    for (size_t i = pending.size(); i-- > 0;) {
      if (now >= pending[i].until)
        drop(i, "no complete handshake within " + FormatSeconds(kHandshakeSeconds));
    }
    if (now >= deadline) {
      std::string missing;
      for (int p = rank + 1; p < size; ++p) {
        if (std::find(conns[p].begin(), conns[p].end(), -1) != conns[p].end())
          missing += (missing.empty() ? "" : ", ") + c.names[p];
      }
      for (size_t i = pending.size(); i-- > 0;) drop(i, "");
      return DeadlineExceededError("group formation timed out after " + FormatSeconds(c.timeout_s) +
                                   ": no data connection from " + missing);
    }
    std::vector<pollfd> pfds;
    Deadline wake = deadline;
    for (const auto& h : pending) {
      pfds.push_back({h.fd, POLLIN, 0});
      wake = std::min(wake, h.until);
    }
    const bool room = pending.size() < kMaxPendingHandshakes;  // else new ones wait in the backlog
    if (room) pfds.push_back({listen_fd, POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), PollTimeoutMs(wake)) <= 0) continue;
    // Handshakes first (in reverse, so erasing keeps the indices below valid).
    for (size_t i = pending.size(); i-- > 0;) {
      if (!pfds[i].revents) continue;
      auto& h = pending[i];
      char buf[sizeof(Hello)];
      ssize_t r = ::recv(h.fd, buf, std::min(sizeof buf, h.hs.Need()), 0);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        drop(i, "closed during the handshake");
        continue;
      }
      if (r < 0) continue;
      auto step = h.hs.Feed(std::string_view(buf, static_cast<size_t>(r)));
      if (step.kind == HandshakeAcceptor::Kind::kNeedMore) continue;
      if (step.kind == HandshakeAcceptor::Kind::kAccepted && conns[h.hs.from()][h.hs.channel()] >= 0) {
        step = {HandshakeAcceptor::Kind::kRejected, "",
                "a second connection for the same member and channel"};
      }
      const Deadline write_by = std::min(h.until, deadline);
      if (!step.reply.empty() && !WriteAll(h.fd, step.reply.data(), step.reply.size(), write_by).ok()) {
        drop(i, step.kind == HandshakeAcceptor::Kind::kRejected ? step.why : "closed during the handshake");
        continue;
      }
      if (step.kind == HandshakeAcceptor::Kind::kRejected) {
        drop(i, step.why);
      } else if (step.kind == HandshakeAcceptor::Kind::kAccepted) {
        conns[h.hs.from()][h.hs.channel()] = h.fd;
        pending.erase(pending.begin() + static_cast<long>(i));
        --expected;
      }
    }
    if (room && pfds.back().revents) {
      while (pending.size() < kMaxPendingHandshakes) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        pending.push_back(
            {fd, AddressText(addr), DeadlineAfter(kHandshakeSeconds), HandshakeAcceptor(view, FreshNonce())});
      }
    }
  }
  for (size_t i = pending.size(); i-- > 0;) drop(i, "");
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
