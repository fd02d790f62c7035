// The gRPC server of the control service (control_service.h), bounded for
// the group it serves.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/control_service.h"

namespace grpc {
class Server;
}

namespace ringmaster::internal {

// Serves `service` on `port` (0: the kernel picks), bounded for a group of
// `members` (memory, threads, and strangers' idle or half-open connections
// closed within seconds). A port that cannot be bound fails with its cause
// ("address already in use") and names `task`.
StatusOr<std::unique_ptr<grpc::Server>> ServeControl(AgentService* service, int port, const std::string& task,
                                                     int members);

}  // namespace ringmaster::internal
