// Kubeflow's TFJob: loading (defaults, refusals by field and line), the
// DistributedJob it becomes, and TF_CONFIG byte for byte.
//
// The expected TF_CONFIG strings are derived from training-operator v1.9's
// generator (pkg/controller.v1/tensorflow/tensorflow.go, release-1.9):
//   - genClusterSpec walks every tfReplicaSpecs entry, the Evaluator
//     included, under its lower-cased type ("chief", "master", "worker",
//     "ps", "evaluator"); each task is "<job>-<type>-<i>.<ns>.svc" (plus
//     "." + $CUSTOM_CLUSTER_DOMAIN when set) + ":" + the port named
//     tfjob-port of the container named tensorflow (2222 when absent);
//   - TFConfig{Cluster map[string][]string; Task{Type; Index}; Environment}
//     goes through Go's json.Marshal: map keys sorted, struct fields in
//     order, no spaces, "environment":"cloud";
//   - with enableDynamicWorker, SparseTFConfig{Cluster{Worker
//     map[int32]string; PS []string}; Task}: a worker sees itself and all PS
//     tasks, a PS task itself, any other task {} and [];
//   - SetClusterSpec sets nothing when the job has one replica in all.
// training-operator's own pod_test.go checks the same shapes (its job
// "test-tfjob" in ns2/ns3, with and without an Evaluator and a cluster domain).
#include "ringmaster/tfjob.h"

#include <gtest/gtest.h>

#include "ringmaster/tf_config.h"

namespace ringmaster {
namespace {

TfJob Load(const std::string& yaml) {
  auto jobs = LoadTfJobs(yaml, "tfjob.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  if (!jobs.ok() || jobs->size() != 1) return {};
  std::string errors;
  for (const auto& e : jobs->front().errors) errors += FormatFieldError(e, "tfjob.yaml") + "\n";
  EXPECT_TRUE(jobs->front().tfjob.has_value()) << errors;
  return jobs->front().tfjob.value_or(TfJob{});
}

std::string Errors(const std::string& yaml) {
  auto jobs = LoadTfJobs(yaml, "tfjob.yaml");
  if (!jobs.ok()) return jobs.status().ToString();
  std::string out;
  for (const auto& j : *jobs) {
    for (const auto& e : j.errors) out += FormatFieldError(e, "tfjob.yaml") + "\n";
  }
  return out;
}

// Whether one line of `errors` names `where` and says `what` after it.
::testing::AssertionResult SaysAt(const std::string& errors, const std::string& where,
                                  const std::string& what) {
  for (size_t at = errors.find(where); at != std::string::npos; at = errors.find(where, at + 1)) {
    const size_t eol = errors.find('\n', at);
    if (errors.substr(at, eol - at).find(what) != std::string::npos) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "expected '" << where << "' saying '" << what << "', got:\n"
                                       << errors;
}

std::string TfConfig(const TfJob& t, ReplicaType type, int index, TfConfigOptions opts = {}) {
  auto got = GenerateTfJobTfConfig(t, type, index, opts);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  return got.ok() ? *got : "";
}

// Kubeflow's examples/tensorflow/dist-mnist/tf_job_mnist.yaml, with an
// Evaluator added and a second PS.
constexpr char kDistMnist[] = R"(apiVersion: "kubeflow.org/v1"
kind: "TFJob"
metadata:
  name: "dist-mnist"
  namespace: kubeflow
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    PS:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    Evaluator:
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
)";

TEST(TfJob, GoldenTfConfigForEveryReplica) {
  const TfJob t = Load(kDistMnist);
  ASSERT_TRUE(TfJobSetsTfConfig(t));
  const std::string cluster =
      R"({"cluster":{"chief":["dist-mnist-chief-0.kubeflow.svc:2222"],)"
      R"("evaluator":["dist-mnist-evaluator-0.kubeflow.svc:2222"],)"
      R"("ps":["dist-mnist-ps-0.kubeflow.svc:2222","dist-mnist-ps-1.kubeflow.svc:2222"],)"
      R"("worker":["dist-mnist-worker-0.kubeflow.svc:2222","dist-mnist-worker-1.kubeflow.svc:2222"]},)";
  const TfConfigOptions ns{.namespace_ = "kubeflow"};
  EXPECT_EQ(TfConfig(t, ReplicaType::kChief, 0, ns),
            cluster + R"("task":{"type":"chief","index":0},"environment":"cloud"})");
  EXPECT_EQ(TfConfig(t, ReplicaType::kWorker, 1, ns),
            cluster + R"("task":{"type":"worker","index":1},"environment":"cloud"})");
  EXPECT_EQ(TfConfig(t, ReplicaType::kPS, 1, ns),
            cluster + R"("task":{"type":"ps","index":1},"environment":"cloud"})");
  EXPECT_EQ(TfConfig(t, ReplicaType::kEvaluator, 0, ns),
            cluster + R"("task":{"type":"evaluator","index":0},"environment":"cloud"})");
  // The agent reads it: the chief and the workers are the group.
  auto parsed = ParseTfConfig(TfConfig(t, ReplicaType::kWorker, 1, ns));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(MakeCollectiveGroup(*parsed).members.size(), 3u);
  EXPECT_EQ(*MakeCollectiveGroup(*parsed).rank, 2);
  EXPECT_FALSE(GenerateTfJobTfConfig(t, ReplicaType::kWorker, 2, ns).ok());
}

// training-operator's pod_test.go case: TFJob "test-tfjob" in ns3 with one
// worker, one PS, one evaluator, CUSTOM_CLUSTER_DOMAIN=tf.training.io.
TEST(TfJob, GoldenClusterDomainAsTrainingOperatorsOwnTest) {
  const TfJob t = Load(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: test-tfjob, namespace: ns3}
spec:
  tfReplicaSpecs:
    Worker: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}
    PS: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}
    Evaluator: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}
)");
  EXPECT_EQ(TfConfig(t, ReplicaType::kWorker, 0, {.namespace_ = "ns3", .cluster_domain = "tf.training.io"}),
            R"({"cluster":{"evaluator":["test-tfjob-evaluator-0.ns3.svc.tf.training.io:2222"],)"
            R"("ps":["test-tfjob-ps-0.ns3.svc.tf.training.io:2222"],)"
            R"("worker":["test-tfjob-worker-0.ns3.svc.tf.training.io:2222"]},)"
            R"("task":{"type":"worker","index":0},"environment":"cloud"})");
}

