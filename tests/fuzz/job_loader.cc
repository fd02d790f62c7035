// The job loader: a file as `ringmaster validate` / `ringmaster run` read it
// (LoadJobs, LoadSingleJob: YAML or JSON, several documents), and an object
// as the operator gets it from the API server (DecodeJob, when the input is
// JSON). A job that loads is then taken through what the operator and the
// local runner do with it: every replica's environment is built
// (BuildReplicaEnv) and read back as the agent reads it (ParseReplicaEnv),
// which must succeed and agree with the job; and the operator builds its
// pod (op::BuildPod), its Service, key Secret and NetworkPolicy, which must
// not fail on anything the loader accepted.
//
// Kubeflow's TFJobs go the same way (LoadAnyJobs, DecodeTfJob): the job a
// TFJob becomes passes the same checks, each replica's TF_CONFIG is JSON
// the agent reads, and the DistributedJob YAML `ringmaster convert` prints
// loads back into the same job.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "pod_builder.h"
#include "ringmaster/job.h"
#include "ringmaster/replica_env.h"
#include "ringmaster/tf_config.h"
#include "ringmaster/tfjob.h"

namespace {

using namespace ringmaster;
using fuzz::CheckError;

// Every error is located and worded: a path or a message, never neither.
void CheckErrors(const LoadedJob& loaded) {
  FUZZ_CHECK(loaded.job.has_value() == loaded.errors.empty());
  for (const auto& e : loaded.errors) {
    FUZZ_CHECK(!e.message.empty());
    FUZZ_CHECK(e.line >= 0 && e.column >= 0);
    FUZZ_CHECK(!FormatFieldError(e, "job.yaml").empty());
  }
}

// What the operator makes of a job: for JSON input (what the API server
// holds), also serialized as its requests are.
void CheckObjects(const DistributedJob& job, const ReplicaKey& key, bool from_json) {
  op::BuildOptions opts;
  opts.network_policy = true;
  auto pod = op::BuildPod(job, key, opts);
  if (!pod.ok()) std::fprintf(stderr, "BuildPod: %s\n", pod.status().ToString().c_str());
  FUZZ_CHECK(pod.ok());
  FUZZ_CHECK(pod->pod.is_object());
  if (from_json) (void)pod->pod.dump();
}

void CheckJob(const DistributedJob& job, bool from_json) {
  FUZZ_CHECK(!job.name.empty() && job.name.size() <= 40);
  FUZZ_CHECK(job.port >= 1 && job.port <= 65535);
  FUZZ_CHECK(job.communication.Validate().ok());
  FUZZ_CHECK(job.Replicas(ReplicaType::kChief) <= 1);
  const int members = job.Replicas(ReplicaType::kChief) + job.Replicas(ReplicaType::kWorker);
  FUZZ_CHECK(members >= 1);
  int total = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    FUZZ_CHECK(spec.replicas >= 0);
    total += spec.replicas;
  }
  const nlohmann::json service = op::BuildService(job);
  const nlohmann::json policy = op::BuildNetworkPolicy(job);
  const auto secret = op::BuildKeySecret(job);
  if (from_json) {
    (void)service.dump();
    (void)policy.dump();
    if (secret) (void)op::WithJobKey(*secret, std::string(32, '\xff')).dump();
  }
  if (total > 256) return;  // the round trip below is O(replicas^2)

