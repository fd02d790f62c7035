#include "pod_builder.h"

#include <gtest/gtest.h>

#include <map>

#include "base64.h"
#include "names.h"
#include "observe.h"
#include "ringmaster/env_expand.h"
#include "ringmaster/replica_env.h"
#include "ringmaster/tf_config_gen.h"
#include "test_util.h"
#include "tfjob_objects.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

DistributedJob Decode(const json& obj) {
  LoadedJob l = DecodeJob(obj);
  EXPECT_TRUE(l.job.has_value());
  return *l.job;
}

std::string EnvValue(const json& container, const std::string& name) {
  for (const auto& e : container["env"]) {
    if (e["name"] == name) return e["value"];
  }
  return "<absent>";
}

int EnvCount(const json& container, const std::string& name) {
  int n = 0;
  for (const auto& e : container["env"]) n += e["name"] == name;
  return n;
}

TEST(PodBuilder, TfConfigIsExactlyWhatTheCliPrintsForTheExampleFile) {
  // The same file `ringmaster tfconfig examples/quickstart.yaml --namespace team-a` reads.
  std::ifstream in(std::string(RINGMASTER_SOURCE_DIR) + "/examples/quickstart.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  auto from_file = LoadSingleJob(ss.str(), "quickstart.yaml");
  ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
  const DistributedJob job = Decode(testing::QuickstartObject("team-a"));
  for (auto [type, index] : {std::pair{ReplicaType::kChief, 0}, std::pair{ReplicaType::kWorker, 1}}) {
    TfConfigOptions opts;
    opts.namespace_ = "team-a";
    auto expected = GenerateTfConfig(*from_file, type, index, opts);
    ASSERT_TRUE(expected.ok());
    auto built = BuildPod(job, {type, index}, {});
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    EXPECT_EQ(EnvValue(built->pod["spec"]["containers"][0], "TF_CONFIG"), *expected);
  }
  auto built = BuildPod(job, {ReplicaType::kWorker, 1}, {});
  EXPECT_EQ(
      EnvValue(built->pod["spec"]["containers"][0], "TF_CONFIG"),
      R"({"cluster":{"chief":["quickstart-chief-0.quickstart.team-a.svc:2222"],)"
      R"("worker":["quickstart-worker-0.quickstart.team-a.svc:2222","quickstart-worker-1.quickstart.team-a.svc:2222"]},)"
      R"("task":{"type":"worker","index":1},"environment":"cloud"})");
}

TEST(PodBuilder, NamesLabelsOwnerAndStableDns) {
  const DistributedJob job = Decode(testing::QuickstartObject());
  auto built = BuildPod(job, {ReplicaType::kWorker, 1}, {});
  ASSERT_TRUE(built.ok());
  const json& pod = built->pod;
  EXPECT_EQ(pod["metadata"]["name"], "quickstart-worker-1");
  EXPECT_EQ(pod["metadata"]["namespace"], "team-a");
  EXPECT_EQ(pod["metadata"]["labels"][kLabelJobName], "quickstart");
  EXPECT_EQ(pod["metadata"]["labels"][kLabelReplicaType], "worker");
  EXPECT_EQ(pod["metadata"]["labels"][kLabelReplicaIndex], "1");
  ASSERT_EQ(pod["metadata"]["ownerReferences"].size(), 1u);
  const json& ref = pod["metadata"]["ownerReferences"][0];
  EXPECT_EQ(ref["uid"], "uid-1234");
  EXPECT_EQ(ref["kind"], "DistributedJob");
  EXPECT_EQ(ref["apiVersion"], "ringmaster.io/v1alpha1");
  EXPECT_EQ(ref["controller"], true);
  EXPECT_EQ(ref["blockOwnerDeletion"], true);
  EXPECT_EQ(pod["spec"]["hostname"], "quickstart-worker-1");
  EXPECT_EQ(pod["spec"]["subdomain"], "quickstart");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "ghcr.io/ringmaster/worker:0.1.0");
}

