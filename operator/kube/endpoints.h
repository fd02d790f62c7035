// The operator's HTTP endpoints, on civetweb (the server prometheus-cpp
// brings): /metrics through prometheus-cpp's Exposer on --metrics-address,
// and /healthz and /readyz on --health-probe-address, a port of their own,
// so the kubelet's probes never depend on metrics being on or scraped.
// Addresses are "HOST:PORT" or ":PORT" (every IPv4 interface); port 0 picks
// a free one. IPv4 only: Debian's civetweb is built without IPv6.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/status.h"

namespace prometheus {
class Collectable;
class Exposer;
}  // namespace prometheus

namespace ringmaster::op {

class MetricsEndpoint {
 public:
  // Serves every collectable at /metrics (the endpoint keeps them alive:
  // the Exposer itself holds only weak references).
  static StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& address,
      std::initializer_list<std::shared_ptr<prometheus::Collectable>> collectables);
  ~MetricsEndpoint();
  int port() const { return port_; }

 private:
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::unique_ptr<prometheus::Exposer> exposer_;  // after them: destroyed first
  int port_ = 0;
};

class ProbeEndpoint {
 public:
  // /healthz answers ok while the process serves; /readyz asks `ready`.
  static StatusOr<std::unique_ptr<ProbeEndpoint>> Start(const std::string& address,
                                                        std::function<bool()> ready);
  ~ProbeEndpoint();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// civetweb's listening_ports for one of our addresses; InvalidArgument
// naming `flag` when it is not HOST:PORT or :PORT.
StatusOr<std::string> CivetListeningPort(const std::string& address, const std::string& flag);

}  // namespace ringmaster::op
