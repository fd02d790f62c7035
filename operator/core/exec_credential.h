// Exec credential plugins, as client-go runs them (the kubeconfig user's
// `exec` stanza): how EKS (`aws eks get-token`), GKE
// (`gke-gcloud-auth-plugin`) and AKS (`kubelogin`) hand out short-lived
// tokens. The plugin gets KUBERNETES_EXEC_INFO (an ExecCredential with the
// spec) and prints an ExecCredential whose status carries a token or a
// client certificate, and maybe an expiry. Pure: parsing the stanza,
// writing the input, reading the output, deciding when to run it again.
// kube/exec_plugin.h runs the process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/status.h"

namespace ringmaster::op {

struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or v1beta1
  std::string command;      // a path, or a name looked up on PATH
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to ours
  std::string install_hint;                              // shown when the command is missing
  bool provide_cluster_info = false;
  std::string interactive_mode = "Never";  // Never | IfAvailable | Always (we never have a terminal)
  std::string user;                        // the kubeconfig user's name, for messages
};

struct ExecCredential {
  std::string token;
  std::string client_cert_pem, client_key_pem;
  std::optional<int64_t> expires_unix;  // none: valid until the API server refuses it (401)
};

// The stanza of kubeconfig user `user` (YAML already parsed into its
// fields by the caller): validates what client-go validates.
Status ValidateExecConfig(const ExecConfig& exec);

// KUBERNETES_EXEC_INFO for the plugin. With provideClusterInfo the cluster's
// server and CA go in spec.cluster, as client-go sends them.
std::string ExecInfoJson(const ExecConfig& exec, const std::string& server, const std::string& ca_pem,
                         bool insecure_skip_tls_verify);

// The plugin's standard output. Errors name the plugin and the field.
StatusOr<ExecCredential> ParseExecCredential(const ExecConfig& exec, const std::string& stdout_text);

// Whether a credential must be fetched again before a request at `now_unix`:
// client-go refreshes once it has expired; we refresh 10 s early so a
// request in flight does not carry a token that expires on the way.
bool NeedsRefresh(const ExecCredential& c, int64_t now_unix);

// What went wrong running the plugin, as the user must read it.
std::string ExecFailureMessage(const ExecConfig& exec, int exit_code, const std::string& stderr_text,
                               bool not_found);

}  // namespace ringmaster::op