// Master keeps its name ("master" sorts after "evaluator", before "ps");
// replica type keys in any case; each type's own tfjob-port; a type of 0
// replicas is an empty list.
TEST(TfJob, GoldenMasterLowerCaseKeysAndPorts) {
  const TfJob t = Load(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j}
spec:
  tfReplicaSpecs:
    master:
      template: {spec: {containers: [{name: tensorflow, image: i, ports: [{name: tfjob-port, containerPort: 3000}]}]}}
    WORKER:
      replicas: 0
      template: {spec: {containers: [{name: tensorflow, image: i}]}}
    ps:
      template:
        spec:
          containers:
            - {name: sidecar, image: s}
            - {name: tensorflow, image: i, ports: [{name: other, containerPort: 1}, {name: tfjob-port, containerPort: 3333}]}
)");
  EXPECT_TRUE(t.chief_is_master);
  EXPECT_EQ(TfJobReplicaTypeLower(t, ReplicaType::kChief), "master");
  EXPECT_EQ(TfJobReplicaName(t, ReplicaType::kChief, 0), "j-master-0");
  const std::string cluster =
      R"({"cluster":{"master":["j-master-0.default.svc:3000"],"ps":["j-ps-0.default.svc:3333"],"worker":[]},)";
  EXPECT_EQ(TfConfig(t, ReplicaType::kChief, 0),
            cluster + R"("task":{"type":"master","index":0},"environment":"cloud"})");
  EXPECT_EQ(TfConfig(t, ReplicaType::kPS, 0),
            cluster + R"("task":{"type":"ps","index":0},"environment":"cloud"})");
  // The DistributedJob runs on the group's (the master's) port.
  EXPECT_EQ(t.job.port, 3000);
  EXPECT_EQ(t.ports.at(ReplicaType::kPS), 3333);
  // The tensorflow container comes first in the DistributedJob.
  EXPECT_EQ(t.job.Find(ReplicaType::kPS)->pod_template["spec"]["containers"][0]["name"], "tensorflow");
}

