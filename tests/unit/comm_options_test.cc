#include "ringmaster/comm_options.h"

#include <gtest/gtest.h>

#include <map>

namespace ringmaster {
namespace {

auto EnvOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(Implementation, ParsesCaseInsensitively) {
  EXPECT_EQ(*ParseImplementation("ring", "f"), Implementation::kRing);
  EXPECT_EQ(*ParseImplementation("Nccl", "f"), Implementation::kNccl);
  EXPECT_EQ(*ParseImplementation("AUTO", "f"), Implementation::kAuto);
  auto bad = ParseImplementation("gloo", "spec.communication.implementation");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("spec.communication.implementation"), std::string::npos);
  EXPECT_NE(bad.status().message().find("gloo"), std::string::npos);
}

TEST(CommunicationOptions, ValidateNamesTheField) {
  CommunicationOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.bytes_per_pack = -1;
  EXPECT_EQ(o.Validate().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.Validate().message().find("bytes_per_pack"), std::string::npos);
  o.bytes_per_pack = 0;
  o.timeout_seconds = -0.5;
  EXPECT_NE(o.Validate().message().find("timeout_seconds"), std::string::npos);
}

TEST(CommunicationOptions, MergeIsTensorFlowsRule) {
  CommunicationOptions job{
      .bytes_per_pack = 1024, .timeout_seconds = 120, .implementation = Implementation::kRing};
  // Defaults in the per-call options keep the job's values.
  EXPECT_EQ(job.Merge(CommunicationOptions{}), job);
  // Non-default per-call values win, one by one.
  auto m = job.Merge({.bytes_per_pack = 4096});
  EXPECT_EQ(m.bytes_per_pack, 4096);
  EXPECT_EQ(m.timeout_seconds, 120);
  EXPECT_EQ(m.implementation, Implementation::kRing);
  m = job.Merge({.timeout_seconds = 5});
  EXPECT_EQ(m.timeout_seconds, 5);
  EXPECT_EQ(m.bytes_per_pack, 1024);
  m = job.Merge({.implementation = Implementation::kNccl});
  EXPECT_EQ(m.implementation, Implementation::kNccl);
  // AUTO is the default, so it cannot override RING (as in TF).
  EXPECT_EQ(job.Merge({.implementation = Implementation::kAuto}).implementation, Implementation::kRing);
  // An explicit 0 timeout is a value: it switches the deadline off.
  m = job.Merge({.timeout_seconds = 0});
  EXPECT_FALSE(m.EffectiveTimeout().has_value());
}

TEST(CommunicationOptions, EnvRoundTrip) {
  CommunicationOptions o{
      .bytes_per_pack = 32 << 20, .timeout_seconds = 2.5, .implementation = Implementation::kNccl};
  auto env = o.ToEnv();
  EXPECT_EQ(env.at("RINGMASTER_IMPLEMENTATION"), "NCCL");
  EXPECT_EQ(env.at("RINGMASTER_BYTES_PER_PACK"), "33554432");
  EXPECT_EQ(env.at("RINGMASTER_TIMEOUT_SECONDS"), "2.5");
  auto back = CommunicationOptions::FromEnv(EnvOf(env));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, o);

  CommunicationOptions none;
  EXPECT_EQ(none.ToEnv().at("RINGMASTER_TIMEOUT_SECONDS"), "0");
  auto back_none = CommunicationOptions::FromEnv(EnvOf(none.ToEnv()));
  ASSERT_TRUE(back_none.ok());
  EXPECT_EQ(*back_none, none);
  EXPECT_EQ(*CommunicationOptions::FromEnv(EnvOf({})), none);
}

TEST(CommunicationOptions, BadEnvNamesTheVariable) {
  for (auto [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"RINGMASTER_IMPLEMENTATION", "mpi"},
                                                        {"RINGMASTER_BYTES_PER_PACK", "12k"},
                                                        {"RINGMASTER_BYTES_PER_PACK", "-4"},
                                                        {"RINGMASTER_TIMEOUT_SECONDS", "soon"},
                                                        {"RINGMASTER_TIMEOUT_SECONDS", "-1"}}) {
    auto r = CommunicationOptions::FromEnv(EnvOf({{name, value}}));
    ASSERT_FALSE(r.ok()) << name << "=" << value;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace ringmaster
