#include "bootstrap/join_client.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>

#include <algorithm>
#include <memory>

#include "bootstrap/follower.h"
#include "bootstrap/formation_tree.h"
#include "bootstrap/join_checks.h"
#include "bootstrap/join_rules.h"
#include "bootstrap/proto_forms.h"
#include "bootstrap/tree_sender.h"
#include "ringmaster/agent.grpc.pb.h"

namespace ringmaster::internal {

namespace pb = ringmaster::agent::v1;

namespace {

Status FromGrpc(const grpc::Status& st) {
  return Status(static_cast<StatusCode>(st.error_code()), st.error_message());
}

// A leader not yet connected gets this long to accept a connection before
// its channel is dropped and its name looked up anew: when the leader's pod
// is replaced, its name gives the old pod's address for seconds.
constexpr auto kConnectWithin = std::chrono::seconds(5);

// Where to reach the leader: a gRPC target, looked up anew on each call.
// A host name is looked up by us, not by gRPC: gRPC keeps a channel's answer
// for up to 30 s (a whole formation), and its resolver (c-ares) was seen in
// pods to stop answering after the leader's name first failed to resolve.
// The system's resolver answers each attempt afresh, and its words say why a
// name does not resolve (in a cluster: not yet in the Service's records).
class LeaderTarget {
 public:
  LeaderTarget(std::string host, int port, HostResolver resolve)
      : host_(std::move(host)), port_(port), resolve_(std::move(resolve)) {}
  StatusOr<std::string> Now() {
    if (host_.find("://") != std::string::npos) return host_ + ":" + std::to_string(port_);
    auto addrs = resolve_(host_);
    if (!addrs.ok()) return UnavailableError(addrs.status().message());
    if (addrs->empty()) return UnavailableError("its name " + host_ + " has no address");
    // One address per connection, the next one each time: one that cannot be
    // reached (an IPv6 address without a route, say) is not tried forever.
    const std::string& a = (*addrs)[tries_++ % addrs->size()];
    return a.find(':') == std::string::npos ? "ipv4:" + a + ":" + std::to_string(port_)
                                            : "ipv6:[" + a + "]:" + std::to_string(port_);
  }