TEST(TfJob, GoldenSparseWithEnableDynamicWorker) {
  const TfJob t = Load(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: dyn, namespace: ns}
spec:
  enableDynamicWorker: true
  tfReplicaSpecs:
    Chief: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}
    Worker: {replicas: 3, template: {spec: {containers: [{name: tensorflow, image: i}]}}}
    PS: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: i}]}}}
)");
  const TfConfigOptions ns{.namespace_ = "ns"};
  EXPECT_EQ(TfConfig(t, ReplicaType::kWorker, 2, ns),
            R"({"cluster":{"worker":{"2":"dyn-worker-2.ns.svc:2222"},)"
            R"("ps":["dyn-ps-0.ns.svc:2222","dyn-ps-1.ns.svc:2222"]},"task":{"type":"worker","index":2}})");
  EXPECT_EQ(TfConfig(t, ReplicaType::kPS, 1, ns),
            R"({"cluster":{"worker":{},"ps":["dyn-ps-1.ns.svc:2222"]},"task":{"type":"ps","index":1}})");
  EXPECT_EQ(TfConfig(t, ReplicaType::kChief, 0, ns),
            R"({"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}})");

  // Without PS tasks a worker gets "ps":[] (training-operator: null, which
  // TensorFlow refuses): the one difference on purpose.
  const TfJob nops = Load(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: dyn}
spec:
  enableDynamicWorker: true
  tfReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: i}]}}}
)");
  EXPECT_EQ(
      TfConfig(nops, ReplicaType::kWorker, 0),
      R"({"cluster":{"worker":{"0":"dyn-worker-0.default.svc:2222"},"ps":[]},"task":{"type":"worker","index":0}})");
}

TEST(TfJob, OneReplicaGetsNoTfConfig) {
  const TfJob t = Load(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: single}
spec:
  tfReplicaSpecs:
    Worker: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}
)");
  EXPECT_FALSE(TfJobSetsTfConfig(t));
  bool noted = false;
  for (const auto& n : t.notes) noted |= n.message.find("one replica") != std::string::npos;
  EXPECT_TRUE(noted);
}

