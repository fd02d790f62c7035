// A small Kubernetes REST client over cpprestsdk: JSON requests with the
// cluster's CA, a bearer token (re-read from its file, as projected tokens
// rotate; or an exec plugin's, refreshed on expiry and on 401) or a client
// certificate, client-side QPS/burst limiting, a timeout
// on every request, and streaming watches that can be cancelled.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubeconfig.h"
#include "ringmaster/status.h"

namespace ringmaster::op {

struct ClientOptions {
  double qps = 500;  // the operator's defaults (operator/main.cc)
  int burst = 1000;
  std::chrono::seconds request_timeout{30};
};

struct HttpResponse {
  int code = 0;
  nlohmann::json body;  // null when the body is not JSON
  bool ok() const { return code >= 200 && code < 300; }
  // The API server's Status message, or the code.
  std::string Message() const;
};

// Cancels a watch from another thread (shutdown).
class WatchCanceller {
 public:
  WatchCanceller();
  ~WatchCanceller();
  void Cancel();
  bool cancelled() const { return cancelled_; }
  struct Impl;
  Impl* impl() { return impl_.get(); }

 private:
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<Impl> impl_;
};

class KubeClient {
 public:
  static StatusOr<std::unique_ptr<KubeClient>> Create(ClusterConfig config, ClientOptions options);
  ~KubeClient();

  // `path` starts with "/" and may carry a query. Unavailable (or
  // DeadlineExceeded) for transport failures; any HTTP answer is a response.
  StatusOr<HttpResponse> Request(std::string_view method, const std::string& path,
                                 const nlohmann::json* body = nullptr,
                                 std::string_view content_type = "application/json");

  // The same calls, all in flight at once (each still paced by the QPS
  // limiter); answers in request order. For the pods of one job. A
  // transport failure is an answer with code 0 and the error as its message.
  struct Call {
    std::string method, path;
    const nlohmann::json* body = nullptr;
  };
  std::vector<HttpResponse> RequestAll(const std::vector<Call>& calls);

  // Streams `path` (a watch URL) and calls `on_line` for each line until the
  // server ends the stream (OK), `on_line` returns false (OK), the stream is
  // idle for `idle_timeout` or fails (Unavailable), or it is cancelled
  // (Cancelled). A non-2xx answer is returned as FailedPrecondition with the
  // HTTP code in `*http_code`.
  Status Watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
               std::chrono::seconds idle_timeout, WatchCanceller* canceller, int* http_code);

  const ClusterConfig& config() const { return config_; }

  // Told of every request's answer (code 0: none) and how long it took: the
  // rest_client_* metrics. Set before the client is shared between threads.
  using RequestObserver = std::function<void(std::string_view method, int code, double seconds)>;
  void SetRequestObserver(RequestObserver observer) { observer_ = std::move(observer); }

 private:
  KubeClient(ClusterConfig config, ClientOptions options);
  StatusOr<HttpResponse> RequestOnce(std::string_view method, const std::string& path,
                                     const nlohmann::json* body, std::string_view content_type);
  void Throttle();
  // The bearer token for the next request: the kubeconfig's, the token
  // file's (re-read every minute), or the exec plugin's (run again when it
  // expires or after a 401: ForgetExecCredential). An error names the plugin.
  StatusOr<std::string> Token();
  void ForgetExecCredential();

  struct Impl;
  void Observe(std::string_view method, int code, std::chrono::steady_clock::time_point start) const;

  ClusterConfig config_;
  ClientOptions options_;
  RequestObserver observer_;
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes a query value (label selectors contain '=' and '/').
std::string QueryEscape(std::string_view value);

}  // namespace ringmaster::op
