#include "bootstrap/control_server.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "transport/net.h"

namespace ringmaster::internal {

StatusOr<std::unique_ptr<grpc::Server>> ServeControl(
    AgentService* service, int port, const std::string& task, int max_threads, int* bound_port,
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors) {
  grpc::ServerBuilder builder;
  if (!interceptors.empty()) builder.experimental().SetInterceptorCreators(std::move(interceptors));
  int selected = 0;
  builder.AddListeningPort("[::]:" + std::to_string(port), grpc::InsecureServerCredentials(), &selected);
  builder.RegisterService(service);
  // A table sent down the formation tree (Deliver) is the largest message:
  // about 60 bytes a member.
  builder.SetMaxReceiveMessageSize(1 << 20);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Bounded under abuse: a connection must finish HTTP/2's handshake within
  // 2 s and is closed after 5 s without a call; all of it within 32 MiB and
  // a fixed number of threads: a Join waiting for its round holds none
  // (FormationHub::FollowerJoinLater), so the number does not grow with N.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 2000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 5000);
  grpc::ResourceQuota quota("ringmaster-agent");
  quota.Resize(32 << 20);
  quota.SetMaxThreads(std::max(2, max_threads));
  builder.SetResourceQuota(quota);
  auto server = builder.BuildAndStart();
  if (server && selected != 0) {
    if (bound_port) *bound_port = selected;
    return server;
  }
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

}  // namespace ringmaster::internal