TEST(PodBuilder, AQueuedJobIsOneKueuePodGroupWithItsPriority) {
  json obj = testing::QuickstartObject();
  obj["spec"]["runPolicy"]["schedulingPolicy"] = {{"queue", "team-a"}, {"priorityClass", "high"}};
  const DistributedJob job = Decode(obj);
  for (const ReplicaKey key : {ReplicaKey{ReplicaType::kChief, 0}, ReplicaKey{ReplicaType::kWorker, 1}}) {
    auto built = BuildPod(job, key, {});
    ASSERT_TRUE(built.ok());
    const json& meta = built->pod["metadata"];
    EXPECT_EQ(meta["labels"][kKueueQueueLabel], "team-a");
    // The job and its uid: a job made again under the same name is a new group.
    EXPECT_EQ(meta["labels"][kKueuePodGroupLabel], "quickstart-uid1234");
    EXPECT_EQ(meta["annotations"][kKueuePodGroupCountAnnotation], "3");  // every pod of the job
    EXPECT_EQ(built->pod["spec"]["priorityClassName"], "high");
  }
  // Not queued: none of Kueue's names, and the template's priority kept.
  obj = testing::QuickstartObject();
  obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "mine";
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  EXPECT_FALSE(built->pod["metadata"]["labels"].contains(kKueueQueueLabel));
  EXPECT_FALSE(built->pod["metadata"]["labels"].contains(kKueuePodGroupLabel));
  EXPECT_EQ(built->pod["spec"]["priorityClassName"], "mine");
}

TEST(Observe, AGatedPodWaitsForAdmission) {
  json pod = {{"metadata", {{"labels", {{kLabelReplicaType, "worker"}, {kLabelReplicaIndex, "0"}}}}},
              {"spec", {{"schedulingGates", json::array({{{"name", kKueueAdmissionGate}}})}}},
              {"status", {{"phase", "Pending"}}}};
  auto o = ObservePod(pod);
  ASSERT_TRUE(o.has_value());
  EXPECT_TRUE(o->gated);
  pod["spec"]["schedulingGates"] = json::array();  // admitted: Kueue removed the gate
  EXPECT_FALSE(ObservePod(pod)->gated);
  pod["spec"].erase("schedulingGates");
  EXPECT_FALSE(ObservePod(pod)->gated);
}

// Only Kueue's gate says the queue has not admitted the pod: another one
// (a user's, another scheduler's) is not a wait for the LocalQueue.
TEST(Observe, OnlyKueuesGateIsAWaitForAdmission) {
  json pod = {{"metadata", {{"labels", {{kLabelReplicaType, "worker"}, {kLabelReplicaIndex, "0"}}}}},
              {"spec", {{"schedulingGates", json::array({{{"name", "example.com/quota"}}})}}},
              {"status", {{"phase", "Pending"}}}};
  EXPECT_FALSE(ObservePod(pod)->gated);
  pod["spec"]["schedulingGates"].push_back({{"name", kKueueAdmissionGate}});
  EXPECT_TRUE(ObservePod(pod)->gated);
  pod["spec"]["schedulingGates"] = json::array({"not-an-object", {{"name", 7}}});
  EXPECT_FALSE(ObservePod(pod)->gated);
}

TEST(PodBuilder, CommunicationEnvAndPortInEveryContainer) {
  json obj = testing::QuickstartObject();
  obj["spec"]["communication"] = {{"implementation", "RING"}, {"bytesPerPack", 4096}, {"timeoutSeconds", 30}};
  auto& containers = obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"];
  containers.push_back({{"name", "sidecar"}, {"image", "busybox"}});
  const DistributedJob job = Decode(obj);
  auto built = BuildPod(job, {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  const json& cs = built->pod["spec"]["containers"];
  ASSERT_EQ(cs.size(), 2u);
  for (const auto& c : cs) {
    EXPECT_EQ(EnvValue(c, "RINGMASTER_IMPLEMENTATION"), "RING");
    EXPECT_EQ(EnvValue(c, "RINGMASTER_BYTES_PER_PACK"), "4096");
    EXPECT_NE(EnvValue(c, "RINGMASTER_TIMEOUT_SECONDS"), "<absent>");
    EXPECT_EQ(EnvCount(c, "TF_CONFIG"), 1);
  }
  ASSERT_TRUE(cs[0].contains("ports"));
  EXPECT_EQ(cs[0]["ports"][0]["containerPort"], 2222);
  EXPECT_FALSE(cs[1].contains("ports"));
  // The agent's own port beside TensorFlow's server: the same in every pod.
  for (const auto& c : cs) EXPECT_EQ(EnvValue(c, "RINGMASTER_PORT"), "2223");
  ASSERT_EQ(cs[0]["ports"].size(), 2u);
  EXPECT_EQ(cs[0]["ports"][1]["containerPort"], 2223);
  EXPECT_EQ(cs[0]["ports"][1]["name"], "rm-agent");
}

TEST(PodBuilder, ContainersOwnAgentPortIsKept) {
  json obj = testing::QuickstartObject();
  obj["spec"]["port"] = 65535;
  auto& c0 = obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0];
  c0["env"] = {{{"name", "RINGMASTER_PORT"}, {"value", "9000"}}};
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  const json& c = built->pod["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(c, "RINGMASTER_PORT"), "9000");
  EXPECT_EQ(EnvCount(c, "RINGMASTER_PORT"), 1);
  // 65535 has no next port: the agent's default is the one below.
  EXPECT_EQ(c["ports"][1]["containerPort"], 65534);
}

TEST(PodBuilder, ExistingPortIsNotAddedTwice) {
  json obj = testing::QuickstartObject();
  obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = {
      {{"name", "grpc"}, {"containerPort", 2222}}};
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->pod["spec"]["containers"][0]["ports"].size(), 2u);  // and the agent's
  EXPECT_EQ(built->pod["spec"]["containers"][0]["ports"][0]["name"], "grpc");
}

// The template is the user's: fields of another type than Kubernetes' are
// left for the API server to reject, not thrown on (found by fuzzing).
TEST(PodBuilder, TemplateFieldsOfAnyTypeDoNotThrow) {
  json obj = testing::QuickstartObject();
  json& pod_spec = obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"];
  pod_spec["volumes"] = {{{"name", 7}}, "not an object"};
  json& c = pod_spec["containers"][0];
  c["ports"] = {{{"containerPort", "2222"}}, {{"containerPort", nullptr}}};
  c["env"] = {{{"name", 1}}, {{"name", nullptr}}};
  c["volumeMounts"] = {{{"name", false}, {"mountPath", 3}}};
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_GT(built->pod["spec"]["containers"][0]["ports"].size(), 2u);  // the template's two, and ours
}

TEST(PodBuilder, ContainersOwnTfConfigIsKeptWithAWarning) {
  json obj = testing::QuickstartObject();
  obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "TF_CONFIG"}, {"value", "{\"mine\":1}"}}};
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  const json& c = built->pod["spec"]["containers"][0];
  EXPECT_EQ(EnvCount(c, "TF_CONFIG"), 1);
  EXPECT_EQ(EnvValue(c, "TF_CONFIG"), "{\"mine\":1}");
  ASSERT_EQ(built->events.size(), 1u);
  EXPECT_TRUE(built->events[0].warning);
  EXPECT_EQ(built->events[0].reason, "TfConfigKept");
}