// training-operator's defaults, and every field read into the DistributedJob.
TEST(TfJob, DefaultsAndFieldsBecomeTheDistributedJob) {
  const TfJob d = Load(kDistMnist);
  EXPECT_EQ(d.job.name, "dist-mnist");
  EXPECT_EQ(d.job.namespace_, "kubeflow");
  EXPECT_EQ(d.job.Replicas(ReplicaType::kEvaluator), 1);                // replicas default to 1
  EXPECT_EQ(d.job.run_policy.clean_pod_policy, CleanPodPolicy::kNone);  // TFJob's default
  EXPECT_EQ(d.job.port, 2222);
  EXPECT_FALSE(d.enable_dynamic_worker);

  const TfJob t = Load(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: full
  labels: {team: a}
  annotations:
    example.com/keep: "yes"
    ringmaster.io/implementation: RING
    ringmaster.io/bytes-per-pack: "4096"
    ringmaster.io/timeout-seconds: "30.5"
    ringmaster.io/key-secret-name: my-key
    ringmaster.io/key-secret-key: k
    ringmaster.io/recovery: InPlace
    ringmaster.io/elastic-min-workers: "2"
    ringmaster.io/elastic-rejoin-timeout-seconds: "45"
    ringmaster.io/elastic-replacement-timeout-seconds: "600"
spec:
  successPolicy: AllWorkers
  runPolicy:
    cleanPodPolicy: All
    ttlSecondsAfterFinished: 5
    activeDeadlineSeconds: 60
    backoffLimit: 3
    suspend: true
    managedBy: kubeflow.org/training-operator
    schedulingPolicy: {queue: team-a, priorityClass: high, minAvailable: 3, scheduleTimeoutSeconds: 600}
  tfReplicaSpecs:
    Worker:
      replicas: 3
      restartPolicy: ExitCode
      template: {spec: {containers: [{name: tensorflow, image: i}]}}
)");
  const DistributedJob& j = t.job;
  EXPECT_EQ(j.communication.implementation, Implementation::kRing);
  EXPECT_EQ(j.communication.bytes_per_pack, 4096);
  EXPECT_EQ(j.communication.timeout_seconds, 30.5);
  ASSERT_TRUE(j.key_secret_ref.has_value());
  EXPECT_EQ(*j.key_secret_ref, (KeySecretRef{"my-key", "k"}));
  EXPECT_EQ(j.run_policy.recovery, RecoveryPolicy::kInPlace);
  ASSERT_TRUE(j.run_policy.elastic.has_value());
  EXPECT_EQ(j.run_policy.elastic->min_workers, 2);
  EXPECT_EQ(j.run_policy.elastic->rejoin_timeout_seconds, 45);
  EXPECT_EQ(j.run_policy.elastic->replacement_timeout_seconds, 600);
  EXPECT_EQ(j.success_policy, SuccessPolicy::kAllWorkers);
  EXPECT_EQ(j.run_policy.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_EQ(j.run_policy.ttl_seconds_after_finished, 5);
  EXPECT_EQ(j.run_policy.active_deadline_seconds, 60);
  EXPECT_EQ(j.run_policy.backoff_limit, 3);
  EXPECT_TRUE(j.run_policy.suspend);
  EXPECT_EQ(j.run_policy.scheduling_policy.queue, "team-a");
  EXPECT_EQ(j.run_policy.scheduling_policy.priority_class, "high");
  EXPECT_EQ(j.run_policy.scheduling_policy.min_available, 3);
  EXPECT_EQ(j.run_policy.scheduling_policy.schedule_timeout_seconds, 600);
  EXPECT_EQ(j.Find(ReplicaType::kWorker)->restart_policy, RestartPolicy::kExitCode);
  EXPECT_EQ(t.managed_by, kManagedByKubeflow);
  // Our annotations became fields; the others stay.
  EXPECT_EQ(j.metadata["annotations"], (nlohmann::json{{"example.com/keep", "yes"}}));
  EXPECT_EQ(j.metadata["labels"]["team"], "a");
}

// The converted YAML loads back as a DistributedJob into the same job.
TEST(TfJob, ConvertedYamlLoadsIntoTheSameJob) {
  const TfJob t = Load(std::string(kDistMnist) + R"(  runPolicy: {backoffLimit: 2}
)");
  const std::string yaml = DistributedJobYaml(t);
  auto back = LoadSingleJob(yaml, "converted.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
  EXPECT_EQ(back->name, t.job.name);
  EXPECT_EQ(back->namespace_, "kubeflow");
  EXPECT_EQ(back->run_policy.clean_pod_policy, CleanPodPolicy::kNone);
  EXPECT_EQ(back->run_policy.backoff_limit, 2);
  EXPECT_EQ(back->TotalReplicas(), t.job.TotalReplicas());
  for (const auto& [type, spec] : t.job.replica_specs) {
    EXPECT_EQ(back->Find(type)->pod_template, spec.pod_template) << ReplicaTypeName(type);
  }
  EXPECT_NE(yaml.find("kind: DistributedJob"), std::string::npos) << yaml;

  // Strings that YAML would read as something else are quoted.
  TfJob q = Load(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: q, annotations: {a: "yes", b: "12", c: "", d: "x: y", e: "null", f: "é"}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: i, env: [{name: N, value: "0.5"}, {name: T, value: "true"}]}]}}
)");
  // A key longer than YAML's 1024-character simple keys.
  const std::string long_key(300, '\xe6');  // each byte escaped as \ufffd
  TfJob l = q;
  l.distributed_job["metadata"]["annotations"][long_key] = "v";
  l.distributed_job["metadata"]["annotations"][std::string(2000, 'k')] = "v";
  auto lb = LoadSingleJob(DistributedJobYaml(l), "l.yaml");
  ASSERT_TRUE(lb.ok()) << lb.status().ToString() << "\n" << DistributedJobYaml(l);
  EXPECT_EQ(lb->metadata["annotations"][std::string(2000, 'k')], "v");

  auto qb = LoadSingleJob(DistributedJobYaml(q), "q.yaml");
  ASSERT_TRUE(qb.ok()) << qb.status().ToString() << "\n" << DistributedJobYaml(q);
  EXPECT_EQ(qb->metadata, q.job.metadata);
  EXPECT_EQ(qb->Find(ReplicaType::kWorker)->pod_template, q.job.Find(ReplicaType::kWorker)->pod_template);
}

