#include "bootstrap/agent_bootstrap.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "bootstrap/control_server.h"
#include "bootstrap/control_service.h"
#include "bootstrap/join_client.h"

namespace ringmaster::internal {
namespace {

class AgentBootstrap final : public Bootstrap {
 public:
  explicit AgentBootstrap(AgentBootstrapConfig config) : c_(std::move(config)) {}
  ~AgentBootstrap() override {
    if (service_) service_->Shutdown();
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      // gRPC's own threads may still touch the server after Shutdown
      // returns; Wait joins them, so the server is not freed under them
      // (ThreadSanitizer saw it, under 800 strangers' connections).
      server_->Wait();
    }
  }

  Status Serve() {
    if (c_.names.size() < 2) return OkStatus();  // a group of one forms alone
    service_ =
        std::make_unique<AgentService>(c_.rank, c_.names, c_.timeout_s, c_.key, c_.refusals, c_.elastic);
    auto server =
        ServeControl(service_.get(), c_.own_port, c_.names[c_.rank], kControlThreads, &control_port_);
    if (!server.ok()) return server.status();
    server_ = std::move(*server);
    return OkStatus();
  }

  StatusOr<Table> Exchange(const MemberEntry& self, Deadline deadline) override {
    if (!service_) return InternalError("bootstrap: a group of one has no round to join");
    if (c_.rank == 0) return LeaderBootstrap(service_.get(), c_.timeout_s).Exchange(self, deadline);
    return GrpcJoinBootstrap(c_.names, c_.hosts[0], c_.leader_port, c_.key, c_.timeout_s, ResolveWithSystem,
                             service_.get(), control_port_)
        .Exchange(self, deadline);
  }
  bool Superseded(const Table& table) override {
    return c_.rank == 0 && service_ && service_->Superseded(table);
  }
  int Waiting() override { return c_.rank == 0 && service_ ? service_->Joiners() : 0; }
  void Publish(uint64_t incarnation, const Status& health) override {
    if (service_) service_->SetState(incarnation, health);
  }

 private:
  const AgentBootstrapConfig c_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  int control_port_ = 0;  // where service_ serves
};

}  // namespace

StatusOr<std::unique_ptr<Bootstrap>> StartAgentBootstrap(const AgentBootstrapConfig& config) {
  auto b = std::make_unique<AgentBootstrap>(config);
  RM_RETURN_IF_ERROR(b->Serve());
  return std::unique_ptr<Bootstrap>(std::move(b));
}

}  // namespace ringmaster::internal
