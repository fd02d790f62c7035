#include <gtest/gtest.h>

#include "ringmaster/job.h"

namespace ringmaster {
namespace {

std::vector<FieldError> ErrorsOf(const std::string& yaml) {
  auto jobs = LoadJobs(yaml, "job.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  if (!jobs.ok() || jobs->empty()) return {};
  return jobs->front().errors;
}

// One expected error: its rendering must contain `where` (file:line:col:
// path) and `what`.
void ExpectError(const std::string& yaml, const std::string& where, const std::string& what) {
  auto errors = ErrorsOf(yaml);
  std::string all;
  for (const auto& e : errors) {
    std::string text = FormatFieldError(e, "job.yaml");
    if (text.find(where) != std::string::npos && text.find(what) != std::string::npos) return;
    all += text + "\n";
  }
  ADD_FAILURE() << "expected an error at '" << where << "' saying '" << what << "', got:\n" << all;
}

constexpr char kHead[] =
    "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata:\n  name: j\nspec:\n";
// Lines 1-5 are kHead; the spec body starts on line 6.

TEST(LoadJobs, DefaultsAreApplied) {
  auto job = LoadSingleJob(std::string(kHead) + R"(  replicaSpecs:
    Worker:
      template: {spec: {containers: [{name: c, image: i}]}}
)",
                           "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->name, "j");
  EXPECT_EQ(job->namespace_, "");
  EXPECT_EQ(job->port, 2222);
  EXPECT_EQ(job->success_policy, SuccessPolicy::kDefault);
  EXPECT_EQ(job->Replicas(ReplicaType::kWorker), 1);
  EXPECT_EQ(job->Find(ReplicaType::kWorker)->restart_policy, RestartPolicy::kNever);
  EXPECT_EQ(job->run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_FALSE(job->run_policy.backoff_limit.has_value());
  EXPECT_EQ(job->communication, CommunicationOptions{});
  EXPECT_FALSE(job->key_secret_ref.has_value());
}

TEST(LoadJobs, EveryFieldIsRead) {
  auto job = LoadSingleJob(std::string(kHead) + R"(  port: 3000
  successPolicy: AllWorkers
  communication: {implementation: RING, bytesPerPack: 4096, timeoutSeconds: 30}
  runPolicy: {backoffLimit: 3, activeDeadlineSeconds: 60, ttlSecondsAfterFinished: 5, cleanPodPolicy: All, suspend: true,
              recovery: InPlace, elastic: {minWorkers: 2, rejoinTimeoutSeconds: 45, replacementTimeoutSeconds: 600}}
  replicaSpecs:
    Master:
      restartPolicy: ExitCode
      template: {spec: {containers: [{name: c, image: i}]}}
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template: {spec: {containers: [{name: c, image: i, command: [a, b]}]}}
)",
                           "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->port, 3000);
  EXPECT_EQ(job->success_policy, SuccessPolicy::kAllWorkers);
  EXPECT_EQ(job->communication.implementation, Implementation::kRing);
  EXPECT_EQ(job->communication.bytes_per_pack, 4096);
  EXPECT_EQ(job->communication.timeout_seconds, 30);
  EXPECT_EQ(job->run_policy.backoff_limit, 3);
  EXPECT_EQ(job->run_policy.active_deadline_seconds, 60);
  EXPECT_EQ(job->run_policy.ttl_seconds_after_finished, 5);
  EXPECT_EQ(job->run_policy.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_EQ(job->run_policy.recovery, RecoveryPolicy::kInPlace);
  EXPECT_EQ(job->run_policy.elastic, (ElasticPolicy{2, 45, 600}));
  EXPECT_TRUE(job->run_policy.suspend);
  // Master is Chief under its old name.
  ASSERT_NE(job->Find(ReplicaType::kChief), nullptr);
  EXPECT_EQ(job->Find(ReplicaType::kChief)->restart_policy, RestartPolicy::kExitCode);
  EXPECT_EQ(job->Replicas(ReplicaType::kWorker), 3);
  EXPECT_EQ(job->Find(ReplicaType::kWorker)->pod_template["spec"]["containers"][0]["command"][1], "b");
}

TEST(LoadJobs, JsonWorksToo) {
  auto job = LoadSingleJob(R"({"apiVersion":"ringmaster.io/v1alpha1","kind":"DistributedJob",
    "metadata":{"name":"j","namespace":"team"},
    "spec":{"replicaSpecs":{"Worker":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}}})",
                           "job.json");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->namespace_, "team");
  EXPECT_EQ(job->Replicas(ReplicaType::kWorker), 2);
}

TEST(LoadJobs, MultiDocumentSkipsOtherKinds) {
  auto jobs = LoadJobs(R"(apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: a}
spec: {replicaSpecs: {Worker: {template: {spec: {containers: [{name: c}]}}}}}
---
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: b}
spec: {replicaSpecs: {Worker: {replicas: -1, template: {spec: {containers: [{name: c}]}}}}}
)",
                       "multi.yaml");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].job->name, "a");
  EXPECT_EQ((*jobs)[0].document_index, 1);
  ASSERT_EQ((*jobs)[1].errors.size(), 1u);
  // Line numbers count from the top of the file, not of the document.
  EXPECT_EQ(FormatFieldError((*jobs)[1].errors[0], "multi.yaml"),
            "multi.yaml:13:42: spec.replicaSpecs.Worker.replicas: must be between 0 and 100000, got -1");
  auto single = LoadSingleJob("kind: DistributedJob\n---\nkind: DistributedJob\n", "two.yaml");
  EXPECT_FALSE(single.ok());
}

