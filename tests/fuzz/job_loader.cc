// The job loader: a file as `ringmaster validate` / `ringmaster run` read it
// (LoadJobs, LoadSingleJob: YAML or JSON, several documents), and an object
// as the operator gets it from the API server (DecodeJob, when the input is
// JSON). A job that loads is then taken through what the operator and the
// local runner do with it: every replica's environment is built
// (BuildReplicaEnv) and read back as the agent reads it (ParseReplicaEnv),
// which must succeed and agree with the job; and the operator builds its
// pod (op::BuildPod), its Service, key Secret and NetworkPolicy, which must
// not fail on anything the loader accepted.
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

  // The object, as the operator decodes it from the API server.
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!object.is_discarded()) {
    LoadedJob loaded = DecodeJob(object);
    CheckErrors(loaded);
    if (loaded.job) CheckJob(*loaded.job, /*from_json=*/true);
  }
  return 0;
}