TEST(PodBuilder, RestartPolicyMapping) {
  const std::pair<const char*, const char*> cases[] = {
      {"Never", "Never"}, {"OnFailure", "OnFailure"}, {"Always", "Always"}, {"ExitCode", "Never"}};
  for (auto [policy, pod_policy] : cases) {
    json obj = testing::QuickstartObject();
    obj["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = policy;
    auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
    ASSERT_TRUE(built.ok());
    EXPECT_EQ(built->pod["spec"]["restartPolicy"], pod_policy) << policy;
  }
}

// runPolicy.recovery InPlace: the operator replaces a failed pod itself at
// once (the kubelet's restart waits out its crash-loop backoff on repeated failures), and the
// program is told it may recover in place.
TEST(PodBuilder, RecoveryInPlaceLeavesRestartsToTheOperator) {
  for (const char* policy : {"OnFailure", "Always", "ExitCode"}) {
    json obj = testing::QuickstartObject();
    obj["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = policy;
    obj["spec"]["runPolicy"]["recovery"] = "InPlace";
    auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
    ASSERT_TRUE(built.ok());
    EXPECT_EQ(built->pod["spec"]["restartPolicy"], "Never") << policy;
    EXPECT_EQ(EnvValue(built->pod["spec"]["containers"][0], "RINGMASTER_RECOVERY"), "InPlace") << policy;
  }
}

TEST(PodBuilder, TemplateLabelsAndAnnotationsAreKept) {
  json obj = testing::QuickstartObject();
  obj["spec"]["replicaSpecs"]["Worker"]["template"]["metadata"] = {{"labels", {{"team", "ml"}}},
                                                                   {"annotations", {{"a", "b"}}}};
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->pod["metadata"]["labels"]["team"], "ml");
  EXPECT_EQ(built->pod["metadata"]["annotations"]["a"], "b");
  EXPECT_EQ(built->pod["metadata"]["labels"][kLabelJobName], "quickstart");
}

TEST(PodBuilder, ClusterDomainReachesTfConfig) {
  auto built = BuildPod(Decode(testing::QuickstartObject()), {ReplicaType::kChief, 0}, {"cluster.local"});
  ASSERT_TRUE(built.ok());
  EXPECT_NE(EnvValue(built->pod["spec"]["containers"][0], "TF_CONFIG").find("svc.cluster.local:2222"),
            std::string::npos);
}

TEST(PodBuilder, UnknownReplicaIsInvalidArgument) {
  auto built = BuildPod(Decode(testing::QuickstartObject()), {ReplicaType::kWorker, 5}, {});
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), StatusCode::kInvalidArgument);
}