TEST(LoadJobs, SyntaxErrorsGiveTheLine) {
  auto r = LoadJobs("apiVersion: x\nspec: [unclosed\n", "bad.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("bad.yaml:"), std::string::npos) << r.status().message();
  auto none = LoadJobs("kind: ConfigMap\n", "cm.yaml");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no DistributedJob"), std::string::npos);
  // A kind that is not a string is not a DistributedJob (found by fuzzing: it threw).
  for (const char* text : {"kind:\n", "kind: 5\n", "{\"kind\": null}"}) {
    auto odd = LoadJobs(text, "odd.yaml");
    ASSERT_FALSE(odd.ok()) << text;
    EXPECT_NE(odd.status().message().find("no DistributedJob"), std::string::npos) << odd.status().message();
  }
  // yaml-cpp 0.7's LoadAll never returns on these (found by fuzzing): an error instead.
  for (const char* text : {"{a},", "[a],\"", "{\"kind\":\"DistributedJob\"},x\":{}}"}) {
    auto stuck = LoadJobs(text, "stuck.yaml");
    ASSERT_FALSE(stuck.ok()) << text;
    EXPECT_NE(stuck.status().message().find("stuck.yaml:1:"), std::string::npos) << stuck.status().message();
  }
}

constexpr char kWorker[] = "    Worker:\n      template: {spec: {containers: [{name: c}]}}\n";

TEST(Validate, UnknownReplicaType) {
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Launcher:\n      template: {}\n",
              "job.yaml:7:5: spec.replicaSpecs.Launcher", "unknown replica type 'Launcher'");
}

TEST(Validate, MoreThanOneChief) {
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Chief:\n      replicas: 2\n" +
                  "      template: {spec: {containers: [{name: c}]}}\n",
              "job.yaml:8:17: spec.replicaSpecs.Chief.replicas", "more than one chief");
  ExpectError(std::string(kHead) +
                  "  replicaSpecs:\n    Chief:\n      template: {spec: {containers: [{name: c}]}}\n" +
                  "    Master:\n      template: {spec: {containers: [{name: c}]}}\n",
              "spec.replicaSpecs.", "more than one chief: both Chief and Master");
}

TEST(Validate, NegativeReplicas) {
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Worker:\n      replicas: -3\n" +
                  "      template: {spec: {containers: [{name: c}]}}\n",
              "job.yaml:8:17: spec.replicaSpecs.Worker.replicas", "got -3");
}

