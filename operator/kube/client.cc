#include "client.h"

#include <cpprest/http_client.h>
#include <cpprest/producerconsumerstream.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl.hpp>
#include <mutex>
#include <thread>

#include "exec_plugin.h"
#include "log.h"
#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;
namespace http = web::http;

std::string HttpResponse::Message() const {
  if (body.is_object() && body.contains("message") && body["message"].is_string()) return body["message"];
  return "HTTP " + std::to_string(code);
}

std::string QueryEscape(std::string_view value) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {
// cpprestsdk reports a refused server certificate as a bare "Error in SSL
// handshake"; say where to look.
std::string TransportError(const std::string& what) {
  if (what.find("SSL handshake") == std::string::npos) return what;
  return what +
         " (does the kubeconfig's certificate-authority, or the service account's ca.crt, sign the API " +
         "server's certificate?)";
}
}  // namespace

struct WatchCanceller::Impl {
  pplx::cancellation_token_source source;
};

WatchCanceller::WatchCanceller() : impl_(std::make_unique<Impl>()) {}
WatchCanceller::~WatchCanceller() = default;
void WatchCanceller::Cancel() {
  cancelled_ = true;
  impl_->source.cancel();
}

struct KubeClient::Impl {
  std::mutex mu;  // token bucket and token cache
  double tokens = 0;
  std::chrono::steady_clock::time_point last_refill = std::chrono::steady_clock::now();
  std::string token;
  std::chrono::steady_clock::time_point token_read{};
  std::mutex exec_mu;  // one plugin run at a time; guards exec_cred
  std::optional<ExecCredential> exec_cred;
  std::unique_ptr<http::client::http_client> client;

  http::client::http_client_config Config(const ClusterConfig& cfg, std::chrono::seconds timeout) const {
    http::client::http_client_config c;
    c.set_timeout(timeout);
    c.set_validate_certificates(!cfg.insecure_skip_tls_verify);
    const std::string ca = cfg.ca_pem, cert = cfg.client_cert_pem, key = cfg.client_key_pem;
    c.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
      boost::system::error_code ec;
      if (!ca.empty()) {
        // Trust the cluster's CA alone, as client-go does. cpprestsdk hands
        // us a context already loaded with the system's CA bundle, which
        // would also accept any publicly trusted certificate for the API
        // server's name, and holds about 1 MiB per pooled connection.
        if (X509_STORE* only_ca = X509_STORE_new()) SSL_CTX_set_cert_store(ctx.native_handle(), only_ca);
        ctx.add_certificate_authority(boost::asio::buffer(ca), ec);
        if (ec) LogError("cannot load the cluster CA", {{"error", ec.message()}});
      }
      if (!cert.empty()) {
        ctx.use_certificate_chain(boost::asio::buffer(cert), ec);
        if (ec) LogError("cannot load the client certificate", {{"error", ec.message()}});
        ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem, ec);
        if (ec) LogError("cannot load the client key", {{"error", ec.message()}});
      }
    });
    return c;
  }
};

KubeClient::KubeClient(ClusterConfig config, ClientOptions options)
    : config_(std::move(config)), options_(options), impl_(std::make_unique<Impl>()) {
  impl_->tokens = options_.burst;
  impl_->token = config_.token;
  impl_->token_read = std::chrono::steady_clock::now();
}

KubeClient::~KubeClient() = default;

StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(ClusterConfig config, ClientOptions options) {
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0)
    return InvalidArgumentError("API server URL must be http(s)://: '" + config.server + "'");
  if (options.qps <= 0 || options.burst <= 0) return InvalidArgumentError("--qps and --burst must be > 0");
  std::unique_ptr<KubeClient> c(new KubeClient(std::move(config), options));
  if (c->config_.exec) {
    // Run the plugin now: a broken login fails at start, naming the plugin.
    // A client certificate from it is used for the life of the client
    // (clouds' plugins issue tokens, which are refreshed).
    auto cred = RunExecPlugin(c->config_);
    if (!cred.ok()) return cred.status();
    if (!cred->client_cert_pem.empty()) {
      c->config_.client_cert_pem = cred->client_cert_pem;
      c->config_.client_key_pem = cred->client_key_pem;
    }
    c->impl_->exec_cred = *cred;
  }
  try {
    c->impl_->client =
        std::make_unique<http::client::http_client>(utility::conversions::to_string_t(c->config_.server),
                                                    c->impl_->Config(c->config_, options.request_timeout));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("cannot make an HTTP client: ") + e.what());
  }
  return c;
}

