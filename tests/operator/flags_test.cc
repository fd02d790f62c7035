// The operator's flags: both spellings, booleans, ranges, environment
// defaults a flag overrides, and errors that name the flag.
#include "flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace ringmaster::op {
namespace {

class OperatorFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { ClearEnv(); }
  void TearDown() override { ClearEnv(); }
  static void ClearEnv() {
    for (const char* v : {"RINGMASTER_NAMESPACES", "RINGMASTER_WORKERS", "RINGMASTER_QPS", "RINGMASTER_BURST",
                          "POD_NAMESPACE", "POD_NAME"}) {
      unsetenv(v);
    }
  }
  static std::string Error(const std::vector<std::string>& args) {
    auto f = ParseOperatorFlags(args);
    EXPECT_FALSE(f.ok()) << "accepted";
    return f.ok() ? "" : std::string(f.status().message());
  }
};

TEST_F(OperatorFlagsTest, DefaultsAreTheDocumentedOnes) {
  auto f = ParseOperatorFlags({});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->workers, 8);
  EXPECT_EQ(f->qps, 500);
  EXPECT_EQ(f->burst, 1000);
  EXPECT_EQ(f->resync_seconds, 300);
  EXPECT_TRUE(f->leader_elect);
  EXPECT_FALSE(f->network_policy);
  EXPECT_EQ(f->leader.namespace_, "ringmaster-system");
  EXPECT_EQ(f->leader.name, "ringmaster-operator");
  EXPECT_EQ(f->leader.lease_duration.count(), 15);
  EXPECT_EQ(f->metrics_address, ":8080");
  EXPECT_EQ(f->probe_address, ":8081");
  EXPECT_TRUE(f->namespaces.empty());
  EXPECT_FALSE(f->log_level.has_value());
  EXPECT_TRUE(f->help.empty());
}

TEST_F(OperatorFlagsTest, SpaceAndEqualsSpellingsAgree) {
  auto spaced = ParseOperatorFlags({"--workers", "3", "--kubeconfig", "/k", "--lease-duration", "30",
                                    "--renew-deadline", "20", "--log-level", "debug"});
  auto equals = ParseOperatorFlags(
      {"--workers=3", "--kubeconfig=/k", "--lease-duration=30", "--renew-deadline=20", "--log-level=debug"});
  ASSERT_TRUE(spaced.ok()) << spaced.status().ToString();
  ASSERT_TRUE(equals.ok()) << equals.status().ToString();
  for (const auto* f : {&*spaced, &*equals}) {
    EXPECT_EQ(f->workers, 3);
    EXPECT_EQ(f->kubeconfig, "/k");
    EXPECT_EQ(f->leader.lease_duration.count(), 30);
    EXPECT_EQ(f->leader.renew_deadline.count(), 20);
    EXPECT_EQ(f->log_level, LogLevel::kDebug);
  }
}

TEST_F(OperatorFlagsTest, AFlagGivenTwiceTakesItsLastValue) {
  auto f = ParseOperatorFlags(
      {"--leader-election-namespace", "a", "--workers=2", "--leader-election-namespace=b", "--workers", "5"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->leader.namespace_, "b");
  EXPECT_EQ(f->workers, 5);
}

TEST_F(OperatorFlagsTest, BooleansTakeTheBareFormAndExplicitValues) {
  auto f = ParseOperatorFlags({"--leader-elect=false", "--network-policy", "--tfjob"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_FALSE(f->leader_elect);
  EXPECT_TRUE(f->network_policy);
  EXPECT_TRUE(f->tfjob);
  f = ParseOperatorFlags({"--leader-elect=true", "--network-policy=false"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(f->leader_elect);
  EXPECT_FALSE(f->network_policy);
  EXPECT_FALSE(f->tfjob) << "TFJobs are opt-in";
  EXPECT_NE(Error({"--leader-elect=maybe"}).find("--leader-elect"), std::string::npos);
}

TEST_F(OperatorFlagsTest, GangSchedulingIsAutoUnlessTurnedOff) {
  auto f = ParseOperatorFlags({});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->gang_scheduling, "auto");
  f = ParseOperatorFlags({"--gang-scheduling=off"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->gang_scheduling, "off");
}

TEST_F(OperatorFlagsTest, NamespacesAreCommaSeparatedOrRepeated) {
  auto f = ParseOperatorFlags({"--namespace", "a,b", "--namespaces=c", "--namespace", "d"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->namespaces, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST_F(OperatorFlagsTest, EnvironmentIsTheDefaultAndAFlagOverridesIt) {
  setenv("RINGMASTER_NAMESPACES", "x,y", 1);
  setenv("RINGMASTER_WORKERS", "4", 1);
  setenv("POD_NAMESPACE", "ops", 1);
  setenv("POD_NAME", "op-0", 1);
  auto f = ParseOperatorFlags({});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->namespaces, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(f->workers, 4);
  EXPECT_EQ(f->leader.namespace_, "ops");
  EXPECT_EQ(f->leader.identity, "op-0");
  f = ParseOperatorFlags({"--workers=2", "--leader-election-namespace=mine"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->workers, 2);
  EXPECT_EQ(f->leader.namespace_, "mine");
  setenv("RINGMASTER_WORKERS", "many", 1);
  EXPECT_NE(Error({}).find("--workers"), std::string::npos);
}

TEST_F(OperatorFlagsTest, ErrorsNameTheFlag) {
  EXPECT_NE(Error({"--workers=0"}).find("--workers"), std::string::npos);
  EXPECT_NE(Error({"--workers=300"}).find("--workers"), std::string::npos);
  EXPECT_NE(Error({"--qps=fast"}).find("--qps"), std::string::npos);
  EXPECT_NE(Error({"--log-level=loud"}).find("--log-level"), std::string::npos);
  EXPECT_NE(Error({"--gang-scheduling=maybe"}).find("--gang-scheduling"), std::string::npos);
  EXPECT_NE(Error({"--kubeconfig"}).find("--kubeconfig"), std::string::npos);
  EXPECT_NE(Error({"--frobnicate"}).find("--frobnicate"), std::string::npos);
  EXPECT_NE(Error({"stray"}).find("stray"), std::string::npos);
  const std::string renew = Error({"--lease-duration=10", "--renew-deadline=10"});
  EXPECT_NE(renew.find("--renew-deadline"), std::string::npos) << renew;
  EXPECT_NE(renew.find("--lease-duration"), std::string::npos) << renew;
}

TEST_F(OperatorFlagsTest, HelpListsEveryFlagWithItsEnvironmentVariable) {
  auto f = ParseOperatorFlags({"--workers=3", "--help"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (const char* s :
       {"--kubeconfig", "--namespace", "--workers", "RINGMASTER_WORKERS", "--leader-elect",
        "--leader-election-namespace", "POD_NAMESPACE", "--metrics-address", "--health-probe-address",
        "--log-level", "--network-policy", "--tfjob", "--gang-scheduling", "Leader election"}) {
    EXPECT_NE(f->help.find(s), std::string::npos) << s << "\n" << f->help;
  }
}

}  // namespace
}  // namespace ringmaster::op
