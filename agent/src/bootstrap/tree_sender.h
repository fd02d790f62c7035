// Sending a round's table down the formation tree (formation_tree.h) over
// gRPC: the Deliver calls of the leader (control_service.h, when its round
// forms) and of every member that took the table and has children
// (join_client.h). A client of the control service, below both.
#pragma once

#include <string>

#include "bootstrap/table.h"
#include "clock.h"

namespace ringmaster::internal {

// Sends `table` with the leader's `proof` to the children of `place` in the
// formation tree, all at once, each call bounded by 5 s and `deadline`. A
// child not reached is left to fail at its own deadline, naming its parent.
void SendDownTree(const Table& table, const std::string& proof, int place, Deadline deadline);

}  // namespace ringmaster::internal
