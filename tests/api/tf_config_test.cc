#include "ringmaster/tf_config.h"

#include <gtest/gtest.h>

#include "ringmaster/tf_config_gen.h"

namespace ringmaster {
namespace {

constexpr char kFullJob[] = R"(
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: mnist, namespace: kubeflow}
spec:
  replicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tf, image: t}]}}
    Chief:
      template: {spec: {containers: [{name: tf, image: t}]}}
    PS:
      replicas: 1
      template: {spec: {containers: [{name: tf, image: t}]}}
    Evaluator:
      template: {spec: {containers: [{name: tf, image: t}]}}
)";

DistributedJob FullJob() {
  auto job = LoadSingleJob(kFullJob, "full.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

// The exact bytes Kubeflow's training-operator writes (Go's encoding/json of
// its TFConfig struct: cluster keys sorted, evaluator left out), with the
// per-job headless Service names of ARCHITECTURE.md.
constexpr char kCluster[] =
    R"({"cluster":{"chief":["mnist-chief-0.mnist.kubeflow.svc:2222"],"ps":["mnist-ps-0.mnist.kubeflow.svc:2222"],)"
    R"("worker":["mnist-worker-0.mnist.kubeflow.svc:2222","mnist-worker-1.mnist.kubeflow.svc:2222"]},)";

TEST(GenerateTfConfig, GoldenForEveryReplicaType) {
  DistributedJob job = FullJob();
  TfConfigOptions opts{.namespace_ = "kubeflow"};
  struct Case {
    ReplicaType type;
    int index;
    std::string task;
  } cases[] = {
      {ReplicaType::kChief, 0, R"("task":{"type":"chief","index":0},"environment":"cloud"})"},
      {ReplicaType::kWorker, 0, R"("task":{"type":"worker","index":0},"environment":"cloud"})"},
      {ReplicaType::kWorker, 1, R"("task":{"type":"worker","index":1},"environment":"cloud"})"},
      {ReplicaType::kPS, 0, R"("task":{"type":"ps","index":0},"environment":"cloud"})"},
      {ReplicaType::kEvaluator, 0, R"("task":{"type":"evaluator","index":0},"environment":"cloud"})"},
  };
  for (const auto& c : cases) {
    auto got = GenerateTfConfig(job, c.type, c.index, opts);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, std::string(kCluster) + c.task);
  }
}

TEST(GenerateTfConfig, ClusterDomainAndPort) {
  DistributedJob job = FullJob();
  job.port = 3333;
  auto got =
      GenerateTfConfig(job, ReplicaType::kPS, 0, {.namespace_ = "ns1", .cluster_domain = "cluster.local"});
  ASSERT_TRUE(got.ok());
  EXPECT_NE(got->find(R"("ps":["mnist-ps-0.mnist.ns1.svc.cluster.local:3333"])"), std::string::npos) << *got;
}

// A command-line namespace is any bytes: not UTF-8, it is replaced, not
// thrown on, and spelled as Go's encoding/json spells the replacement.
TEST(GenerateTfConfig, BytesThatAreNotUtf8DoNotThrow) {
  auto got = GenerateTfConfig(FullJob(), ReplicaType::kPS, 0, {.namespace_ = "ns\x8e"});
  ASSERT_TRUE(got.ok());
  EXPECT_NE(got->find(".ns\\ufffd.svc:"), std::string::npos) << *got;
  EXPECT_TRUE(ParseTfConfig(*got).ok());
}

// Go's encoding/json, byte for byte: HTML characters, U+2028/U+2029 and
// control bytes escaped (\b and \f short, as since Go 1.22); valid UTF-8 kept;
// each byte of a bad sequence (overlong, surrogate, truncated) is one \ufffd.
TEST(GoJsonString, EscapesAsGoDoes) {
  EXPECT_EQ(GoJsonString("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(GoJsonString("<&>"), R"("\u003c\u0026\u003e")");
  EXPECT_EQ(GoJsonString("\b\f\n\r\t\x01\x1f\x7f"), "\"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"");
  EXPECT_EQ(GoJsonString("\xe2\x80\xa8\xe2\x80\xa9"), R"("\u2028\u2029")");
  EXPECT_EQ(GoJsonString("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
  EXPECT_EQ(GoJsonString("\xc0\xaf"), R"("\ufffd\ufffd")");                      // overlong '/'
  EXPECT_EQ(GoJsonString("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");            // a surrogate
  EXPECT_EQ(GoJsonString("\xe2\x82"), R"("\ufffd\ufffd")");                      // truncated
  EXPECT_EQ(GoJsonString("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // above U+10FFFF
  EXPECT_EQ(GoJsonString(std::string_view("\0", 1)), R"("\u0000")");
}

TEST(GenerateTfConfig, SparseForm) {
  DistributedJob job = FullJob();
  TfConfigOptions opts{.namespace_ = "kubeflow", .sparse = true};
  EXPECT_EQ(*GenerateTfConfig(job, ReplicaType::kWorker, 1, opts),
            R"({"cluster":{"worker":{"1":"mnist-worker-1.mnist.kubeflow.svc:2222"},)"
            R"("ps":["mnist-ps-0.mnist.kubeflow.svc:2222"]},"task":{"type":"worker","index":1}})");
  EXPECT_EQ(
      *GenerateTfConfig(job, ReplicaType::kPS, 0, opts),
      R"({"cluster":{"worker":{},"ps":["mnist-ps-0.mnist.kubeflow.svc:2222"]},"task":{"type":"ps","index":0}})");
}

TEST(GenerateTfConfig, RejectsMissingReplica) {
  DistributedJob job = FullJob();
  auto r = GenerateTfConfig(job, ReplicaType::kWorker, 2, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("Worker:2"), std::string::npos) << r.status().message();
}

TEST(GenerateTfConfig, AddressOverride) {
  DistributedJob job = FullJob();
  auto got = GenerateTfConfig(job, ReplicaType::kChief, 0, {}, [](ReplicaType t, int i) {
    return "127.0.0.1:" + std::to_string(1000 + 10 * static_cast<int>(t) + i);
  });
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(
      *got,
      R"({"cluster":{"chief":["127.0.0.1:1000"],"ps":["127.0.0.1:1020"],"worker":["127.0.0.1:1010","127.0.0.1:1011"]},)"
      R"("task":{"type":"chief","index":0},"environment":"cloud"})");
}

TEST(ParseTfConfig, RoundTripsGeneratedConfigs) {
  DistributedJob job = FullJob();
  for (auto [type, index] : std::vector<std::pair<ReplicaType, int>>{{ReplicaType::kChief, 0},
                                                                     {ReplicaType::kWorker, 1},
                                                                     {ReplicaType::kPS, 0},
                                                                     {ReplicaType::kEvaluator, 0}}) {
    auto text = GenerateTfConfig(job, type, index, {.namespace_ = "kubeflow"});
    auto parsed = ParseTfConfig(*text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->task_type, std::string(ReplicaTypeLower(type)));
    EXPECT_EQ(parsed->task_index, index);
    EXPECT_EQ(parsed->environment, "cloud");
    EXPECT_EQ(parsed->cluster.at("worker").at(1), "mnist-worker-1.mnist.kubeflow.svc:2222");
    EXPECT_EQ(parsed->cluster.count("evaluator"), 0u);
  }
}

TEST(ParseTfConfig, GroupIsChiefThenWorkersInIndexOrder) {
  auto c = ParseTfConfig(R"({"cluster":{"worker":["w0:1","w1:1","w2:1"],"ps":["p:1"],"chief":["c:1"]},
                             "task":{"type":"worker","index":2},"rpc_layer":"grpc"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rpc_layer, "grpc");
  auto g = MakeCollectiveGroup(*c);
  ASSERT_EQ(g.members.size(), 4u);
  EXPECT_EQ(g.members[0].TaskName(), "/job:chief/task:0");
  EXPECT_EQ(g.members[1].address, "w0:1");
  EXPECT_EQ(g.members[3].TaskName(), "/job:worker/task:2");
  EXPECT_EQ(g.rank, 3);
}

TEST(ParseTfConfig, PsEvaluatorAndStandaloneAreNotMembers) {
  auto ps = ParseTfConfig(R"({"cluster":{"worker":["w0:1"],"ps":["p:1"]},"task":{"type":"ps","index":0}})");
  ASSERT_TRUE(ps.ok());
  EXPECT_FALSE(MakeCollectiveGroup(*ps).rank.has_value());
  EXPECT_EQ(MakeCollectiveGroup(*ps).members.size(), 1u);

  auto eval = ParseTfConfig(R"({"cluster":{"worker":["w0:1"]},"task":{"type":"evaluator","index":0}})");
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  EXPECT_FALSE(MakeCollectiveGroup(*eval).rank.has_value());

  auto standalone = ParseTfConfig(R"({"cluster":{"worker":["w0:1","w1:1"]}})");
  ASSERT_TRUE(standalone.ok());
  EXPECT_FALSE(standalone->task_type.has_value());
  EXPECT_FALSE(MakeCollectiveGroup(*standalone).rank.has_value());
}

TEST(ParseTfConfig, SparseCluster) {
  auto c = ParseTfConfig(R"({"cluster":{"worker":{"3":"w3:1","1":"w1:1"},"ps":["p:1"]},
                             "task":{"type":"worker","index":3}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->sparse_types, std::vector<std::string>{"worker"});
  auto g = MakeCollectiveGroup(*c);
  ASSERT_EQ(g.members.size(), 2u);
  EXPECT_EQ(g.members[0].task_index, 1);
  EXPECT_EQ(g.rank, 1);
}

TEST(ParseTfConfig, ErrorsAreInvalidArgumentAndSayWhy) {
  struct Case {
    const char* json;
    const char* expect;
  } cases[] = {
      {R"({"cluster": {"worker": ["a:1"]})", "malformed JSON"},
      // nlohmann's out_of_range, not a parse_error (found by fuzzing)
      {R"({"task":1e999})", "malformed JSON"},
      {R"([1,2])", "must be a JSON object"},
      {R"({"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":1}})",
       "task.index: 1 is out of range"},
      {R"({"cluster":{"worker":["a:1"]},"task":{"type":"chief","index":0}})",
       "'chief' is not a job in cluster"},
      {R"({"cluster":{"worker":"a:1"}})", "cluster.worker"},
      {R"({"cluster":{"worker":[1]}})", "cluster.worker[0]"},
      {R"({"cluster":{"worker":{"x":"a:1"}}})", "sparse key 'x'"},
      {R"({"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":"0"}})",
       "task.index: must be an integer"},
      {R"({"cluster":{"worker":["a:1"]},"task":{"index":0}})", "task.type"},
  };
  for (const auto& c : cases) {
    auto r = ParseTfConfig(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace ringmaster
