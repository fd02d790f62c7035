#include "kubeconfig.h"

#include <gtest/gtest.h>

#include <map>

namespace ringmaster::op {
namespace {

ReadFileFn Files(std::map<std::string, std::string> files) {
  return [files](const std::string& path) -> StatusOr<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return NotFoundError("cannot read " + path);
    return it->second;
  };
}

// base64("CA PEM"), base64("CERT"), base64("KEY")
constexpr char kConfig[] = R"(
apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: testbed
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0EgUEVN
- name: other
  cluster:
    server: https://other:443
    certificate-authority: certs/ca.crt
contexts:
- name: admin
  context: {cluster: testbed, user: admin, namespace: team-a}
- name: bot
  context: {cluster: other, user: bot}
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: bot
  user:
    token: abc.def
)";

TEST(Kubeconfig, ClientCertificateFromInlineData) {
  auto cfg = ParseKubeconfig(kConfig, "", "/home/u/.kube", Files({}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->ca_pem, "CA PEM");
  EXPECT_EQ(cfg->client_cert_pem, "CERT");
  EXPECT_EQ(cfg->client_key_pem, "KEY");
  EXPECT_EQ(cfg->namespace_, "team-a");
  EXPECT_TRUE(cfg->token.empty());
}

TEST(Kubeconfig, TokenAndRelativeCaFileOfAnotherContext) {
  auto cfg =
      ParseKubeconfig(kConfig, "bot", "/home/u/.kube", Files({{"/home/u/.kube/certs/ca.crt", "FILE CA"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://other:443");
  EXPECT_EQ(cfg->ca_pem, "FILE CA");
  EXPECT_EQ(cfg->token, "abc.def");
  EXPECT_TRUE(cfg->client_cert_pem.empty());
}

TEST(Kubeconfig, Errors) {
  EXPECT_EQ(ParseKubeconfig(kConfig, "nope", "", Files({})).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseKubeconfig("{: [", "", "", Files({})).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseKubeconfig("clusters: []", "", "", Files({})).status().code(), StatusCode::kInvalidArgument);
  // The CA file is missing.
  EXPECT_FALSE(ParseKubeconfig(kConfig, "bot", "/x", Files({})).ok());
}

TEST(Kubeconfig, InCluster) {
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv_fn = [&](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto cfg = InClusterConfig(
      getenv_fn,
      Files({{"/sa/token", "tok\n"}, {"/sa/ca.crt", "CA"}, {"/sa/namespace", "ringmaster-system"}}), "/sa");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->token, "tok");
  EXPECT_EQ(cfg->token_file, "/sa/token");
  EXPECT_EQ(cfg->ca_pem, "CA");
  EXPECT_EQ(cfg->namespace_, "ringmaster-system");
  env.clear();
  EXPECT_EQ(InClusterConfig(getenv_fn, Files({}), "/sa").status().code(), StatusCode::kFailedPrecondition);
}

TEST(Base64, Decodes) {
  EXPECT_EQ(Base64Decode("aGVsbG8=").value(), "hello");
  EXPECT_EQ(Base64Decode("aGVs\nbG8").value(), "hello");
  EXPECT_FALSE(Base64Decode("a*b").ok());
}

TEST(Base64, EncodesRfc4648VectorsAndRoundTrips) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) EXPECT_EQ(Base64Encode(plain), encoded) << plain;
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  auto back = Base64Decode(Base64Encode(bytes));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
}

}  // namespace
}  // namespace ringmaster::op