TEST(TfJob, NotesSayWhatChangesMeaning) {
  const TfJob t = Load(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: n}
spec:
  enableDynamicWorker: true
  runPolicy:
    managedBy: kueue.x-k8s.io/multikueue
  tfReplicaSpecs:
    Master: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}
    Evaluator: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}
    Worker:
      template:
        spec:
          containers:
            - {name: log, image: l}
            - {name: tensorflow, image: i, ports: [{name: tfjob-port, containerPort: 4000}]}
)");
  std::string all;
  for (const auto& n : t.notes) {
    all += FormatFieldError({n.path, n.message, n.line, n.column}, "f") + "\n";
  }
  for (const char* want :
       {"f:5:3: spec.enableDynamicWorker: not carried over",
        "f:7:5: spec.runPolicy.managedBy: not carried over",
        "f:9:5: spec.tfReplicaSpecs.Master: becomes the DistributedJob's Chief",
        "spec.tfReplicaSpecs.Evaluator: the DistributedJob leaves the evaluator out",
        "spec.tfReplicaSpecs.Worker.template.spec.containers: the DistributedJob gives TF_CONFIG "
        "to every container",
        "spec.tfReplicaSpecs.Worker.template.spec.containers[1]: the tensorflow container is "
        "listed first",
        "containers[1].ports[0].containerPort: the DistributedJob has one port for every "
        "replica: 2222, not 4000",
        "spec.tfReplicaSpecs: the DistributedJob's pods are reached through one headless Service"}) {
    EXPECT_NE(all.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << all;
  }
}

// Every field Ringmaster cannot honour, and every invalid one, is refused
// by name and line.
TEST(TfJob, RefusesByFieldAndLine) {
  struct Case {
    std::string body;  // after the first 4 lines; the body starts on line 5
    std::string where, what;
  } cases[] = {
      {"  fooPolicy: x\n", "tfjob.yaml:5:3: spec.fooPolicy", "unknown field"},
      {"  runPolicy: {recovery: InPlace}\n", "tfjob.yaml:5:15: spec.runPolicy.recovery",
       "unknown field, expected one of: cleanPodPolicy"},
      {"  runPolicy: {schedulingPolicy: {minResources: {cpu: 4}}}\n",
       "tfjob.yaml:5:48: spec.runPolicy.schedulingPolicy.minResources", "not supported"},
      {"  runPolicy: {managedBy: someone/else}\n", "tfjob.yaml:5:26: spec.runPolicy.managedBy",
       "unknown value 'someone/else'"},
      {"  runPolicy: {cleanPodPolicy: Sometimes}\n", "tfjob.yaml:5:31: spec.runPolicy.cleanPodPolicy",
       "unknown value 'Sometimes'"},
      {"  runPolicy: {backoffLimit: -1}\n", "tfjob.yaml:5:29: spec.runPolicy.backoffLimit",
       "must be between 0"},
      {"  successPolicy: Some\n", "tfjob.yaml:5:18: spec.successPolicy", "unknown value 'Some'"},
      {"  enableDynamicWorker: 1\n", "tfjob.yaml:5:24: spec.enableDynamicWorker", "must be true or false"},
      {"  tfReplicaSpecs:\n    Launcher: {template: {}}\n", "tfjob.yaml:6:5: spec.tfReplicaSpecs.Launcher",
       "unknown replica type 'Launcher'"},
      {"  tfReplicaSpecs:\n    Worker:\n      replicas: -1\n      template: {spec: {containers: [{name: "
       "tensorflow, image: i}]}}\n",
       "tfjob.yaml:7:17: spec.tfReplicaSpecs.Worker.replicas", "must be between 0"},
      {"  tfReplicaSpecs:\n    Worker:\n      restartPolicy: Sometimes\n      template: {spec: {containers: "
       "[{name: tensorflow, image: i}]}}\n",
       "tfjob.yaml:7:22: spec.tfReplicaSpecs.Worker.restartPolicy", "unknown value 'Sometimes'"},
      {"  tfReplicaSpecs:\n    Worker:\n      template: {spec: {containers: [{name: main, image: i}]}}\n",
       "tfjob.yaml:7:37: spec.tfReplicaSpecs.Worker.template.spec.containers",
       "needs a container named tensorflow"},
      {"  tfReplicaSpecs:\n    Worker:\n      template: {spec: {containers: [{name: tensorflow}]}}\n",
       "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image", "required field is missing"},
      {"  tfReplicaSpecs:\n    Worker:\n      template: {spec: {containers: [{name: tensorflow, image: i, "
       "ports: "
       "[{name: tfjob-port, containerPort: 70000}]}]}}\n",
       "spec.tfReplicaSpecs.Worker.template.spec.containers[0].ports[0].containerPort",
       "between 1 and 65535"},
      {"  tfReplicaSpecs:\n    Worker:\n      replica: 2\n      template: {spec: {containers: [{name: "
       "tensorflow, "
       "image: i}]}}\n",
       "tfjob.yaml:7:7: spec.tfReplicaSpecs.Worker.replica", "unknown field"},
      {"  tfReplicaSpecs:\n    Chief: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}\n    "
       "Master: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}\n",
       "spec.tfReplicaSpecs.Master", "more than one Chief or Master"},
      {"  tfReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}\n    "
       "worker: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}\n",
       "spec.tfReplicaSpecs.worker", "given twice"},
      {"  tfReplicaSpecs:\n    PS: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}\n",
       "tfjob.yaml:6:5: spec.tfReplicaSpecs", "the collective group is empty"},
      {"  tfReplicaSpecs:\n    Chief: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: "
       "i}]}}}\n",
       "tfjob.yaml:6:23: spec.tfReplicaSpecs.Chief.replicas", "more than one chief"},
      {"  tfReplicaSpecs:\n    Worker:\n      template:\n        spec:\n          containers:\n            - "
       "{name: "
       "side, image: s}\n            - {name: tensorflow, image: i, command: run}\n",
       "tfjob.yaml:11:53: spec.tfReplicaSpecs.Worker.template.spec.containers[1].command",
       "must be a list of strings"},
  };
  for (const auto& c : cases) {
    std::string yaml = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: e}\nspec:\n" + c.body;
    if (c.body.find("tfReplicaSpecs") == std::string::npos) {
      yaml +=
          "  tfReplicaSpecs: {Worker: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}}\n";
    }
    const std::string errors = Errors(yaml);
    EXPECT_TRUE(SaysAt(errors, c.where, c.what)) << "for:\n" << yaml;
  }
}