TEST(ServiceBuilder, HeadlessPublishesNotReadyAddresses) {
  const json svc = BuildService(Decode(testing::QuickstartObject()));
  EXPECT_EQ(svc["metadata"]["name"], "quickstart");
  EXPECT_EQ(svc["metadata"]["namespace"], "team-a");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc["spec"]["selector"][kLabelJobName], "quickstart");
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], 2222);
  EXPECT_EQ(svc["metadata"]["ownerReferences"][0]["uid"], "uid-1234");
}

TEST(PodBuilder, EnvIsTheSharedReplicaEnvInItsOrder) {
  const DistributedJob job = Decode(testing::QuickstartObject());
  auto built = BuildPod(job, {ReplicaType::kChief, 0}, {});
  ASSERT_TRUE(built.ok());
  ReplicaEnvOptions opts;
  opts.tf_config.namespace_ = "team-a";
  opts.job_key_file = kJobKeyFile;
  auto expected = BuildReplicaEnv(job, {ReplicaType::kChief, 0}, opts);
  ASSERT_TRUE(expected.ok());
  json want = json::array();
  for (const auto& [name, value] : *expected) want.push_back({{"name", name}, {"value", value}});
  EXPECT_EQ(built->pod["spec"]["containers"][0]["env"], want);
  EXPECT_EQ(EnvValue(built->pod["spec"]["containers"][0], "RINGMASTER_TERMINATION_LOG"), "<absent>");
}

TEST(PodBuilder, TerminationMessageFallsBackToLogsUnlessTheContainerSaysOtherwise) {
  json obj = testing::QuickstartObject();
  auto& containers = obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"];
  containers.push_back({{"name", "own"},
                        {"image", "busybox"},
                        {"terminationMessagePolicy", "File"},
                        {"terminationMessagePath", "/tmp/verdict"}});
  containers.push_back(
      {{"name", "default-path"}, {"image", "busybox"}, {"terminationMessagePath", "/dev/termination-log"}});
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  const json& cs = built->pod["spec"]["containers"];
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0]["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(cs[1]["terminationMessagePolicy"], "File");
  EXPECT_EQ(cs[2]["terminationMessagePolicy"], "FallbackToLogsOnError");
  // The agent writes where the kubelet reads: a path of the container's own.
  EXPECT_EQ(EnvValue(cs[0], "RINGMASTER_TERMINATION_LOG"), "<absent>");
  EXPECT_EQ(EnvValue(cs[1], "RINGMASTER_TERMINATION_LOG"), "/tmp/verdict");
  EXPECT_EQ(EnvValue(cs[2], "RINGMASTER_TERMINATION_LOG"), "<absent>");
}

}  // namespace
}  // namespace ringmaster::op

namespace ringmaster::op {
namespace {

json KeyVolume(const json& pod) {
  json found;
  int n = 0;
  for (const auto& v : pod["spec"]["volumes"]) {
    if (v["name"] == kJobKeyVolume) {
      found = v;
      ++n;
    }
  }
  EXPECT_EQ(n, 1) << pod["spec"]["volumes"].dump();
  return found;
}

std::vector<json> KeyMounts(const json& container) {
  std::vector<json> out;
  for (const auto& m : container["volumeMounts"]) {
    if (m["mountPath"] == kJobKeyMountPath) out.push_back(m);
  }
  return out;
}

TEST(JobKey, EveryContainerOfEveryReplicaMountsTheGeneratedSecretReadOnly) {
  json obj = testing::QuickstartObject();
  obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"].push_back(
      {{"name", "sidecar"}, {"image", "busybox"}});
  const DistributedJob job = Decode(obj);
  for (auto key : {ReplicaKey{ReplicaType::kChief, 0}, ReplicaKey{ReplicaType::kWorker, 1}}) {
    auto built = BuildPod(job, key, {});
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    const json& pod = built->pod;
    EXPECT_EQ(KeyVolume(pod), json::parse(R"({"name": "ringmaster-job-key", "secret": {
        "secretName": "quickstart-ringmaster-key", "items": [{"key": "key", "path": "key"}],
        "defaultMode": 292}})"));
    for (const auto& c : pod["spec"]["containers"]) {
      auto mounts = KeyMounts(c);
      ASSERT_EQ(mounts.size(), 1u) << c.dump();
      EXPECT_EQ(mounts[0], json::parse(R"({"name": "ringmaster-job-key",
          "mountPath": "/var/run/secrets/ringmaster.io/job-key", "readOnly": true})"));
      EXPECT_EQ(EnvValue(c, "RINGMASTER_JOB_KEY_FILE"), "/var/run/secrets/ringmaster.io/job-key/key");
    }
  }
  EXPECT_EQ(std::string(kJobKeyFile), std::string(kJobKeyMountPath) + "/" + kJobKeyItem);
  EXPECT_EQ(kJobKeyFileMode, 0444);
}

