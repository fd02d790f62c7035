// The transport wiring of one formation (CommunicatorImpl::FormOnce): a
// TcpTransport over one data channel of every pair of the mesh, told the
// group's abort, and, where formation left the data connections to first
// use, the acceptor that takes the peers' and the dialing of ours (the
// higher rank dials: docs/engine.md, "Connections at scale").
// Private to agent/src, like communicator_impl.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/mesh.h"
#include "group/group.h"
#include "transport/auth.h"
#include "transport/data_acceptor.h"
#include "transport/handshake.h"
#include "transport/transport.h"

namespace ringmaster::internal {

class FormationTransports {
 public:
  // `mesh` (formed, its control connections taken) and `group` must outlive
  // it; `names`: the group formed, in rank order. Takes the mesh's data
  // listener, if it has one, into an acceptor for `view` (this member in the
  // group formed), logging refusals in `refusals`.
  FormationTransports(Mesh& mesh, const MeshView& view, RefusalLog* refusals, Group& group,
                      std::vector<std::string> names);
  FormationTransports(const FormationTransports&) = delete;
  FormationTransports& operator=(const FormationTransports&) = delete;

  // The transport over data channel `channel` of every pair: takes those
  // connections out of the mesh; the others it opens when first needed.
  std::unique_ptr<Transport> On(int channel);
  // Null where formation made every data connection; the formation keeps it
  // (and stops it) for its life.
  const std::shared_ptr<DataAcceptor>& acceptor() const { return acceptor_; }

 private:
  Mesh& mesh_;
  Group& group_;
  std::vector<std::string> names_;
  int rank_, size_;
  std::shared_ptr<DataAcceptor> acceptor_;
};

}  // namespace ringmaster::internal