TEST(TfJob, RefusesBadMetadataAndAnnotations) {
  const std::string spec =
      "spec:\n  tfReplicaSpecs: {Worker: {replicas: 4, template: {spec: {containers: [{name: tensorflow, "
      "image: "
      "i}]}}}}\n";
  struct Case {
    std::string head, where, what;
  } cases[] = {
      {"apiVersion: kubeflow.org/v2\nkind: TFJob\nmetadata: {name: e}\n", "tfjob.yaml:1:13: apiVersion",
       "must be kubeflow.org/v1"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: Bad_Name}\n", "metadata.name",
       "DNS label"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/implemntation: RING\n",
       "tfjob.yaml:6:5: metadata.annotations.ringmaster.io/implemntation", "unknown Ringmaster annotation"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/bytes-per-pack: 4096\n",
       "tfjob.yaml:6:35: metadata.annotations.ringmaster.io/bytes-per-pack", "must be a string (quote it)"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/bytes-per-pack: \"lots\"\n",
       "metadata.annotations.ringmaster.io/bytes-per-pack", "must be an integer, got 'lots'"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/bytes-per-pack: \"-1\"\n",
       "metadata.annotations.ringmaster.io/bytes-per-pack", "must be >= 0, got -1"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/timeout-seconds: \"nan\"\n",
       "metadata.annotations.ringmaster.io/timeout-seconds", "must be a number"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/implementation: pigeon\n",
       "metadata.annotations.ringmaster.io/implementation", "unknown value 'pigeon'"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/elastic-min-workers: \"2\"\n",
       "metadata.annotations.ringmaster.io/elastic-min-workers",
       "needs the annotation ringmaster.io/recovery: InPlace"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/recovery: InPlace\n    ringmaster.io/elastic-min-workers: \"9\"\n",
       "metadata.annotations.ringmaster.io/elastic-min-workers",
       "must be at most the job's 4 Worker replicas"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/recovery: InPlace\n    ringmaster.io/elastic-rejoin-timeout-seconds: \"9\"\n",
       "metadata.annotations.ringmaster.io/elastic-min-workers", "is required"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/key-secret-key: k\n",
       "metadata.annotations.ringmaster.io/key-secret-key",
       "needs the annotation ringmaster.io/key-secret-name"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/key-secret-name: Not_A_Name\n",
       "metadata.annotations.ringmaster.io/key-secret-name", "must be a Secret name"},
      {"apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
       "ringmaster.io/tf-config: configmap\n",
       "tfjob.yaml:6:30: metadata.annotations.ringmaster.io/tf-config",
       "must be Inline or ConfigMap, got \"configmap\""},
  };
  for (const auto& c : cases) {
    const std::string yaml = c.head + spec;
    const std::string errors = Errors(yaml);
    EXPECT_TRUE(SaysAt(errors, c.where, c.what)) << "for:\n" << yaml;
  }
}