TEST(JobKey, KeySecretRefMountsTheUsersItemAsTheSameFile) {
  json obj = testing::QuickstartObject();
  obj["spec"]["communication"]["keySecretRef"] = {{"name", "team.keys"}, {"key", "job-key.bin"}};
  const DistributedJob job = Decode(obj);
  EXPECT_EQ(JobKeySecretName(job), "team.keys");
  auto built = BuildPod(job, {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  const json v = KeyVolume(built->pod);
  EXPECT_EQ(v["secret"]["secretName"], "team.keys");
  EXPECT_EQ(v["secret"]["items"], json::parse(R"([{"key": "job-key.bin", "path": "key"}])"));
  EXPECT_EQ(EnvValue(built->pod["spec"]["containers"][0], "RINGMASTER_JOB_KEY_FILE"), kJobKeyFile);
}

TEST(JobKey, TemplateVolumesAndTheContainersOwnMountsAndEnvAreRespected) {
  json obj = testing::QuickstartObject();
  json& spec = obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"];
  spec["volumes"] = json::parse(R"([{"name": "data", "emptyDir": {}},
                                    {"name": "ringmaster-job-key", "emptyDir": {}}])");
  spec["containers"][0]["volumeMounts"] = json::parse(R"([{"name": "data", "mountPath": "/data"}])");
  spec["containers"].push_back(json::parse(R"({"name": "own", "image": "busybox",
      "volumeMounts": [{"name": "data", "mountPath": "/var/run/secrets/ringmaster.io/job-key"}],
      "env": [{"name": "RINGMASTER_JOB_KEY_FILE", "value": "/data/k"}]})"));
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  const json& pod = built->pod;
  // The operator's volume replaces a template volume of its name; others stay.
  ASSERT_EQ(pod["spec"]["volumes"].size(), 2u);
  EXPECT_EQ(pod["spec"]["volumes"][0]["name"], "data");
  EXPECT_TRUE(KeyVolume(pod)["secret"].is_object());
  const json& c0 = pod["spec"]["containers"][0];
  ASSERT_EQ(c0["volumeMounts"].size(), 2u);
  EXPECT_EQ(c0["volumeMounts"][0]["mountPath"], "/data");
  // A container with its own mount at the path (and its own variable) keeps both.
  const json& own = pod["spec"]["containers"][1];
  ASSERT_EQ(KeyMounts(own).size(), 1u);
  EXPECT_EQ(KeyMounts(own)[0]["name"], "data");
  EXPECT_EQ(EnvCount(own, "RINGMASTER_JOB_KEY_FILE"), 1);
  EXPECT_EQ(EnvValue(own, "RINGMASTER_JOB_KEY_FILE"), "/data/k");
}

TEST(JobKey, GeneratedSecretIsOpaqueOwnedByTheJobAndGetsTheKeyOnlyFromTheShell) {
  const DistributedJob job = Decode(testing::QuickstartObject());
  auto secret = BuildKeySecret(job);
  ASSERT_TRUE(secret.has_value());
  EXPECT_EQ((*secret)["apiVersion"], "v1");
  EXPECT_EQ((*secret)["kind"], "Secret");
  EXPECT_EQ((*secret)["type"], "Opaque");
  EXPECT_EQ((*secret)["metadata"]["name"], "quickstart-ringmaster-key");
  EXPECT_EQ((*secret)["metadata"]["namespace"], "team-a");
  EXPECT_EQ((*secret)["metadata"]["labels"][kLabelJobName], "quickstart");
  EXPECT_EQ((*secret)["metadata"]["ownerReferences"], json::array({OwnerReference(job)}));
  const json& ref = (*secret)["metadata"]["ownerReferences"][0];
  EXPECT_EQ(ref["uid"], "uid-1234");
  EXPECT_EQ(ref["kind"], "DistributedJob");
  EXPECT_EQ(ref["controller"], true);
  EXPECT_EQ(ref["blockOwnerDeletion"], true);
  EXPECT_FALSE(secret->contains("data"));
  EXPECT_TRUE(ControlledBy(*secret, "uid-1234"));

  const std::string key(32, '\xff');
  const json with = WithJobKey(*secret, key);
  ASSERT_EQ(with["data"].size(), 1u);
  auto decoded = Base64Decode(with["data"]["key"].get<std::string>());
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, key);
  EXPECT_EQ(with["metadata"], (*secret)["metadata"]);

  json obj = testing::QuickstartObject();
  obj["spec"]["communication"]["keySecretRef"] = {{"name", "mine"}};
  EXPECT_FALSE(BuildKeySecret(Decode(obj)).has_value());
}