  // Each replica's environment, as the operator builds it for a pod, read
  // back as the agent reads it.
  for (const auto& [type, spec] : job.replica_specs) {
    for (int index : {0, spec.replicas / 2, spec.replicas - 1}) {
      if (index < 0 || index >= spec.replicas) continue;
      ReplicaEnvOptions opts;
      opts.tf_config.namespace_ = job.namespace_.empty() ? "default" : job.namespace_;
      opts.restart_count = 0;
      auto env = BuildReplicaEnv(job, ReplicaKey{type, index}, opts);
      FUZZ_CHECK(env.ok());
      std::map<std::string, std::string> vars(env->begin(), env->end());
      auto parsed = ParseReplicaEnv([&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      });
      if (!parsed.ok()) std::fprintf(stderr, "ParseReplicaEnv: %s\n", parsed.status().ToString().c_str());
      FUZZ_CHECK(parsed.ok());
      FUZZ_CHECK(static_cast<int>(parsed->group.members.size()) == members);
      const bool member = type == ReplicaType::kChief || type == ReplicaType::kWorker;
      FUZZ_CHECK(parsed->group.rank.has_value() == member);
      if (member) {
        const int rank = (type == ReplicaType::kWorker ? job.Replicas(ReplicaType::kChief) : 0) + index;
        FUZZ_CHECK(*parsed->group.rank == rank);
      }
      const CommunicationOptions& got = parsed->communication;
      FUZZ_CHECK(got.bytes_per_pack == job.communication.bytes_per_pack);
      FUZZ_CHECK(got.implementation == job.communication.implementation);
      FUZZ_CHECK(got.algorithm == job.communication.algorithm);
      FUZZ_CHECK(got.EffectiveTimeout() == job.communication.EffectiveTimeout());
      CheckObjects(job, ReplicaKey{type, index}, from_json);
    }
  }
}

