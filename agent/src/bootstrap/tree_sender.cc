#include "bootstrap/tree_sender.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/formation_tree.h"
#include "bootstrap/proto_forms.h"
#include "ringmaster/agent.grpc.pb.h"

namespace ringmaster::internal {

namespace pb = ringmaster::agent::v1;

namespace {

// A gRPC target for a host as a table lists it: an address, or a name.
std::string TargetOf(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "ipv6:[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

}  // namespace

void SendDownTree(const Table& table, const std::string& proof, int place, Deadline deadline) {
  const std::vector<int> children = TreeChildren(place, static_cast<int>(table.members.size()));
  if (children.empty()) return;
  pb::TableDelivery req;
  ToProto(table, req.mutable_table());
  req.set_proof(proof);
  const double left = std::min(5.0, std::chrono::duration<double>(deadline - Clock::now()).count());
  const auto by =
      std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                             std::chrono::duration<double>(std::max(0.0, left)));
  struct Call {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pb::Agent::Stub> stub;
    grpc::ClientContext ctx;
    pb::Delivered resp;
  };
  std::mutex mu;
  std::condition_variable cv;
  size_t answered = 0;
  std::vector<std::unique_ptr<Call>> calls;
  for (int child : children) {
    const MemberEntry& m = table.members[child];
    auto call = std::make_unique<Call>();
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    call->channel = grpc::CreateCustomChannel(TargetOf(m.data_host, m.control_port),
                                              grpc::InsecureChannelCredentials(), args);
    call->stub = pb::Agent::NewStub(call->channel);
    call->ctx.set_deadline(by);
    call->ctx.set_wait_for_ready(true);  // its server is up before it joins; a connection may take a moment
    call->stub->async()->Deliver(&call->ctx, &req, &call->resp, [&](grpc::Status) {
      std::lock_guard<std::mutex> lock(mu);
      ++answered;
      cv.notify_all();
    });
    calls.push_back(std::move(call));
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return answered == calls.size(); });
}

}  // namespace ringmaster::internal
