#include "ringmaster/comm_options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

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

TEST(Algorithm, NamesAndParsesCaseInsensitively) {
  for (Algorithm a :
       {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kHalvingDoubling}) {
    auto back = ParseAlgorithm(AlgorithmName(a), "f");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, a);
  }
  EXPECT_EQ(AlgorithmName(Algorithm::kRecursiveDoubling), "recursive_doubling");
  EXPECT_EQ(*ParseAlgorithm("RING", "f"), Algorithm::kRing);
  EXPECT_EQ(*ParseAlgorithm("Halving_Doubling", "f"), Algorithm::kHalvingDoubling);
  EXPECT_EQ(*ParseAlgorithm("AUTO", "f"), Algorithm::kAuto);
  auto bad = ParseAlgorithm("tree", "RINGMASTER_ALGORITHM");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  const std::string message = bad.status().message();
  EXPECT_NE(message.find("RINGMASTER_ALGORITHM"), std::string::npos) << message;
  EXPECT_NE(message.find("tree"), std::string::npos) << message;
  for (const char* valid : {"auto", "ring", "recursive_doubling", "halving_doubling"}) {
    EXPECT_NE(message.find(valid), std::string::npos) << message;
  }
  EXPECT_FALSE(ParseAlgorithm("", "f").ok());
  // enums.h's aliases: the benchmarks' short names.
  EXPECT_EQ(*ParseAlgorithm("rd", "f"), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(*ParseAlgorithm("HD", "f"), Algorithm::kHalvingDoubling);
  EXPECT_FALSE(ParseAlgorithm("r", "f").ok());
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

TEST(CommunicationOptions, MergesTheAlgorithmLikeTheImplementation) {
  CommunicationOptions job{.implementation = Implementation::kRing, .algorithm = Algorithm::kHalvingDoubling};
  EXPECT_EQ(job.Merge(CommunicationOptions{}).algorithm, Algorithm::kHalvingDoubling);
  // auto is the default, so it cannot override the job's choice.
  EXPECT_EQ(job.Merge({.algorithm = Algorithm::kAuto}).algorithm, Algorithm::kHalvingDoubling);
  auto m = job.Merge({.algorithm = Algorithm::kRecursiveDoubling});
  EXPECT_EQ(m.algorithm, Algorithm::kRecursiveDoubling);
  EXPECT_EQ(m.implementation, Implementation::kRing);
  // A job on auto takes the per-call algorithm; other per-call values leave it alone.
  EXPECT_EQ(CommunicationOptions{}.Merge({.algorithm = Algorithm::kRing}).algorithm, Algorithm::kRing);
  EXPECT_EQ(job.Merge({.bytes_per_pack = 64}).algorithm, Algorithm::kHalvingDoubling);
}

TEST(CommunicationOptions, ValidateRejectsEnumsOutOfRange) {
  CommunicationOptions o{.algorithm = Algorithm::kHalvingDoubling};
  EXPECT_TRUE(o.Validate().ok());
  o.algorithm = static_cast<Algorithm>(42);
  EXPECT_EQ(o.Validate().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.Validate().message().find("algorithm"), std::string::npos);
  o.algorithm = Algorithm::kAuto;
  o.implementation = static_cast<Implementation>(-1);
  EXPECT_NE(o.Validate().message().find("implementation"), std::string::npos);
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

TEST(CommunicationOptions, AlgorithmEnvRoundTrip) {
  // Auto is written as nothing: the operator's pods keep their three variables.
  EXPECT_EQ(CommunicationOptions{}.ToEnv().size(), 3u);
  EXPECT_FALSE(CommunicationOptions{}.ToEnv().contains("RINGMASTER_ALGORITHM"));
  for (Algorithm a : {Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kHalvingDoubling}) {
    CommunicationOptions o{.timeout_seconds = 30, .algorithm = a};
    auto env = o.ToEnv();
    EXPECT_EQ(env.size(), 4u);
    EXPECT_EQ(env.at(kEnvAlgorithm), AlgorithmName(a));
    auto back = CommunicationOptions::FromEnv(EnvOf(env));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, o);
  }
  auto upper = CommunicationOptions::FromEnv(EnvOf({{"RINGMASTER_ALGORITHM", "RECURSIVE_DOUBLING"}}));
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(upper->algorithm, Algorithm::kRecursiveDoubling);
  // Empty is unset, as for the other variables; an explicit auto is auto.
  EXPECT_EQ(CommunicationOptions::FromEnv(EnvOf({{"RINGMASTER_ALGORITHM", ""}}))->algorithm,
            Algorithm::kAuto);
  EXPECT_EQ(CommunicationOptions::FromEnv(EnvOf({{"RINGMASTER_ALGORITHM", "auto"}}))->algorithm,
            Algorithm::kAuto);
}

TEST(CommunicationOptions, BadEnvNamesTheVariable) {
  for (auto [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"RINGMASTER_IMPLEMENTATION", "mpi"},
                                                        {"RINGMASTER_ALGORITHM", "tree"},
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
