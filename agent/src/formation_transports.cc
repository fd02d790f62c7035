// A formation's transports over its mesh (formation_transports.h).
#include "formation_transports.h"

#include <utility>

#include "transport/data_dial.h"
#include "transport/tcp_transport.h"

namespace ringmaster::internal {

FormationTransports::FormationTransports(Mesh& mesh, const MeshView& view, RefusalLog* refusals, Group& group,
                                         std::vector<std::string> names)
    : mesh_(mesh), group_(group), names_(std::move(names)), rank_(view.rank), size_(view.size) {
  if (mesh_.listen_fd >= 0) {
    acceptor_ = std::make_shared<DataAcceptor>(mesh_.listen_fd, view, refusals, mesh_.conns);
    mesh_.listen_fd = -1;
  }
}

std::unique_ptr<Transport> FormationTransports::On(int channel) {
  std::vector<int> fds(size_, -1);
  for (int p = 0; p < size_; ++p) std::swap(fds[p], mesh_.conns[p][channel]);
  TcpTransport::Hooks hooks;
  hooks.peer_name = [names = names_](int r) { return names[r]; };
  hooks.abort_status = [g = &group_] { return g->AbortStatus(); };
  hooks.abort_fd = group_.abort_fd();
  if (acceptor_) {
    auto& fu = hooks.first_use;
    fu.dial = [acceptor = acceptor_, channel, rank = rank_, names = names_, hosts = mesh_.data_hosts,
               ports = mesh_.data_ports](int p, Deadline deadline) {
      return DialPeer(acceptor->view(), DialTarget{hosts[p], ports[p], p, names[p], names[rank]}, channel,
                      deadline);
    };
    fu.take = [acceptor = acceptor_, channel](int p) { return acceptor->Take(p, channel); };
    fu.ready_fd = acceptor_->ready_fd(channel);
    fu.drain = [acceptor = acceptor_, channel] { acceptor->Drain(channel); };
  }
  return std::make_unique<TcpTransport>(rank_, size_, std::move(fds), std::move(hooks));
}

}  // namespace ringmaster::internal