 private:
  std::string host_;
  int port_;
  HostResolver resolve_;
  size_t tries_ = 0;
};

// The two calls, each bounded by the formation's deadline. The channel is
// made on first use and dropped when the leader cannot be reached through
// it (its name does not resolve, a refused connection, none within
// kConnectWithin), so the next attempt looks the leader up again. No
// wait_for_ready: a failure to reach the leader comes back at once, with
// gRPC's words for why.
class GrpcLeaderLink final : public LeaderLink {
 public:
  GrpcLeaderLink(LeaderTarget target, std::chrono::system_clock::time_point deadline)
      : target_(std::move(target)), deadline_(deadline) {}
  Status Challenge(FormationState::ChallengeAnswer* out) override {
    if (!stub_) RM_RETURN_IF_ERROR(Connect());
    // A connected leader answers at once however loaded it is; one not yet
    // connected gets kConnectWithin.
    const bool connected = channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY;
    const auto by =
        connected ? deadline_ : std::min(deadline_, std::chrono::system_clock::now() + kConnectWithin);
    pb::ChallengeResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(by);
    grpc::Status st = stub_->Challenge(&ctx, pb::ChallengeRequest(), &resp);
    if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && by < deadline_) {
      // Our own bound, not the formation's: asked again (join_rules.h).
      if (channel_->GetState(false) != GRPC_CHANNEL_READY) {
        Drop();
        return UnavailableError("no connection to it within " +
                                std::to_string(std::chrono::seconds(kConnectWithin).count()) + " s");
      }
      return UnavailableError("connected, but its challenge took over " +
                              std::to_string(std::chrono::seconds(kConnectWithin).count()) + " s");
    }
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE) Drop();
    out->key_required = resp.key_required();
    out->server_nonce = resp.server_nonce();
    return FromGrpc(st);
  }
  Status Join(const JoinClaim& claim, Table* table, std::string* proof) override {
    pb::JoinRequest req;
    ToProto(claim, &req);
    pb::JoinResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline_);
    grpc::Status st = stub_->Join(&ctx, req, &resp);
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
      Drop();
      return FromGrpc(st);
    }
    *table = TableOf(resp);
    *proof = resp.proof();
    forwarded_ = st.ok() && resp.forwarded();
    parent_ = resp.parent();
    hops_ = std::max(1, resp.hops());
    answered_from_ = st.ok() ? PeerHost(ctx.peer()) : "";
    return FromGrpc(st);
  }
  // After a Challenge: the table of `ask`'s round, asked of the leader
  // (answered at once), bounded by kConnectWithin.
  Status FetchTable(const TableAsk& ask, pb::TableAnswer* out) {
    if (!stub_) RM_RETURN_IF_ERROR(Connect());
    pb::TableRequest req;
    ToProto(ask, &req);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::min(deadline_, std::chrono::system_clock::now() + kConnectWithin));
    grpc::Status st = stub_->FetchTable(&ctx, req, out);
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE) Drop();
    return FromGrpc(st);
  }
  std::string AnsweredFrom() const override { return answered_from_; }
  // The last answer's table comes down the formation tree, from `parent`,
  // in `hops` hops.
  bool forwarded() const { return forwarded_; }
  int parent() const { return parent_; }
  int hops() const { return hops_; }

 private:
  Status Connect() {
    auto target = target_.Now();
    if (!target.ok()) return target.status();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(1 << 20);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // A channel of its own: a new one must not reuse a shared connection
    // (or its backoff) to the address the last one resolved.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel_ = grpc::CreateCustomChannel(*target, grpc::InsecureChannelCredentials(), args);
    stub_ = pb::Agent::NewStub(channel_);
    return OkStatus();
  }
  void Drop() {
    stub_.reset();
    channel_.reset();
  }
  LeaderTarget target_;
  std::chrono::system_clock::time_point deadline_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Agent::Stub> stub_;
  std::string answered_from_;
  bool forwarded_ = false;
  int parent_ = 0;
  int hops_ = 1;
};

// The table of `incarnation` asked of the leader (FetchTable) with a fresh
// challenge: OK with the table and the leader's forwarding proof; Aborted
// when the round was left; any other error: ask again later.
StatusOr<TableInbox::Delivery> FetchFromLeader(GrpcLeaderLink& link, const JoinParties& p, const JobKey& key,
                                               int rank, uint64_t incarnation) {
  FormationState::ChallengeAnswer challenge;
  RM_RETURN_IF_ERROR(link.Challenge(&challenge));
  TableAsk ask{incarnation, rank, p.me};
  if (!key.empty()) {
    if (!challenge.key_required) return UnavailableError("the leader at " + p.target + " has no job key");
    Nonce mine = FreshNonce();
    ask.server_nonce = challenge.server_nonce;
    ask.client_nonce.assign(mine.data(), mine.size());
    Mac m = TableAskProof(key, ask);
    ask.proof.assign(m.data(), m.size());
  }
  pb::TableAnswer answer;
  RM_RETURN_IF_ERROR(link.FetchTable(ask, &answer));
  auto table = TakeFetchedTable(p, key, ask, static_cast<FetchedRound>(answer.round()), answer.why(),
                                TableOf(answer.table().table()), answer.table().proof(), answer.proof());
  if (!table.ok()) return table.status();
  return TableInbox::Delivery{std::move(*table), answer.table().proof()};
}

}  // namespace

StatusOr<std::vector<std::string>> ResolveWithSystem(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int g = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (g != 0) return UnavailableError("its name " + host + " did not resolve: " + ::gai_strerror(g));
  std::vector<std::string> out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    const void* where =
        a->ai_family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
        ::inet_ntop(a->ai_family, where, buf, sizeof buf))
      out.emplace_back(buf);
  }
  ::freeaddrinfo(res);
  return out;
}