TEST(Validate, CommunicationOptions) {
  ExpectError(std::string(kHead) + "  communication:\n    bytesPerPack: -1\n  replicaSpecs:\n" + kWorker,
              "job.yaml:7:19: spec.communication.bytesPerPack", "must be >= 0, got -1");
  ExpectError(std::string(kHead) + "  communication:\n    timeoutSeconds: -5\n  replicaSpecs:\n" + kWorker,
              "job.yaml:7:21: spec.communication.timeoutSeconds", "must be >= 0");
  ExpectError(std::string(kHead) + "  communication:\n    implementation: GLOO\n  replicaSpecs:\n" + kWorker,
              "job.yaml:7:21: spec.communication.implementation",
              "unknown value 'GLOO', expected one of: AUTO, RING, NCCL");
  // The CRD's enum is exact, so the loader is too: the same file must not
  // run locally and be refused by the API server.
  ExpectError(std::string(kHead) + "  communication:\n    implementation: ring\n  replicaSpecs:\n" + kWorker,
              "job.yaml:7:21: spec.communication.implementation",
              "unknown value 'ring', expected one of: AUTO, RING, NCCL");
  ExpectError(std::string(kHead) + "  communication:\n    bytesPerPack: lots\n  replicaSpecs:\n" + kWorker,
              "job.yaml:7:19: spec.communication.bytesPerPack", "must be an integer, got 'lots'");
}

