// Where the API server is and how to authenticate: from a kubeconfig file
// (token, token file, client certificate, or an exec credential plugin;
// inline *-data or file paths) or
// from inside a pod (service account token, CA, KUBERNETES_SERVICE_HOST/PORT).
// Pure: files and the environment come through the callbacks, so tests need
// no file system.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base64.h"  // kubeconfig's *-data fields
#include "exec_credential.h"
#include "ringmaster/status.h"

namespace ringmaster::op {

struct ClusterConfig {
  std::string server;  // "https://host:port"
  std::string ca_pem;  // "" : the system's roots
  bool insecure_skip_tls_verify = false;
  std::string token;
  // Re-read before requests when set: projected service-account tokens rotate.
  std::string token_file;
  std::string client_cert_pem, client_key_pem;
  // A plugin that prints the credential (kube/exec_plugin.h runs it).
  std::optional<ExecConfig> exec;
  std::string namespace_;  // the context's (or the pod's) namespace; "" when unset
};

// Reads a whole file; NotFound/Unavailable when it cannot.
using ReadFileFn = std::function<StatusOr<std::string>(const std::string& path)>;
using GetEnvFn = std::function<std::optional<std::string>(const std::string& name)>;

// `context` "" means the file's current-context. Relative file paths are
// resolved against `base_dir` (the kubeconfig's directory).
StatusOr<ClusterConfig> ParseKubeconfig(const std::string& text, const std::string& context,
                                        const std::string& base_dir, const ReadFileFn& read_file);

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";
StatusOr<ClusterConfig> InClusterConfig(const GetEnvFn& getenv_fn, const ReadFileFn& read_file,
                                        const std::string& sa_dir = kServiceAccountDir);

// The real file system and environment, for the shell.
StatusOr<std::string> ReadWholeFile(const std::string& path);
std::optional<std::string> GetEnv(const std::string& name);

}  // namespace ringmaster::op