StatusOr<Table> GrpcJoinBootstrap::Exchange(const MemberEntry& self, Deadline deadline) {
  JoinParties p;
  p.me = names_[self.rank];
  p.leader = names_[0];
  p.target = leader_host_ + ":" + std::to_string(leader_port_);
  // An IPv6 literal goes in brackets; a full gRPC target ("dns://SERVER/NAME")
  // is taken as it is.
  if (leader_host_.find(':') != std::string::npos && leader_host_.find("://") == std::string::npos)
    p.target = "[" + leader_host_ + "]:" + std::to_string(leader_port_);
  p.timeout_s = timeout_s_;
  // The calls' deadline on gRPC's clock (at most 1e7 s away).
  const double left = deadline == NoDeadline()
                          ? 1e7
                          : std::min(1e7, std::chrono::duration<double>(deadline - Clock::now()).count());
  const auto wall_left =
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(left));
  GrpcLeaderLink link(LeaderTarget(leader_host_, leader_port_, resolve_),
                      std::chrono::system_clock::now() + wall_left);
  JoinClaim claim;
  claim.rank = self.rank;
  claim.group_size = static_cast<int>(names_.size());
  claim.task_name = p.me;
  claim.data_port = self.data_port;
  claim.process_id = self.process_id;
  claim.control_port = inbox_ ? control_port_ : 0;
  const Deadline until = Clock::now() + std::chrono::duration_cast<Clock::duration>(wall_left);
  auto table = JoinThrough(link, p, *key_, std::move(claim), until);
  if (!table.ok() || !link.forwarded() || !inbox_) return table;
  // The answer proved the incarnation fresh; the table itself comes from our
  // parent in the formation tree, proved by the leader, and goes on to our
  // children. Not here after fetch_after_s_ per hop (our parent may have
  // died after its Join): asked of the leader, and again every
  // fetch_after_s_ while it cannot give it.
  const int parent = link.parent();
  auto secs = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  bool fetch = fetch_after_s_ > 0;
  Deadline next_fetch = fetch ? std::min(until, Clock::now() + secs(fetch_after_s_ * link.hops())) : until;
  Status fetch_failed;  // why the leader's last answer did not give the table
  StatusOr<TableInbox::Delivery> got = DeadlineExceededError("no table");
  while (true) {
    got = inbox_->AwaitTable(table->incarnation, next_fetch);
    if (got.ok() || got.status().code() == StatusCode::kCancelled) break;
    if (!fetch || Clock::now() >= until) break;
    got = FetchFromLeader(link, p, *key_, self.rank, table->incarnation);
    if (got.ok()) break;
    if (got.status().code() == StatusCode::kAborted) return got.status();  // the next round (mesh.cc)
    // Kept: the leader's words, not an ask cut short by the deadline.
    if (fetch_failed.ok() || got.status().code() != StatusCode::kDeadlineExceeded)
      fetch_failed = got.status();
    fetch = got.status().code() != StatusCode::kUnimplemented;  // a leader without FetchTable
    next_fetch = fetch ? std::min(until, Clock::now() + secs(fetch_after_s_)) : until;
  }
  if (!got.ok()) {
    if (got.status().code() == StatusCode::kCancelled) return got.status();
    const std::string from = parent >= 0 && parent < static_cast<int>(names_.size())
                                 ? names_[parent]
                                 : "rank " + std::to_string(parent);
    return DeadlineExceededError(
        "group formation timed out: the table of this round never came from " + from +
        " (its parent in the formation tree, under the leader " + names_[0] + ")" +
        (fetch_failed.ok() ? "" : "; asked for it, the leader did not give it: " + fetch_failed.message()));
  }
  Table full = std::move(got->table);
  if (const int place = PlaceOf(full, self.rank); place > 0) SendDownTree(full, got->proof, place, until);
  UseLeaderAddress(full,
                   link.AnsweredFrom());  // after sending it on: the proof covers it as the leader sent it
  return full;
}

}  // namespace ringmaster::internal