TEST(LoadJobs, KeySecretRefNamesTheUsersSecretWithItemKeyDefaultingToKey) {
  auto job = LoadSingleJob(std::string(kHead) + "  communication:\n    keySecretRef: {name: team.keys-1}\n" +
                               "  replicaSpecs:\n" + kWorker,
                           "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(job->key_secret_ref.has_value());
  EXPECT_EQ(*job->key_secret_ref, (KeySecretRef{"team.keys-1", "key"}));
  job =
      LoadSingleJob(std::string(kHead) + "  communication:\n    keySecretRef: {name: s, key: Job_Key.v2}\n" +
                        "  replicaSpecs:\n" + kWorker,
                    "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(*job->key_secret_ref, (KeySecretRef{"s", "Job_Key.v2"}));
}

// ringmaster.io/tf-config takes Inline or ConfigMap; anything else is
// named with its line before a cluster sees it (the operator's own check).
TEST(LoadJobs, TfConfigAnnotationOfAnotherValueIsAnError) {
  const std::string job =
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata:\n  name: j\n"
      "  annotations: {ringmaster.io/tf-config: VALUE}\nspec:\n  replicaSpecs: {Worker: {template: {spec: "
      "{containers: [{name: c, image: i}]}}}}\n";
  auto with = [&](const std::string& v) {
    return job.substr(0, job.find("VALUE")) + v + job.substr(job.find("VALUE") + 5);
  };
  ExpectError(with("configmap"), "job.yaml:5:42: metadata.annotations.ringmaster.io/tf-config",
              "must be Inline or ConfigMap, got \"configmap\"");
  ExpectError(with("'1'"), "metadata.annotations.ringmaster.io/tf-config", "got \"1\"");
  for (const char* ok : {"Inline", "ConfigMap"}) {
    auto loaded = LoadJobs(with(ok), "job.yaml");
    EXPECT_TRUE(loaded.ok()) << ok << ": " << loaded.status().ToString();
  }
}

// A label's bytes that are not UTF-8 are named in the error, not thrown on.
TEST(LoadJobs, QueueLabelThatIsNotUtf8IsAnError) {
  ExpectError(
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata:\n  name: j\n  labels: "
      "{kueue.x-k8s.io/queue-name: \xff\xfeteam}\nspec:\n  replicaSpecs: {Worker: {template: {spec: "
      "{containers: [{name: c, image: i}]}}}}\n",
      "job.yaml:5:39: metadata.labels.kueue.x-k8s.io/queue-name", "must name a LocalQueue");
}

TEST(LoadJobs, SchedulingPolicyWithTfJobsNamesOrKueuesLabel) {
  auto job = LoadSingleJob(std::string(kHead) +
                               "  runPolicy:\n    schedulingPolicy: {queue: team-a, priorityClass: high, "
                               "minAvailable: 1, scheduleTimeoutSeconds: 60}\n  replicaSpecs:\n" +
                               kWorker,
                           "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->run_policy.scheduling_policy, (SchedulingPolicy{"team-a", "high", 1, 60}));
  // Kueue's own convention: the queue as a label of the job.
  job = LoadSingleJob(
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata:\n  name: j\n"
      "  labels: {kueue.x-k8s.io/queue-name: team-b}\nspec:\n  replicaSpecs:\n" +
          std::string(kWorker),
      "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->run_policy.scheduling_policy.queue, "team-b");
  EXPECT_EQ(job->TotalReplicas(), 1);
  // Without either: not queued.
  job = LoadSingleJob(std::string(kHead) + "  replicaSpecs:\n" + kWorker, "job.yaml");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->run_policy.scheduling_policy, SchedulingPolicy{});
}

TEST(Validate, SchedulingPolicy) {
  auto with = [](const std::string& policy) {
    return std::string(kHead) + "  runPolicy:\n    schedulingPolicy: " + policy + "\n  replicaSpecs:\n" +
           kWorker;
  };
  const std::string path = "spec.runPolicy.schedulingPolicy";
  ExpectError(with("{queue: Team_A}"), "job.yaml:7:31: " + path + ".queue",
              "'Team_A' is not a LocalQueue name");
  ExpectError(with("{queue: " + std::string(64, 'q') + "}"), path + ".queue", "at most 63 characters");
  ExpectError(with("{priorityClass: 'High Priority'}"), path + ".priorityClass",
              "is not a PriorityClass name");
  ExpectError(with("{minAvailable: 0}"), path + ".minAvailable", "must be between 1 and");
  ExpectError(with("{minAvailable: 2}"), path + ".minAvailable", "must be at most the job's 1 pods, got 2");
  ExpectError(with("{scheduleTimeoutSeconds: 0}"), path + ".scheduleTimeoutSeconds", "must be >= 1");
  ExpectError(with("{queues: a}"), path + ".queues", "unknown field, expected one of: queue, priorityClass");
  ExpectError(with("[]"), path, "must be an object");
  const std::string labelled =
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata:\n  name: j\n"
      "  labels: {kueue.x-k8s.io/queue-name: LABEL}\nspec:\n  runPolicy:\n    schedulingPolicy: {queue: "
      "team-a}\n"
      "  replicaSpecs:\n" +
      std::string(kWorker);
  auto label = [&](const std::string& v) {
    return labelled.substr(0, labelled.find("LABEL")) + v + labelled.substr(labelled.find("LABEL") + 5);
  };
  ExpectError(label("team-b"), path + ".queue",
              "'team-a' disagrees with the job's label kueue.x-k8s.io/queue-name ('team-b')");
  ExpectError(label("Bad_Queue"), "metadata.labels.kueue.x-k8s.io/queue-name", "must name a LocalQueue");
  EXPECT_TRUE(ErrorsOf(label("team-a")).empty());  // the same in both: fine
}

TEST(Validate, KeySecretRef) {
  auto with = [](const std::string& ref) {
    return std::string(kHead) + "  communication:\n    keySecretRef: " + ref + "\n  replicaSpecs:\n" +
           kWorker;
  };
  ExpectError(with("{key: k}"), "spec.communication.keySecretRef.name", "required field is missing");
  ExpectError(with("{name: My_Secret}"), "job.yaml:7:26: spec.communication.keySecretRef.name",
              "'My_Secret' must be a Secret name: a lower-case DNS-1123 subdomain");
  ExpectError(with("{name: a..b}"), "spec.communication.keySecretRef.name", "DNS-1123 subdomain");
  ExpectError(with("{name: -a}"), "spec.communication.keySecretRef.name", "DNS-1123 subdomain");
  ExpectError(with("{name: " + std::string(254, 'a') + "}"), "spec.communication.keySecretRef.name",
              "at most 253 characters");
  ExpectError(with("{name: s, key: a/b}"), "job.yaml:7:34: spec.communication.keySecretRef.key",
              "'a/b' must be a Secret key");
  ExpectError(with("{name: s, key: ..x}"), "spec.communication.keySecretRef.key", "must be a Secret key");
  ExpectError(with("{name: s, key: '.'}"), "spec.communication.keySecretRef.key", "must be a Secret key");
  ExpectError(with("{name: s, key: ''}"), "spec.communication.keySecretRef.key", "must be a Secret key");
  ExpectError(with("{name: s, key: " + std::string(254, 'k') + "}"), "spec.communication.keySecretRef.key",
              "must be a Secret key");
  ExpectError(with("{name: s, key: 3}"), "spec.communication.keySecretRef.key", "must be a string");
  ExpectError(with("{name: s, optional: true}"), "spec.communication.keySecretRef.optional",
              "unknown field, expected one of: name, key");
  ExpectError(with("s"), "spec.communication.keySecretRef", "must be an object");
  // At the limits: 253 characters of each are fine.
  auto job = LoadSingleJob(with("{name: " + std::string(63, 'a') + "." + std::string(189, 'b') +
                                ", key: " + std::string(253, 'k') + "}"),
                           "job.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
}

TEST(Validate, PortOutOfRange) {
  ExpectError(std::string(kHead) + "  port: 70000\n  replicaSpecs:\n" + kWorker, "job.yaml:6:9: spec.port",
              "must be between 1 and 65535, got 70000");
  ExpectError(std::string(kHead) + "  port: 0\n  replicaSpecs:\n" + kWorker, "job.yaml:6:9: spec.port",
              "got 0");
}

TEST(Validate, ReplicaWithoutContainers) {
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Worker:\n      template:\n        spec:\n" +
                  "          containers: []\n",
              "job.yaml:10:23: spec.replicaSpecs.Worker.template.spec.containers", "at least one container");
  // A missing field is located at its nearest written parent.
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Worker:\n      template:\n        spec: {}\n",
              "job.yaml:9:15: spec.replicaSpecs.Worker.template.spec.containers", "at least one container");
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Worker:\n      replicas: 1\n",
              "spec.replicaSpecs.Worker.template", "required field is missing");
  // `name:` with no value is missing too (found by fuzzing: the operator's pod builder threw on it).
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Worker:\n      template:\n        spec:\n" +
                  "          containers: [{name: }]\n",
              "spec.replicaSpecs.Worker.template.spec.containers[0].name", "required field is missing");
  ExpectError(
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata: {name: }\nspec:\n"
      "  replicaSpecs:\n" +
          std::string(kWorker),
      "metadata.name", "required field is missing");
}