void KubeClient::Throttle() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - impl_->last_refill).count();
    impl_->last_refill = now;
    impl_->tokens = std::min<double>(options_.burst, impl_->tokens + elapsed * options_.qps);
    if (impl_->tokens >= 1) {
      impl_->tokens -= 1;
      return;
    }
    const double wait = (1 - impl_->tokens) / options_.qps;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    lock.lock();
  }
}

void KubeClient::ForgetExecCredential() {
  if (!config_.exec) return;
  std::lock_guard<std::mutex> lock(impl_->exec_mu);
  impl_->exec_cred.reset();
}

StatusOr<std::string> KubeClient::Token() {
  if (config_.exec) {
    std::lock_guard<std::mutex> lock(impl_->exec_mu);
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    if (!impl_->exec_cred || NeedsRefresh(*impl_->exec_cred, now)) {
      auto cred = RunExecPlugin(config_);
      if (!cred.ok()) {
        LogError("the exec credential plugin failed", {{"error", cred.status().ToString()}});
        return cred.status();
      }
      impl_->exec_cred = *cred;
      LogInfo("exec credential plugin: new credential",
              {{"plugin", config_.exec->command},
               {"expires", cred->expires_unix ? FormatRfc3339(*cred->expires_unix) : std::string("never")}});
    }
    return impl_->exec_cred->token;
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto now = std::chrono::steady_clock::now();
  if (!config_.token_file.empty() && now - impl_->token_read > std::chrono::seconds(60)) {
    impl_->token_read = now;
    if (auto t = ReadWholeFile(config_.token_file); t.ok()) {
      std::string v = *t;
      while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
      impl_->token = v;
    } else {
      LogWarning("cannot re-read the token file; keeping the last token", {{"file", config_.token_file}});
    }
  }
  return impl_->token;
}

namespace {

http::method Method(std::string_view m) {
  if (m == "GET") return http::methods::GET;
  if (m == "POST") return http::methods::POST;
  if (m == "PUT") return http::methods::PUT;
  if (m == "PATCH") return http::methods::PATCH;
  if (m == "DELETE") return http::methods::DEL;
  return utility::conversions::to_string_t(std::string(m));
}

// A request for `path` that asks for JSON, with the bearer token if any.
http::http_request JsonRequest(const http::method& method, const std::string& path,
                               const std::string& token) {
  http::http_request req(method);
  req.set_request_uri(utility::conversions::to_string_t(path));
  req.headers().add(U("Accept"), U("application/json"));
  if (!token.empty())
    req.headers().add(U("Authorization"), utility::conversions::to_string_t("Bearer " + token));
  return req;
}

}  // namespace

void KubeClient::Observe(std::string_view method, int code,
                         std::chrono::steady_clock::time_point start) const {
  if (observer_)
    observer_(method, code, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

std::vector<HttpResponse> KubeClient::RequestAll(const std::vector<Call>& calls) {
  // At most kWindow in flight: each one holds a pooled TLS connection (about
  // 60 KiB of RSS each, measured). 10 covers a job of 10 replicas at once;
  // with 8 workers, 80 requests in flight keep a 2-core API server busy
  // (3 in flight was the bound; docs/benchmarks/operator.md, "How we got here").
  constexpr size_t kWindow = 10;
  std::vector<pplx::task<std::pair<int, std::string>>> tasks;
  tasks.reserve(calls.size());
  const auto start = std::chrono::steady_clock::now();
  for (const Call& c : calls) {
    if (tasks.size() >= kWindow) tasks[tasks.size() - kWindow].wait();
    Throttle();
    http::http_request req(Method(c.method));
    req.set_request_uri(utility::conversions::to_string_t(c.path));
    req.headers().add(U("Accept"), U("application/json"));
    const auto token = Token();
    if (token.ok() && !token->empty())
      req.headers().add(U("Authorization"), utility::conversions::to_string_t("Bearer " + *token));
    if (c.body) req.set_body(c.body->dump(), "application/json");
    tasks.push_back(impl_->client->request(req).then([](http::http_response resp) {
      const int code = resp.status_code();
      return resp.extract_utf8string(true).then(
          [code](std::string text) { return std::make_pair(code, std::move(text)); });
    }));
  }
  std::vector<HttpResponse> out(calls.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    try {
      auto [code, text] = tasks[i].get();
      out[i].code = code;
      out[i].body = json::parse(text, nullptr, false);
      if (out[i].body.is_discarded()) out[i].body = json();
    } catch (const std::exception& e) {
      out[i].code = 0;
      out[i].body = {{"message", calls[i].method + " " + calls[i].path + ": " + e.what()}};
    }
    Observe(calls[i].method, out[i].code, start);  // in flight together: each since the first was sent
  }
  for (const HttpResponse& r : out) {
    if (r.code == 401) {
      ForgetExecCredential();  // the next request runs the plugin again
      break;
    }
  }
  return out;
}

StatusOr<HttpResponse> KubeClient::Request(std::string_view method, const std::string& path, const json* body,
                                           std::string_view content_type) {
  // With an exec plugin a 401 means the token expired early or was revoked:
  // run the plugin again and retry once, as client-go does.
  for (int attempt = 0;; ++attempt) {
    auto out = RequestOnce(method, path, body, content_type);
    if (!config_.exec || attempt > 0 || !out.ok() || out->code != 401) return out;
    ForgetExecCredential();
  }
}

StatusOr<HttpResponse> KubeClient::RequestOnce(std::string_view method, const std::string& path,
                                               const json* body, std::string_view content_type) {
  Throttle();
  const auto token = Token();
  if (!token.ok()) return token.status();
  http::http_request req = JsonRequest(Method(method), path, *token);
  if (body) req.set_body(body->dump(), std::string(content_type));
  const auto start = std::chrono::steady_clock::now();
  try {
    http::http_response resp = impl_->client->request(req).get();
    HttpResponse out;
    out.code = resp.status_code();
    const std::string text = resp.extract_utf8string(true).get();
    out.body = json::parse(text, nullptr, false);
    if (out.body.is_discarded()) out.body = json();
    Observe(method, out.code, start);
    return out;
  } catch (const std::exception& e) {
    Observe(method, 0, start);
    const std::string what = e.what();
    if (what.find("timed out") != std::string::npos)
      return DeadlineExceededError(std::string(method) + " " + path + ": " + what);
    return UnavailableError(std::string(method) + " " + path + ": " + TransportError(what));
  }
}

Status KubeClient::Watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                         std::chrono::seconds idle_timeout, WatchCanceller* canceller, int* http_code) {
  Throttle();
  if (http_code) *http_code = 0;
  std::unique_ptr<http::client::http_client> client;
  try {
    client = std::make_unique<http::client::http_client>(utility::conversions::to_string_t(config_.server),
                                                         impl_->Config(config_, idle_timeout));
  } catch (const std::exception& e) {
    return UnavailableError(std::string("watch client: ") + e.what());
  }
  const auto token = Token();
  if (!token.ok()) return token.status();
  http::http_request req = JsonRequest(http::methods::GET, path, *token);
  pplx::cancellation_token ct =
      canceller ? canceller->impl()->source.get_token() : pplx::cancellation_token::none();
  try {
    http::http_response resp = client->request(req, ct).get();
    if (http_code) *http_code = resp.status_code();
    if (resp.status_code() == 401) ForgetExecCredential();  // the reconnect runs the plugin again
    if (resp.status_code() < 200 || resp.status_code() >= 300) {
      const std::string text = resp.extract_utf8string(true).get();
      if (!on_line(text)) return OkStatus();
      return FailedPreconditionError("watch " + path + ": HTTP " + std::to_string(resp.status_code()));
    }
    auto stream = resp.body();
    auto buf = stream.streambuf();
    std::string pending;
    std::vector<char> chunk(64 * 1024);
    while (true) {
      if (canceller && canceller->cancelled()) return CancelledError("watch cancelled");
      // Block for one byte (a producer/consumer buffer only completes a read
      // of N bytes once N are there), then take whatever else has arrived.
      size_t n = buf.getn(reinterpret_cast<uint8_t*>(chunk.data()), 1).get();
      if (n == 0) return OkStatus();  // the server ended the stream
      const size_t avail =
          std::min(static_cast<size_t>(std::max<std::streamsize>(buf.in_avail(), 0)), chunk.size() - 1);
      if (avail > 0) n += buf.getn(reinterpret_cast<uint8_t*>(chunk.data()) + 1, avail).get();
      pending.append(chunk.data(), n);
      size_t start = 0;
      for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        if (nl > start && !on_line(std::string_view(pending).substr(start, nl - start))) return OkStatus();
      }
      pending.erase(0, start);
    }
  } catch (const pplx::task_canceled&) {
    return CancelledError("watch cancelled");
  } catch (const std::exception& e) {
    if (canceller && canceller->cancelled()) return CancelledError("watch cancelled");
    return UnavailableError("watch " + path + ": " + TransportError(e.what()));
  }
}

}  // namespace ringmaster::op