// The same JSON, where numbers are the same values: YAML has no unsigned
// integers (a JSON 18446744073709551615 comes back as a double), and NaN and
// the infinities are written as null.
bool SameJson(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    return x == y || (!std::isfinite(x) && b.is_null());
  }
  if (a.is_number_float() && !std::isfinite(a.get<double>())) return b.is_null();
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !SameJson(*it, *other)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameJson(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

size_t Depth(const nlohmann::json& v) {
  size_t d = 0;
  if (v.is_structured()) {
    for (const auto& item : v) d = std::max(d, Depth(item));
  }
  return d + 1;
}

// A TFJob's own face: its TF_CONFIG for each replica, and its DistributedJob
// YAML, loaded back.
void CheckTfJob(const TfJob& t) {
  const DistributedJob& job = t.job;
  for (const auto& n : t.notes) FUZZ_CHECK(!n.message.empty() && !n.path.empty());
  FUZZ_CHECK(t.ports.size() == job.replica_specs.size());
  if (job.TotalReplicas() <= 4096) {
    const bool sparse = t.enable_dynamic_worker;
    const int members = job.Replicas(ReplicaType::kChief) + job.Replicas(ReplicaType::kWorker);
    for (const auto& [type, spec] : job.replica_specs) {
      for (int index : {0, spec.replicas - 1}) {
        if (index < 0 || index >= spec.replicas) continue;  // a type of 0 replicas
        auto config = GenerateTfJobTfConfig(t, type, index, TfConfigOptions{});
        FUZZ_CHECK(config.ok());
        FUZZ_CHECK(nlohmann::json::accept(*config));
        // In the sparse form only a worker's names its own task: a PS task's
        // lists its own address alone whatever its index, and any other
        // task's lists no job of its own (training-operator's shape, which
        // the agent's parser refuses).
        if (sparse && type != ReplicaType::kWorker) continue;
        auto parsed = ParseTfConfig(*config);
        if (!parsed.ok()) std::fprintf(stderr, "ParseTfConfig: %s\n", parsed.status().ToString().c_str());
        FUZZ_CHECK(parsed.ok());
        FUZZ_CHECK(parsed->task_type && *parsed->task_type == TfJobReplicaTypeLower(t, type));
        FUZZ_CHECK(parsed->task_index == index);
        if (!sparse) {
          FUZZ_CHECK(parsed->environment == "cloud");
          FUZZ_CHECK(parsed->cluster.size() == job.replica_specs.size());
          const CollectiveGroup group = MakeCollectiveGroup(*parsed);
          FUZZ_CHECK(static_cast<int>(group.members.size()) == members);
        }
      }
      FUZZ_CHECK(!GenerateTfJobTfConfig(t, type, spec.replicas, TfConfigOptions{}).ok());
    }
  }
  // yaml-cpp refuses to read documents nested deeper than it allows.
  if (Depth(t.distributed_job) > 200) return;
  const std::string yaml = DistributedJobYaml(t);
  auto back = LoadSingleJob(yaml, "converted.yaml");
  if (!back.ok())
    std::fprintf(stderr, "converted:\n%s\n%s\n", yaml.c_str(), back.status().ToString().c_str());
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->name == job.name && back->namespace_ == job.namespace_ && back->port == job.port);
  FUZZ_CHECK(back->communication == job.communication && back->key_secret_ref == job.key_secret_ref);
  FUZZ_CHECK(back->success_policy == job.success_policy);
  const RunPolicy &a = back->run_policy, &b = job.run_policy;
  FUZZ_CHECK(a.backoff_limit == b.backoff_limit && a.active_deadline_seconds == b.active_deadline_seconds &&
             a.ttl_seconds_after_finished == b.ttl_seconds_after_finished &&
             a.clean_pod_policy == b.clean_pod_policy && a.suspend == b.suspend &&
             a.scheduling_policy == b.scheduling_policy && a.recovery == b.recovery &&
             a.elastic == b.elastic);
  FUZZ_CHECK(back->replica_specs.size() == job.replica_specs.size());
  for (const auto& [type, spec] : job.replica_specs) {
    const ReplicaSpec* other = back->Find(type);
    FUZZ_CHECK(other && other->replicas == spec.replicas && other->restart_policy == spec.restart_policy);
    // The same template, where its strings are UTF-8 (YAML cannot carry
    // other bytes).
    try {
      (void)spec.pod_template.dump();
    } catch (const nlohmann::json::exception&) {
      continue;
    }
    if (!SameJson(spec.pod_template, other->pod_template)) {
      std::fprintf(stderr, "template:\n%s\nback:\n%s\nyaml:\n%s\n", spec.pod_template.dump().c_str(),
                   other->pod_template.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str(),
                   yaml.c_str());
    }
    FUZZ_CHECK(SameJson(spec.pod_template, other->pod_template));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // The file, as `ringmaster validate` reads it.
  auto jobs = LoadJobs(text, "job.yaml");
  size_t valid = 0;
  bool errors = false;
  if (jobs.ok()) {
    FUZZ_CHECK(!jobs->empty());
    for (const auto& loaded : *jobs) {
      CheckErrors(loaded);
      errors |= !loaded.errors.empty();
      if (loaded.job) {
        CheckJob(*loaded.job, /*from_json=*/false);
        ++valid;
      }
    }
  } else {
    CheckError(jobs.status());
  }
  // LoadSingleJob agrees with LoadJobs.
  auto single = LoadSingleJob(text, "job.yaml");
  FUZZ_CHECK(single.ok() == (jobs.ok() && !errors && jobs->size() == 1));
  if (!single.ok()) CheckError(single.status());
  if (single.ok()) FUZZ_CHECK(valid == 1);

  // Both kinds, as the CLI reads a file.
  auto any = LoadAnyJobs(text, "job.yaml");
  if (any.ok()) {
    FUZZ_CHECK(!any->empty());
    size_t djs = 0;
    for (const auto& a : *any) {
      CheckErrors(a.loaded);
      FUZZ_CHECK(a.kind == kKind || a.kind == kTfJobKind);
      FUZZ_CHECK(a.tfjob.has_value() == (a.kind == kTfJobKind && a.loaded.job.has_value()));
      djs += a.kind == kKind;
      if (a.tfjob) {
        CheckJob(*a.loaded.job, /*from_json=*/false);
        CheckTfJob(*a.tfjob);
      }
    }
    FUZZ_CHECK(djs == (jobs.ok() ? jobs->size() : 0));
  } else {
    CheckError(any.status());
    FUZZ_CHECK(!jobs.ok());
  }

  // The object, as the operator decodes it from the API server.
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!object.is_discarded()) {
    LoadedJob loaded = DecodeJob(object);
    CheckErrors(loaded);
    if (loaded.job) CheckJob(*loaded.job, /*from_json=*/true);
    LoadedTfJob tf = DecodeTfJob(object);
    FUZZ_CHECK(tf.tfjob.has_value() == tf.errors.empty());
    for (const auto& e : tf.errors) FUZZ_CHECK(!e.message.empty());
    if (tf.tfjob) {
      CheckJob(tf.tfjob->job, /*from_json=*/true);
      CheckTfJob(*tf.tfjob);
    }
  }
  return 0;
}