TEST(Validate, EnumsAndTypes) {
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Worker:\n      restartPolicy: Sometimes\n" +
                  "      template: {spec: {containers: [{name: c}]}}\n",
              "job.yaml:8:22: spec.replicaSpecs.Worker.restartPolicy",
              "expected one of: Never, OnFailure, Always, ExitCode");
  ExpectError(std::string(kHead) + "  runPolicy:\n    cleanPodPolicy: Some\n  replicaSpecs:\n" + kWorker,
              "job.yaml:7:21: spec.runPolicy.cleanPodPolicy", "expected one of: All, Running, None");
  ExpectError(std::string(kHead) + "  runPolicy:\n    recovery: Elastic\n  replicaSpecs:\n" + kWorker,
              "job.yaml:7:15: spec.runPolicy.recovery", "expected one of: Job, InPlace");
  // runPolicy.elastic: InPlace only, minWorkers required and at most the workers.
  ExpectError(std::string(kHead) + "  runPolicy:\n    elastic: {minWorkers: 1}\n  replicaSpecs:\n" + kWorker,
              "spec.runPolicy.elastic", "needs spec.runPolicy.recovery: InPlace");
  ExpectError(std::string(kHead) + "  runPolicy:\n    recovery: InPlace\n    elastic: {minWorkers: 2}\n" +
                  "  replicaSpecs:\n" + kWorker,
              "spec.runPolicy.elastic.minWorkers", "at most the job's 1 Worker replicas, got 2");
  ExpectError(std::string(kHead) +
                  "  runPolicy:\n    recovery: InPlace\n    elastic: {rejoinTimeoutSeconds: 5}\n" +
                  "  replicaSpecs:\n" + kWorker,
              "spec.runPolicy.elastic.minWorkers", "is required");
  ExpectError(std::string(kHead) +
                  "  runPolicy:\n    recovery: InPlace\n    elastic: {minWorkers: 1, max: 3}\n" +
                  "  replicaSpecs:\n" + kWorker,
              "spec.runPolicy.elastic.max", "unknown field");
  ExpectError(std::string(kHead) +
                  "  runPolicy:\n    recovery: InPlace\n    elastic: {minWorkers: 1, "
                  "replacementTimeoutSeconds: 0}\n" +
                  "  replicaSpecs:\n" + kWorker,
              "spec.runPolicy.elastic.replacementTimeoutSeconds", "must be >= 1, got 0");
  ExpectError(std::string(kHead) +
                  "  runPolicy:\n    recovery: InPlace\n    elastic: {minWorkers: 1, "
                  "replacementTimeoutSeconds: 1.5}\n" +
                  "  replicaSpecs:\n" + kWorker,
              "spec.runPolicy.elastic.replacementTimeoutSeconds", "must be an integer");
  ExpectError(std::string(kHead) + "  runPolicy:\n    backoffLimit: -1\n  replicaSpecs:\n" + kWorker,
              "spec.runPolicy.backoffLimit", "must be between 0");
  ExpectError(std::string(kHead) + "  runPolicy:\n    suspend: maybe\n  replicaSpecs:\n" + kWorker,
              "spec.runPolicy.suspend", "must be true or false");
  ExpectError(std::string(kHead) + "  successPolicy: Chief\n  replicaSpecs:\n" + kWorker,
              "spec.successPolicy", "expected one of: \"\", AllWorkers");
  ExpectError(std::string(kHead) + "  replicaSpecs:\n    Worker:\n      replicas: \"2\"\n" +
                  "      template: {spec: {containers: [{name: c}]}}\n",
              "spec.replicaSpecs.Worker.replicas", "must be an integer, got '2'");
}

