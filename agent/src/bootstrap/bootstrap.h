// The bootstrap seam: how a member learns the group's table. It offers its
// own entry (where its data listener is) and gets every member's, with the
// formation's incarnation, or an error that names who is missing; the data
// mesh (mesh.h) is built from the table. Gloo's Store and NCCL's bootstrap
// functions play this part there.
//
// The decisions live in pure code (formation_state.h on the leader,
// join_rules.h on a follower, mesh_ledger.h for the mesh); the
// implementations are shells: the agent's (agent_bootstrap.h: the leader's
// own entry into its control service, a follower's gRPC client), and for
// tests an in-process one (tests/agent/local_bootstrap.h). The communicator
// is given one, so a group forms in process as it does over gRPC.
#pragma once

#include <cstdint>

#include "bootstrap/table.h"
#include "clock.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  // Blocks until every member offered its entry, or the deadline.
  virtual StatusOr<Table> Exchange(const MemberEntry& self, Deadline deadline) = 0;
  // Whether the round that handed out `table` was overtaken while its mesh
  // forms (FormationState::Superseded): a member of it is already waiting
  // in the next round. Only the leader's bootstrap can tell; the others
  // learn it from the leader closing its connections (mesh.cc).
  virtual bool Superseded(const Table& /*table*/) { return false; }
  // The leader's: members waiting to join the next round (left out of this
  // one, or restarted: FormationState::Joiners); 0 elsewhere.
  virtual int Waiting() { return 0; }
  // What this member says of itself to whoever asks (the control service's
  // GetStatus): the formation it is in and its health.
  virtual void Publish(uint64_t /*incarnation*/, const Status& /*health*/) {}
};

}  // namespace ringmaster::internal
