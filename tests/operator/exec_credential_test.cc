// Exec credential plugins: the kubeconfig stanza, the plugin's input and
// output, and when to run it again (pure: no process is started here;
// exec_plugin_test runs real ones).
#include "exec_credential.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kubeconfig.h"

namespace ringmaster::op {
namespace {

StatusOr<ClusterConfig> Parse(const std::string& exec_yaml) {
  const std::string text = R"(
current-context: eks
clusters: [{name: c, cluster: {server: "https://api.example:443", certificate-authority-data: Q0EgUEVN}}]
contexts: [{name: eks, context: {cluster: c, user: cloud}}]
users:
- name: cloud
  user:
    exec:
)" + exec_yaml;
  return ParseKubeconfig(text, "", "/home/u/.kube",
                         [](const std::string& p) -> StatusOr<std::string> { return NotFoundError(p); });
}

TEST(ExecConfig, TheStanzaAsClientGoReadsIt) {
  auto cfg = Parse(R"(
      apiVersion: client.authentication.k8s.io/v1
      command: bin/get-token
      args: [eks, get-token, --cluster-name, prod]
      env: [{name: AWS_PROFILE, value: ml}]
      installHint: install the AWS CLI
      provideClusterInfo: true
      interactiveMode: IfAvailable
)");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_TRUE(cfg->exec.has_value());
  const ExecConfig& e = *cfg->exec;
  EXPECT_EQ(e.command, "/home/u/.kube/bin/get-token");  // relative with a slash: the kubeconfig's directory
  EXPECT_EQ(e.args, (std::vector<std::string>{"eks", "get-token", "--cluster-name", "prod"}));
  ASSERT_EQ(e.env.size(), 1u);
  EXPECT_EQ(e.env[0], (std::pair<std::string, std::string>{"AWS_PROFILE", "ml"}));
  EXPECT_EQ(e.install_hint, "install the AWS CLI");
  EXPECT_TRUE(e.provide_cluster_info);
  EXPECT_EQ(e.user, "cloud");
  auto bare = Parse("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: kubelogin\n");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->exec->command, "kubelogin");  // a bare name is looked up on PATH
  EXPECT_EQ(bare->exec->interactive_mode, "Never");
}

TEST(ExecConfig, WhatClientGoRefusesIsRefusedNamingTheField) {
  auto no_command = Parse("      apiVersion: client.authentication.k8s.io/v1\n");
  EXPECT_EQ(no_command.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_command.status().message().find("exec.command"), std::string::npos);
  auto alpha = Parse("      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x\n");
  EXPECT_NE(alpha.status().message().find("exec.apiVersion"), std::string::npos) << alpha.status().ToString();
  auto always = Parse(
      "      apiVersion: client.authentication.k8s.io/v1\n      command: x\n      interactiveMode: Always\n");
  EXPECT_EQ(always.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(always.status().message().find("needs a terminal"), std::string::npos);
  auto env =
      Parse("      apiVersion: client.authentication.k8s.io/v1\n      command: x\n      env: [{value: v}]\n");
  EXPECT_NE(env.status().message().find("exec.env"), std::string::npos) << env.status().ToString();
}

ExecConfig V1() {
  ExecConfig e;
  e.api_version = "client.authentication.k8s.io/v1";
  e.command = "get-token";
  e.user = "cloud";
  return e;
}

TEST(ExecInfo, CarriesTheClusterOnlyWhenAskedTo) {
  ExecConfig e = V1();
  auto info = nlohmann::json::parse(ExecInfoJson(e, "https://api:443", "CA PEM", false));
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["apiVersion"], e.api_version);
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_FALSE(info["spec"].contains("cluster"));
  e.provide_cluster_info = true;
  info = nlohmann::json::parse(ExecInfoJson(e, "https://api:443", "CA PEM", false));
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://api:443");
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"], "Q0EgUEVN");
}

TEST(ExecCredentialOutput, ATokenWithItsExpiry) {
  auto c =
      ParseExecCredential(V1(), R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
      "status":{"token":"t0k","expirationTimestamp":"2026-11-25T12:00:00Z"}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "t0k");
  ASSERT_TRUE(c->expires_unix.has_value());
  EXPECT_FALSE(NeedsRefresh(*c, *c->expires_unix - 60));
  EXPECT_TRUE(NeedsRefresh(*c, *c->expires_unix - 5));  // refreshed a little early
  EXPECT_TRUE(NeedsRefresh(*c, *c->expires_unix + 1));
  auto forever = ParseExecCredential(V1(), R"({"apiVersion":"client.authentication.k8s.io/v1",
      "kind":"ExecCredential","status":{"token":"x"}})");
  ASSERT_TRUE(forever.ok());
  EXPECT_FALSE(NeedsRefresh(*forever, 4'000'000'000));  // until a 401
}

TEST(ExecCredentialOutput, BadOutputNamesThePluginAndTheField) {
  struct Case {
    const char* out;
    const char* says;
  } cases[] = {
      {"not json", "printed no ExecCredential JSON"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Pod","status":{"token":"x"}})",
       "kind is 'Pod'"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"x"}})",
       "apiVersion is 'client.authentication.k8s.io/v1beta1'"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})", "has no status"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})",
       "neither token nor clientCertificateData"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
           "status":{"clientCertificateData":"C"}})",
       "come together"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
           "status":{"token":"x","expirationTimestamp":"tomorrow"}})",
       "expirationTimestamp 'tomorrow'"},
  };
  for (const Case& c : cases) {
    auto got = ParseExecCredential(V1(), c.out);
    ASSERT_FALSE(got.ok()) << c.out;
    EXPECT_NE(got.status().message().find(c.says), std::string::npos) << got.status().ToString();
    EXPECT_NE(got.status().message().find("exec plugin 'get-token' of kubeconfig user 'cloud'"),
              std::string::npos);
  }
}

TEST(ExecFailure, SaysHowToInstallOrWhatThePluginSaid) {
  ExecConfig e = V1();
  e.install_hint = "brew install get-token";
  EXPECT_NE(ExecFailureMessage(e, 127, "", true).find("not found\nbrew install get-token"),
            std::string::npos);
  const std::string m = ExecFailureMessage(e, 3, "token expired: run aws sso login\n", false);
  EXPECT_NE(m.find("exit code 3: token expired: run aws sso login"), std::string::npos) << m;
}

}  // namespace
}  // namespace ringmaster::op
