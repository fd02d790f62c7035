// The gRPC server of the control service (control_service.h), bounded for
// the group it serves.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/control_service.h"

namespace grpc {
class Server;
}

namespace ringmaster::internal {

// The server threads the control service may use, whatever the group's size:
// its methods are callbacks (control_service.h), none holds a thread while
// it waits, so a Join waiting for its round costs no thread.
constexpr int kControlThreads = 16;

// Serves `service` on `port` (0: the kernel picks), bounded for a group of
// any size (memory, `max_threads` threads, and strangers' idle or half-open
// connections closed within seconds). A port that cannot be bound fails
// with its cause ("address already in use") and names `task`. `bound_port`
// (when not null): the port it serves on. `interceptors`: gRPC's server
// interceptors, run around every call (the agent runs none; what a test
// observes of the calls, tests/agent/control_calls.h).
StatusOr<std::unique_ptr<grpc::Server>> ServeControl(
    AgentService* service, int port, const std::string& task, int max_threads = kControlThreads,
    int* bound_port = nullptr,
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors = {});

}  // namespace ringmaster::internal
