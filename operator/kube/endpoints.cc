#include "endpoints.h"

#include <CivetServer.h>
#include <prometheus/exposer.h>

#include <charconv>
#include <cstring>

namespace ringmaster::op {

StatusOr<std::string> CivetListeningPort(const std::string& address, const std::string& flag) {
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  const std::string port = colon == std::string::npos ? address : address.substr(colon + 1);
  int p = -1;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (colon == std::string::npos || ec != std::errc() || end != port.data() + port.size() || p < 0 ||
      p > 65535)
    return InvalidArgumentError(flag + ": want HOST:PORT or :PORT (port 0-65535), got '" + address + "'");
  if (host.find(':') != std::string::npos || host.find('[') != std::string::npos)
    return InvalidArgumentError(flag + ": '" + address +
                                "' is IPv6; this build serves IPv4 only (use :PORT)");
  return host.empty() ? port : host + ":" + port;
}

StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address,
    std::initializer_list<std::shared_ptr<prometheus::Collectable>> collectables) {
  auto port = CivetListeningPort(address, "--metrics-address");
  if (!port.ok()) return port.status();
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  try {
    e->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", *port, "num_threads", "2", "request_timeout_ms", "10000"});
  } catch (const std::exception& ex) {
    return UnavailableError("--metrics-address " + address + ": cannot listen (" + ex.what() + ")");
  }
  for (const auto& c : collectables) {
    e->collectables_.push_back(c);
    e->exposer_->RegisterCollectable(c);
  }
  const auto ports = e->exposer_->GetListeningPorts();
  e->port_ = ports.empty() ? 0 : ports[0];
  return e;
}

MetricsEndpoint::~MetricsEndpoint() = default;

namespace {

class Probe : public CivetHandler {
 public:
  explicit Probe(std::function<bool()> ok) : ok_(std::move(ok)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    const bool ok = ok_();
    const char* body = ok ? "ok\n" : "not ready\n";
    mg_printf(conn,
              "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
              "Connection: close\r\n\r\n%s",
              ok ? "200 OK" : "503 Service Unavailable", std::strlen(body), body);
    return true;
  }

 private:
  std::function<bool()> ok_;
};

}  // namespace

struct ProbeEndpoint::Impl {
  std::unique_ptr<CivetServer> server;
  Probe healthz{[] { return true; }};
  std::unique_ptr<Probe> readyz;
};

StatusOr<std::unique_ptr<ProbeEndpoint>> ProbeEndpoint::Start(const std::string& address,
                                                              std::function<bool()> ready) {
  auto port = CivetListeningPort(address, "--health-probe-address");
  if (!port.ok()) return port.status();
  std::unique_ptr<ProbeEndpoint> e(new ProbeEndpoint());
  e->impl_ = std::make_unique<Impl>();
  e->impl_->readyz = std::make_unique<Probe>(std::move(ready));
  try {
    e->impl_->server = std::make_unique<CivetServer>(std::vector<std::string>{
        "listening_ports", *port, "num_threads", "2", "request_timeout_ms", "10000"});
  } catch (const std::exception& ex) {
    return UnavailableError("--health-probe-address " + address + ": cannot listen (" + ex.what() + ")");
  }
  e->impl_->server->addHandler("/healthz", e->impl_->healthz);
  e->impl_->server->addHandler("/readyz", *e->impl_->readyz);
  const auto ports = e->impl_->server->getListeningPorts();
  e->port_ = ports.empty() ? 0 : ports[0];
  return e;
}

ProbeEndpoint::~ProbeEndpoint() {
  if (impl_ && impl_->server) impl_->server->close();  // stop serving before the handlers go
}

}  // namespace ringmaster::op