// ringmaster.io/tf-config is a DistributedJob's annotation too: it stays on
// the job the TFJob becomes, where the operator reads it.
TEST(TfJob, KeepsTheTfConfigAnnotation) {
  const TfJob t = Load(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: e\n  annotations:\n    "
      "ringmaster.io/tf-config: ConfigMap\n    team: a\n"
      "spec:\n  tfReplicaSpecs: {Worker: {replicas: 4, template: {spec: {containers: [{name: tensorflow, "
      "image: i}]}}}}\n");
  EXPECT_EQ(t.job.metadata["annotations"],
            nlohmann::json({{"ringmaster.io/tf-config", "ConfigMap"}, {"team", "a"}}));
}

// A file of both kinds: each document by its kind, in file order.
TEST(TfJob, LoadAnyJobsTakesBothKinds) {
  const std::string text = std::string(kDistMnist) + R"(---
apiVersion: v1
kind: Namespace
metadata: {name: x}
---
apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {name: dj}
spec:
  replicaSpecs: {Worker: {template: {spec: {containers: [{name: c, image: i}]}}}}
)";
  auto jobs = LoadAnyJobs(text, "both.yaml");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].kind, "TFJob");
  ASSERT_TRUE((*jobs)[0].tfjob.has_value());
  EXPECT_EQ((*jobs)[0].loaded.job->name, "dist-mnist");
  EXPECT_EQ((*jobs)[1].kind, "DistributedJob");
  EXPECT_FALSE((*jobs)[1].tfjob.has_value());
  EXPECT_EQ((*jobs)[1].loaded.document_index, 2);
  // LoadJobs still reads DistributedJobs alone.
  auto djs = LoadJobs(text, "both.yaml");
  ASSERT_TRUE(djs.ok());
  EXPECT_EQ(djs->size(), 1u);
  auto none = LoadAnyJobs("apiVersion: v1\nkind: Namespace\n", "ns.yaml");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no DistributedJob or TFJob document found"), std::string::npos);
}

// The object as the API server holds it (JSON, no lines).
TEST(TfJob, DecodesTheApiServersObject) {
  auto loaded = DecodeTfJob(nlohmann::json::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob",
    "metadata":{"name":"api","namespace":"ns","uid":"123"},
    "spec":{"runPolicy":{"cleanPodPolicy":"Running","suspend":false,"schedulingPolicy":{"queue":"","priorityClass":""}},
            "tfReplicaSpecs":{"Worker":{"replicas":2,"restartPolicy":"","template":{"spec":{"containers":[
              {"name":"tensorflow","image":"i","ports":[{"name":"tfjob-port","containerPort":2222}]}]}}}}},
    "status":{"conditions":[]}})"));
  ASSERT_TRUE(loaded.tfjob.has_value()) << (loaded.errors.empty() ? "" : loaded.errors[0].message);
  EXPECT_EQ(loaded.tfjob->job.run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_EQ(loaded.tfjob->job.Find(ReplicaType::kWorker)->restart_policy, RestartPolicy::kNever);
  EXPECT_EQ(loaded.tfjob->job.run_policy.scheduling_policy.queue, "");  // "" is unset (Go's omitempty)
  // cleanPodPolicy "" is unset too: training-operator's None.
  auto unset = DecodeTfJob(nlohmann::json::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob",
    "metadata":{"name":"api"},"spec":{"runPolicy":{"cleanPodPolicy":""},"tfReplicaSpecs":{"Worker":{
    "template":{"spec":{"containers":[{"name":"tensorflow","image":"i"}]}}}}}})"));
  ASSERT_TRUE(unset.tfjob.has_value());
  EXPECT_EQ(unset.tfjob->job.run_policy.clean_pod_policy, CleanPodPolicy::kNone);
  EXPECT_FALSE(DecodeTfJob(nlohmann::json::array()).errors.empty());
}

// A TFJob without spec: one error, at the field DecodeJob names too.
TEST(TfJob, RefusesAMissingSpecOnce) {
  auto loaded = DecodeTfJob(nlohmann::json::parse(
      R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"nospec"}})"));
  EXPECT_FALSE(loaded.tfjob.has_value());
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_EQ(loaded.errors[0].path, "spec");
  EXPECT_EQ(loaded.errors[0].message, "required field is missing");
}

}  // namespace
}  // namespace ringmaster