TEST(NetworkPolicyBuilder, AdmitsIngressOnlyFromTheJobsOwnPods) {
  const DistributedJob job = Decode(testing::QuickstartObject());
  const json np = BuildNetworkPolicy(job);
  EXPECT_EQ(np["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(np["kind"], "NetworkPolicy");
  EXPECT_EQ(np["metadata"]["name"], "quickstart-ringmaster");
  EXPECT_EQ(np["metadata"]["namespace"], "team-a");
  EXPECT_TRUE(ControlledBy(np, "uid-1234"));
  EXPECT_EQ(np["spec"], json::parse(R"({
      "podSelector": {"matchLabels": {"ringmaster.io/job-name": "quickstart"}},
      "policyTypes": ["Ingress"],
      "ingress": [{"from": [{"podSelector": {"matchLabels": {"ringmaster.io/job-name": "quickstart"}}}]}]})"));
}

// ringmaster.io/tf-config: ConfigMap. What TensorFlow and the agent read is
// TF_CONFIG after the kubelet's expansion; these tests expand as it does.

json WithTfConfigAnnotation(json obj, const std::string& value) {
  obj["metadata"]["annotations"][kTfConfigAnnotation] = value;
  return obj;
}

// The env entry named `name` (null when absent) and its position.
std::pair<json, int> EnvEntry(const json& container, const std::string& name) {
  for (size_t i = 0; i < container["env"].size(); ++i) {
    if (container["env"][i]["name"] == name) return {container["env"][i], static_cast<int>(i)};
  }
  return {json(), -1};
}

// TF_CONFIG as the kubelet hands it to the container: $(VAR) expanded from
// the variables before it, RINGMASTER_TF_CLUSTER from `configmap`.
std::string ExpandedTfConfig(const json& container, const json& configmap) {
  const auto [tf, at] = EnvEntry(container, "TF_CONFIG");
  EXPECT_GE(at, 0);
  std::map<std::string, std::string> defined;
  for (int i = 0; i < at; ++i) {
    const json& e = container["env"][i];
    if (e.contains("value")) {
      defined[e["name"]] = e["value"];
    } else if (e.contains("valueFrom") && e["valueFrom"].contains("configMapKeyRef")) {
      const json& ref = e["valueFrom"]["configMapKeyRef"];
      EXPECT_EQ(ref["name"], configmap["metadata"]["name"]);
      defined[e["name"]] = configmap["data"][ref["key"].get<std::string>()];
    }
  }
  return ExpandKubeVars(tf["value"].get<std::string>(),
                        [&](std::string_view n) -> std::optional<std::string> {
                          auto it = defined.find(std::string(n));
                          if (it == defined.end()) return std::nullopt;
                          return it->second;
                        });
}

// A TFJob annotated ringmaster.io/tf-config: ConfigMap: every replica's
// tensorflow container sees training-operator's TF_CONFIG byte for byte
// once the kubelet expands it, and the pod holds none of the cluster.
TEST(TfConfigFromConfigMap, EveryTfJobReplicaSeesTrainingOperatorsTfConfigByteForByte) {
  const json tmpl = {{"spec", {{"containers", json::array({{{"name", "tensorflow"}, {"image", "tf:1"}}})}}}};
  json obj = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "TFJob"},
              {"metadata",
               {{"name", "t"},
                {"namespace", "ns"},
                {"uid", "u"},
                {"annotations", {{"ringmaster.io/tf-config", "ConfigMap"}}}}},
              {"spec",
               {{"tfReplicaSpecs",
                 {{"Chief", {{"replicas", 1}, {"template", tmpl}}},
                  {"Worker", {{"replicas", 3}, {"template", tmpl}}},
                  {"PS", {{"replicas", 2}, {"template", tmpl}}},
                  {"Evaluator", {{"replicas", 1}, {"template", tmpl}}}}}}}};
  LoadedTfJob loaded = DecodeTfJob(obj);
  ASSERT_TRUE(loaded.tfjob.has_value()) << (loaded.errors.empty() ? "" : loaded.errors[0].message);
  const TfJob& tfjob = *loaded.tfjob;
  BuildOptions opts;
  opts.cluster_domain = "cluster.local";
  auto map = BuildTfJobClusterConfigMap(tfjob, opts);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  ASSERT_TRUE(map->has_value());
  const json& cm = **map;
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["kind"], "TFJob");
  int pods = 0;
  for (const auto& [type, spec] : tfjob.job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i, ++pods) {
      TfConfigOptions tf;
      tf.namespace_ = "ns";
      tf.cluster_domain = "cluster.local";
      auto want = GenerateTfJobTfConfig(tfjob, type, i, tf);
      auto pod = BuildTfJobPod(tfjob, {type, i}, opts);
      ASSERT_TRUE(want.ok() && pod.ok());
      const json& c = pod->pod["spec"]["containers"][0];
      EXPECT_EQ(ExpandedTfConfig(c, cm), *want) << ReplicaTypeName(type) << " " << i;
      EXPECT_EQ(EnvValue(c, "TF_CONFIG").find("t-worker-2."), std::string::npos)
          << "the pod holds the cluster";
      EXPECT_EQ(EnvEntry(c, kEnvTfCluster).second, EnvEntry(c, "TF_CONFIG").second - 1);
    }
  }
  EXPECT_EQ(pods, 7);
}

