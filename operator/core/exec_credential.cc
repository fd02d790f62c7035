#include "exec_credential.h"

#include <nlohmann/json.hpp>

#include "kubeconfig.h"
#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;

namespace {

constexpr char kV1[] = "client.authentication.k8s.io/v1";
constexpr char kV1beta1[] = "client.authentication.k8s.io/v1beta1";

std::string Plugin(const ExecConfig& exec) {
  return "exec plugin '" + exec.command + "' of kubeconfig user '" + exec.user + "'";
}

}  // namespace

Status ValidateExecConfig(const ExecConfig& exec) {
  if (exec.command.empty())
    return InvalidArgumentError("kubeconfig user '" + exec.user + "': exec.command is required");
  if (exec.api_version != kV1 && exec.api_version != kV1beta1)
    return InvalidArgumentError("kubeconfig user '" + exec.user + "': exec.apiVersion '" + exec.api_version +
                                "' is not supported (use " + kV1 + " or " + kV1beta1 + ")");
  if (exec.interactive_mode != "Never" && exec.interactive_mode != "IfAvailable" &&
      exec.interactive_mode != "Always")
    return InvalidArgumentError("kubeconfig user '" + exec.user + "': exec.interactiveMode '" +
                                exec.interactive_mode + "' must be Never, IfAvailable or Always");
  if (exec.interactive_mode == "Always")
    return FailedPreconditionError(
        Plugin(exec) +
        " needs a terminal (interactiveMode: Always); the operator has none: use a "
        "non-interactive login (a service account, workload identity) or a token");
  return OkStatus();
}

std::string ExecInfoJson(const ExecConfig& exec, const std::string& server, const std::string& ca_pem,
                         bool insecure_skip_tls_verify) {
  json spec = {{"interactive", false}};
  if (exec.provide_cluster_info) {
    json cluster = {{"server", server}};
    if (!ca_pem.empty()) cluster["certificate-authority-data"] = Base64Encode(ca_pem);
    if (insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    spec["cluster"] = cluster;
  }
  return json{{"apiVersion", exec.api_version}, {"kind", "ExecCredential"}, {"spec", spec}}.dump();
}

StatusOr<ExecCredential> ParseExecCredential(const ExecConfig& exec, const std::string& stdout_text) {
  const json out = json::parse(stdout_text, nullptr, false);
  if (out.is_discarded() || !out.is_object())
    return InvalidArgumentError(Plugin(exec) + " printed no ExecCredential JSON on its standard output");
  if (out.value("kind", "") != "ExecCredential")
    return InvalidArgumentError(Plugin(exec) + ": kind is '" + out.value("kind", "") +
                                "', want ExecCredential");
  if (out.value("apiVersion", "") != exec.api_version)
    return InvalidArgumentError(Plugin(exec) + ": apiVersion is '" + out.value("apiVersion", "") +
                                "', but the kubeconfig asked for '" + exec.api_version + "'");
  const auto status = out.find("status");
  if (status == out.end() || !status->is_object())
    return InvalidArgumentError(Plugin(exec) + ": the ExecCredential has no status");
  ExecCredential c;
  c.token = status->value("token", "");
  c.client_cert_pem = status->value("clientCertificateData", "");
  c.client_key_pem = status->value("clientKeyData", "");
  if (c.token.empty() && c.client_cert_pem.empty())
    return InvalidArgumentError(Plugin(exec) + ": status has neither token nor clientCertificateData");
  if (c.client_cert_pem.empty() != c.client_key_pem.empty())
    return InvalidArgumentError(Plugin(exec) +
                                ": status.clientCertificateData and status.clientKeyData come together");
  const std::string expiry = status->value("expirationTimestamp", "");
  if (!expiry.empty()) {
    auto t = ParseRfc3339(expiry);
    if (!t)
      return InvalidArgumentError(Plugin(exec) + ": status.expirationTimestamp '" + expiry +
                                  "' is not RFC 3339");
    c.expires_unix = *t;
  }
  return c;
}

bool NeedsRefresh(const ExecCredential& c, int64_t now_unix) {
  return c.expires_unix && now_unix + 10 >= *c.expires_unix;
}

std::string ExecFailureMessage(const ExecConfig& exec, int exit_code, const std::string& stderr_text,
                               bool not_found) {
  if (not_found) {
    std::string m = Plugin(exec) + ": the command was not found";
    if (!exec.install_hint.empty()) m += "\n" + exec.install_hint;
    return m;
  }
  std::string m = Plugin(exec) + " failed with exit code " + std::to_string(exit_code);
  std::string err = stderr_text;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  if (err.size() > 2000) err = err.substr(0, 2000) + "...";
  if (!err.empty()) m += ": " + err;
  return m;
}

}  // namespace ringmaster::op
