// The agent's bootstrap: every member of a group of more than one serves the
// control service over gRPC (control_server.h); the leader's entry goes into
// its own service's round (LeaderBootstrap), a follower's over gRPC to the
// leader (GrpcJoinBootstrap). What a communicator gets unless it is given
// another (an in-process one in tests).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/formation_state.h"
#include "transport/auth.h"

namespace ringmaster::internal {

struct AgentBootstrapConfig {
  int rank = 0;
  std::vector<std::string> names, hosts;  // TF_CONFIG's members, rank order
  int own_port = 0;                       // this member's control port (0: the kernel picks)
  int leader_port = 0;                    // the leader's
  double timeout_s = 300;                 // the formation timeout
  ElasticSize elastic;
  const JobKey* key = nullptr;     // never null; empty: no key. Outlives the bootstrap
  RefusalLog* refusals = nullptr;  // never null. Outlives the bootstrap
};

// Starts serving (a group of more than one); a port that cannot be bound
// fails naming it. The server stops when the bootstrap is destroyed.
StatusOr<std::unique_ptr<Bootstrap>> StartAgentBootstrap(const AgentBootstrapConfig& config);

}  // namespace ringmaster::internal