json BigJob(int workers) {
  json obj = WithTfConfigAnnotation(testing::QuickstartObject(), "ConfigMap");
  obj["spec"]["replicaSpecs"]["Worker"]["replicas"] = workers;
  return obj;
}

TEST(TfConfigFromConfigMap, InlineIsTheDefaultAndSpelledOut) {
  for (const json& obj :
       {testing::QuickstartObject(), WithTfConfigAnnotation(testing::QuickstartObject(), "Inline")}) {
    const DistributedJob job = Decode(obj);
    EXPECT_EQ(*JobTfConfigSource(job), TfConfigSource::kInline);
    auto map = BuildTfClusterConfigMap(job, {});
    ASSERT_TRUE(map.ok());
    EXPECT_FALSE(map->has_value());
    auto built = BuildPod(job, {ReplicaType::kWorker, 1}, {});
    ASSERT_TRUE(built.ok());
    EXPECT_EQ(EnvEntry(built->pod["spec"]["containers"][0], kEnvTfCluster).second, -1);
  }
}

TEST(TfConfigFromConfigMap, EveryReplicaSeesTheInlineTfConfigByteForByte) {
  json obj = testing::QuickstartObject();
  const json tmpl = obj["spec"]["replicaSpecs"]["Worker"]["template"];
  obj["spec"]["replicaSpecs"]["PS"] = {{"replicas", 2}, {"template", tmpl}};
  obj["spec"]["replicaSpecs"]["Evaluator"] = {{"replicas", 1}, {"template", tmpl}};
  // A second container: each one gets its own TF_CONFIG.
  obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"].push_back(
      {{"name", "sidecar"}, {"image", "busybox"}});
  const DistributedJob inline_job = Decode(obj);
  const DistributedJob job = Decode(WithTfConfigAnnotation(obj, "ConfigMap"));
  BuildOptions opts;
  opts.cluster_domain = "cluster.local";
  auto map = BuildTfClusterConfigMap(job, opts);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  ASSERT_TRUE(map->has_value());
  const json& cm = **map;
  int pods = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas; ++i, ++pods) {
      auto inline_pod = BuildPod(inline_job, {type, i}, opts);
      auto pod = BuildPod(job, {type, i}, opts);
      ASSERT_TRUE(inline_pod.ok() && pod.ok());
      const json& containers = pod->pod["spec"]["containers"];
      for (size_t c = 0; c < containers.size(); ++c) {
        const std::string want = EnvValue(inline_pod->pod["spec"]["containers"][c], "TF_CONFIG");
        EXPECT_EQ(ExpandedTfConfig(containers[c], cm), want)
            << ReplicaTypeName(type) << " " << i << " container " << c;
        const auto [tf, tf_at] = EnvEntry(containers[c], "TF_CONFIG");
        const auto [cluster, cluster_at] = EnvEntry(containers[c], kEnvTfCluster);
        // Named, not held: the value is the task's part alone.
        EXPECT_EQ(tf["value"].get<std::string>().find("quickstart-worker-1."), std::string::npos);
        EXPECT_EQ(cluster_at, tf_at - 1);  // the kubelet expands only what comes before
        EXPECT_FALSE(cluster.contains("value"));
        EXPECT_EQ(cluster["valueFrom"]["configMapKeyRef"],
                  json({{"name", cm["metadata"]["name"]}, {"key", "cluster"}}));
      }
    }
  }
  EXPECT_EQ(pods, 6);
}

