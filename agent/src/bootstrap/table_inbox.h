// Where a member keeps the tables sent to it down the formation tree
// (formation_tree.h): its control service takes them (control_service.h
// AgentService) and its follower's Join waits on them (join_client.h
// GrpcJoinBootstrap). Below both, so neither includes the other.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/table.h"
#include "clock.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

class TableInbox {
 public:
  struct Delivery {
    Table table;
    std::string proof;  // the leader's ForwardedTableProof
  };
  virtual ~TableInbox() = default;
  // The table of `incarnation` once delivered (it may have come already).
  virtual StatusOr<Delivery> AwaitTable(uint64_t incarnation, Deadline deadline) = 0;
};

}  // namespace ringmaster::internal
