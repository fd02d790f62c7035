// RunExecPlugin with real processes (shell scripts in a temporary
// directory): what the plugin receives, and every way it can fail.
#include "exec_plugin.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace ringmaster::op {
namespace {

class ExecPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rm-exec-plugin.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)!system(("rm -rf " + dir_).c_str()); }

  // A plugin script with `body` (sh).
  std::string Script(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    chmod(path.c_str(), 0755);
    return path;
  }

  ClusterConfig Cluster(const std::string& command) {
    ClusterConfig c;
    c.server = "https://api.example:443";
    c.ca_pem = "CA";
    ExecConfig e;
    e.api_version = "client.authentication.k8s.io/v1";
    e.command = command;
    e.user = "cloud";
    e.provide_cluster_info = true;
    c.exec = e;
    return c;
  }

  std::string dir_;
};

TEST_F(ExecPluginTest, GetsArgsEnvAndExecInfoAndReturnsTheToken) {
  const std::string seen = dir_ + "/seen";
  ClusterConfig c =
      Cluster(Script("plugin", "printf '%s\\n' \"$1 $2 $PLUGIN_ENV\" > " + seen +
                                   "\nprintf '%s' \"$KUBERNETES_EXEC_INFO\" >> " + seen +
                                   "\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                                   "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"s3cret\"}}'\n"));
  c.exec->args = {"get-token", "--prod"};
  c.exec->env = {{"PLUGIN_ENV", "from-kubeconfig"}};
  auto cred = RunExecPlugin(c);
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  EXPECT_EQ(cred->token, "s3cret");
  std::ifstream in(seen);
  std::string line, info;
  std::getline(in, line);
  std::getline(in, info);
  EXPECT_EQ(line, "get-token --prod from-kubeconfig");
  auto j = nlohmann::json::parse(info);
  EXPECT_EQ(j["spec"]["cluster"]["server"], "https://api.example:443");
}

TEST_F(ExecPluginTest, AMissingCommandGivesTheInstallHint) {
  ClusterConfig c = Cluster(dir_ + "/no-such-plugin");
  c.exec->install_hint = "install it with: apt install no-such-plugin";
  auto cred = RunExecPlugin(c);
  EXPECT_EQ(cred.status().code(), StatusCode::kNotFound);
  EXPECT_NE(cred.status().message().find("apt install no-such-plugin"), std::string::npos)
      << cred.status().ToString();
}

TEST_F(ExecPluginTest, AFailingPluginIsUnauthenticatedWithItsStderr) {
  auto cred = RunExecPlugin(Cluster(Script("fails", "echo 'session expired: log in again' >&2\nexit 4\n")));
  EXPECT_EQ(cred.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(cred.status().message().find("exit code 4: session expired: log in again"), std::string::npos)
      << cred.status().ToString();
}

TEST_F(ExecPluginTest, AHangingPluginIsKilledAfterTheTimeout) {
  auto cred = RunExecPlugin(Cluster(Script("hangs", "exec sleep 30\n")), std::chrono::seconds(1));
  EXPECT_EQ(cred.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(cred.status().message().find("did not finish within 1s"), std::string::npos)
      << cred.status().ToString();
}

TEST_F(ExecPluginTest, GarbageOnStdoutNamesThePlugin) {
  auto cred = RunExecPlugin(Cluster(Script("garbage", "echo hello\n")));
  EXPECT_EQ(cred.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cred.status().message().find("printed no ExecCredential JSON"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::op
