#include "kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ringmaster::op {
namespace {

std::string Str(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap() || !n[key] || !n[key].IsScalar()) return "";
  return n[key].as<std::string>();
}

YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list) {
    if (item.IsMap() && Str(item, "name") == name) return item[inner];
  }
  return YAML::Node();
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + (path.rfind("./", 0) == 0 ? path.substr(2) : path);
}

// "<field>-data" (base64) or "<field>" (a file path), whichever is there.
StatusOr<std::string> DataOrFile(const YAML::Node& n, const std::string& field, const std::string& base_dir,
                                 const ReadFileFn& read_file) {
  const std::string data = Str(n, (field + "-data").c_str());
  if (!data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded.ok())
      return InvalidArgumentError("kubeconfig " + field + "-data: " + decoded.status().message());
    return decoded;
  }
  const std::string path = Str(n, field.c_str());
  if (path.empty()) return std::string();
  return read_file(Resolve(path, base_dir));
}

// The user's `exec` stanza. A relative command with a slash is resolved
// against the kubeconfig's directory, as client-go does; a bare name is
// looked up on PATH when it runs.
StatusOr<ExecConfig> ParseExec(const YAML::Node& n, const std::string& user, const std::string& base_dir) {
  if (!n.IsMap()) return InvalidArgumentError("kubeconfig user '" + user + "': exec must be a mapping");
  ExecConfig e;
  e.user = user;
  e.api_version = Str(n, "apiVersion");
  e.command = Str(n, "command");
  if (e.command.find('/') != std::string::npos) e.command = Resolve(e.command, base_dir);
  e.install_hint = Str(n, "installHint");
  e.provide_cluster_info = Str(n, "provideClusterInfo") == "true";
  if (const std::string mode = Str(n, "interactiveMode"); !mode.empty()) e.interactive_mode = mode;
  if (n["args"]) {
    if (!n["args"].IsSequence())
      return InvalidArgumentError("kubeconfig user '" + user + "': exec.args must be a list");
    for (const auto& a : n["args"]) e.args.push_back(a.as<std::string>());
  }
  if (n["env"] && !n["env"].IsNull()) {
    if (!n["env"].IsSequence())
      return InvalidArgumentError("kubeconfig user '" + user + "': exec.env must be a list");
    for (const auto& v : n["env"]) {
      if (Str(v, "name").empty())
        return InvalidArgumentError("kubeconfig user '" + user + "': every exec.env entry needs a name");
      e.env.emplace_back(Str(v, "name"), Str(v, "value"));
    }
  }
  if (Status st = ValidateExecConfig(e); !st.ok()) return st;
  return e;
}

}  // namespace

StatusOr<ClusterConfig> ParseKubeconfig(const std::string& text, const std::string& context_name,
                                        const std::string& base_dir, const ReadFileFn& read_file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("kubeconfig does not parse: ") + e.what());
  }
  if (!root.IsMap()) return InvalidArgumentError("kubeconfig is not a mapping");
  std::string ctx_name = context_name.empty() ? Str(root, "current-context") : context_name;
  if (ctx_name.empty()) return InvalidArgumentError("kubeconfig has no current-context");
  YAML::Node ctx = FindNamed(root["contexts"], ctx_name, "context");
  if (!ctx || !ctx.IsMap()) return NotFoundError("kubeconfig has no context '" + ctx_name + "'");
  const std::string cluster_name = Str(ctx, "cluster");
  const std::string user_name = Str(ctx, "user");
  YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
  if (!cluster || !cluster.IsMap()) return NotFoundError("kubeconfig has no cluster '" + cluster_name + "'");

  ClusterConfig cfg;
  cfg.namespace_ = Str(ctx, "namespace");
  cfg.server = Str(cluster, "server");
  if (cfg.server.empty())
    return InvalidArgumentError("kubeconfig cluster '" + cluster_name + "' has no server");
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  cfg.insecure_skip_tls_verify = Str(cluster, "insecure-skip-tls-verify") == "true";
  auto ca = DataOrFile(cluster, "certificate-authority", base_dir, read_file);
  if (!ca.ok()) return ca.status();
  cfg.ca_pem = *ca;

  YAML::Node user = FindNamed(root["users"], user_name, "user");
  if (user && user.IsMap()) {
    cfg.token = Str(user, "token");
    const std::string token_file = Str(user, "tokenFile");
    if (!token_file.empty()) cfg.token_file = Resolve(token_file, base_dir);
    auto cert = DataOrFile(user, "client-certificate", base_dir, read_file);
    if (!cert.ok()) return cert.status();
    auto key = DataOrFile(user, "client-key", base_dir, read_file);
    if (!key.ok()) return key.status();
    cfg.client_cert_pem = *cert;
    cfg.client_key_pem = *key;
    if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty())
      return InvalidArgumentError("kubeconfig user '" + user_name +
                                  "' has a client certificate without a key, or a key without a certificate");
    if (user["exec"]) {
      auto exec = ParseExec(user["exec"], user_name, base_dir);
      if (!exec.ok()) return exec.status();
      cfg.exec = *exec;
    }
  } else if (!user_name.empty()) {
    return NotFoundError("kubeconfig has no user '" + user_name + "'");
  }
  return cfg;
}

StatusOr<ClusterConfig> InClusterConfig(const GetEnvFn& getenv_fn, const ReadFileFn& read_file,
                                        const std::string& sa_dir) {
  auto host = getenv_fn("KUBERNETES_SERVICE_HOST");
  auto port = getenv_fn("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty())
    return FailedPreconditionError("not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  ClusterConfig cfg;
  const bool ipv6 = host->find(':') != std::string::npos;
  cfg.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  cfg.token_file = sa_dir + "/token";
  auto token = read_file(cfg.token_file);
  if (!token.ok()) return token.status();
  cfg.token = *token;
  auto ca = read_file(sa_dir + "/ca.crt");
  if (!ca.ok()) return ca.status();
  cfg.ca_pem = *ca;
  if (auto ns = read_file(sa_dir + "/namespace"); ns.ok()) cfg.namespace_ = *ns;
  while (!cfg.token.empty() && (cfg.token.back() == '\n' || cfg.token.back() == ' ')) cfg.token.pop_back();
  while (!cfg.namespace_.empty() && cfg.namespace_.back() == '\n') cfg.namespace_.pop_back();
  return cfg;
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::optional<std::string> GetEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

}  // namespace ringmaster::op
