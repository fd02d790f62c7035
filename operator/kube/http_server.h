// A tiny HTTP/1.0 server for /metrics, /healthz and /readyz: one thread, one
// request per connection, bounded reads and socket timeouts, so a slow
// scraper cannot stall it for long.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "ringmaster/status.h"

namespace ringmaster::op {

struct HttpReply {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  // Gets the request target (path and query).
  using Handler = std::function<HttpReply(const std::string& target)>;
  ~HttpServer();
  void Handle(const std::string& path, Handler h) { handlers_[path] = std::move(h); }
  // "host:port" or ":port"; port 0 picks a free one (see port()).
  Status Start(const std::string& address);
  void Stop();
  int port() const { return port_; }

 private:
  void Serve();
  std::map<std::string, Handler> handlers_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ringmaster::op