TEST(TfConfigFromConfigMap, TheConfigMapIsImmutableOwnedAndNamedByItsCluster) {
  const DistributedJob job = Decode(BigJob(2));
  auto map = BuildTfClusterConfigMap(job, {});
  ASSERT_TRUE(map.ok() && map->has_value());
  const json& cm = **map;
  EXPECT_EQ(cm["apiVersion"], "v1");
  EXPECT_EQ(cm["kind"], "ConfigMap");
  EXPECT_EQ(cm["immutable"], true);
  EXPECT_EQ(cm["metadata"]["namespace"], "team-a");
  EXPECT_EQ(cm["metadata"]["labels"]["ringmaster.io/job-name"], "quickstart");
  EXPECT_TRUE(ControlledBy(cm, "uid-1234"));
  EXPECT_EQ(
      cm["data"]["cluster"],
      R"({"chief":["quickstart-chief-0.quickstart.team-a.svc:2222"],)"
      R"("worker":["quickstart-worker-0.quickstart.team-a.svc:2222","quickstart-worker-1.quickstart.team-a.svc:2222"]})");
  const std::string name = cm["metadata"]["name"];
  EXPECT_EQ(name.rfind("quickstart-tf-cluster-", 0), 0u);
  EXPECT_EQ(name.size(), std::string("quickstart-tf-cluster-").size() + 10);
  // The same cluster, the same name (a reconcile finds its own); the job
  // scaled, a new one (pods created after read the new cluster).
  EXPECT_EQ((**BuildTfClusterConfigMap(Decode(BigJob(2)), {}))["metadata"]["name"], name);
  EXPECT_NE((**BuildTfClusterConfigMap(Decode(BigJob(3)), {}))["metadata"]["name"], name);
}

TEST(TfConfigFromConfigMap, APodsSizeDoesNotGrowWithTheJob) {
  // Inline, a pod holds every address; from the ConfigMap, none: worker 1's
  // pod is the same size in a job of 4 workers and of 1,000.
  auto size = [](const json& obj) {
    auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 1}, {});
    EXPECT_TRUE(built.ok());
    return built->pod.dump().size();
  };
  EXPECT_EQ(size(BigJob(4)), size(BigJob(1000)));
  json inline_small = BigJob(4), inline_big = BigJob(1000);
  inline_small["metadata"]["annotations"].erase(kTfConfigAnnotation);
  inline_big["metadata"]["annotations"].erase(kTfConfigAnnotation);
  EXPECT_GT(size(inline_big), size(inline_small) + 999 * 40);
}

TEST(TfConfigFromConfigMap, AContainersOwnTfConfigIsKeptAndNamesNoConfigMap) {
  json obj = BigJob(2);
  obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "TF_CONFIG"}, {"value", "{\"mine\":1}"}}};
  auto built = BuildPod(Decode(obj), {ReplicaType::kWorker, 0}, {});
  ASSERT_TRUE(built.ok());
  const json& c = built->pod["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(c, "TF_CONFIG"), "{\"mine\":1}");
  EXPECT_EQ(EnvEntry(c, kEnvTfCluster).second, -1);
}

TEST(TfConfigFromConfigMap, AnotherValueIsInvalidArgumentNamingTheAnnotation) {
  // The loader refuses it (validate, run and the operator alike)...
  const LoadedJob loaded = DecodeJob(WithTfConfigAnnotation(testing::QuickstartObject(), "configmap"));
  EXPECT_FALSE(loaded.job.has_value());
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_EQ(loaded.errors[0].path, "metadata.annotations.ringmaster.io/tf-config");
  EXPECT_EQ(loaded.errors[0].message, "must be Inline or ConfigMap, got \"configmap\"");
  // ... and the pod builder, should such a job reach it another way.
  DistributedJob job = Decode(testing::QuickstartObject());
  job.metadata["annotations"][kTfConfigAnnotation] = "configmap";
  for (const Status& st : {JobTfConfigSource(job).status(), BuildTfClusterConfigMap(job, {}).status(),
                           BuildPod(job, {ReplicaType::kWorker, 0}, {}).status()}) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("ringmaster.io/tf-config"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("\"configmap\""), std::string::npos) << st.message();
  }
}

TEST(TfConfigFromConfigMap, NamingTheClusterEscapesEveryOtherDollar) {
  const std::string cluster = R"({"worker":["a$(X)b:1"]})";
  const std::string tf = R"({"cluster":)" + cluster + R"(,"task":{"type":"w$(X)$$","index":0}})";
  auto named = TfConfigNamingCluster(tf, cluster);
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(*named, R"({"cluster":$(RINGMASTER_TF_CLUSTER),"task":{"type":"w$$(X)$$$$","index":0}})");
  auto expanded = ExpandKubeVars(*named, [&](std::string_view n) -> std::optional<std::string> {
    if (n == "RINGMASTER_TF_CLUSTER") return cluster;
    return "unexpected";
  });
  EXPECT_EQ(expanded, tf);
  // Not where TF_CONFIG holds it: no reference, the whole value is used.
  EXPECT_FALSE(TfConfigNamingCluster(tf, R"({"worker":[]})").has_value());
  EXPECT_FALSE(TfConfigNamingCluster(R"({"task":{}})", cluster).has_value());
}

}  // namespace
}  // namespace ringmaster::op