TEST(Validate, UnknownFieldsAreTyposNotSilence) {
  ExpectError(std::string(kHead) + "  replicaSpec:\n" + kWorker, "job.yaml:6:3: spec.replicaSpec",
              "unknown field");
  ExpectError(std::string(kHead) + "  communication:\n    bytes_per_pack: 1\n  replicaSpecs:\n" + kWorker,
              "job.yaml:7:5: spec.communication.bytes_per_pack",
              "unknown field, expected one of: implementation");
}

TEST(Validate, MetadataAndApiVersion) {
  ExpectError("apiVersion: v1\nkind: DistributedJob\nmetadata: {name: j}\nspec:\n  replicaSpecs:\n" +
                  std::string(kWorker),
              "job.yaml:1:13: apiVersion", "must be ringmaster.io/v1alpha1");
  ExpectError(
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata: {name: My_Job}\nspec:\n"
      "  replicaSpecs:\n" +
          std::string(kWorker),
      "job.yaml:3:18: metadata.name", "lower-case DNS label");
  ExpectError(
      "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata: {}\nspec:\n  replicaSpecs:\n" +
          std::string(kWorker),
      "metadata.name", "required field is missing");
  // Found by fuzzing: a namespace that is no Kubernetes namespace (here not
  // even UTF-8) went into every TF_CONFIG address and made its JSON throw.
  for (const char* ns : {"Team A", "team.a", "-team", "team\x8e"}) {
    ExpectError(
        "apiVersion: ringmaster.io/v1alpha1\nkind: DistributedJob\nmetadata: {name: j, namespace: \"" +
            std::string(ns) + "\"}\nspec:\n  replicaSpecs:\n" + std::string(kWorker),
        "metadata.namespace", "lower-case DNS label");
  }
}

// Found by fuzzing: a value of the wrong type holding bytes that are not
// UTF-8 made the error's wording (its JSON) throw.
TEST(Validate, WrongTypeWithBytesThatAreNotUtf8) {
  ExpectError(std::string(kHead) + "  successPolicy: {a: \"\xdd\xdd\"}\n  replicaSpecs:\n" + kWorker,
              "spec.successPolicy", "must be a string");
}

TEST(Validate, AllErrorsAreReportedAtOnce) {
  auto errors =
      ErrorsOf(std::string(kHead) + "  port: -1\n  communication: {bytesPerPack: -1}\n  replicaSpecs:\n" +
               "    Worker:\n      replicas: -1\n      template: {spec: {containers: [{name: c}]}}\n");
  EXPECT_EQ(errors.size(), 3u);
}

TEST(Validate, GroupNeedsAChiefOrWorker) {
  ExpectError(
      std::string(kHead) + "  replicaSpecs:\n    PS:\n      template: {spec: {containers: [{name: c}]}}\n",
      "spec.replicaSpecs", "collective group is empty");
}

}  // namespace
}  // namespace ringmaster
