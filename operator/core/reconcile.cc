// The planner of a DistributedJob: its hooks into the one planner
// (planner.h: its pods named <job>-<type>-<index>, one headless Service for
// the job, the status with observedGeneration and state), the plan of an
// invalid job, and the plan's vocabulary (reconcile.h).
#include "reconcile.h"

#include "names.h"
#include "observe.h"
#include "planner.h"
#include "status_json.h"

namespace ringmaster::op {

using nlohmann::json;

namespace {

Plan InvalidJob(const json& job_obj, const std::vector<FieldError>& errors, int64_t now) {
  Plan plan;
  JobStatus status = StatusFromJson(job_obj.value("status", json::object()));
  std::string message = "invalid spec:";
  for (const auto& e : errors) message += " " + e.path + ": " + e.message + ";";
  if (!status.Is(ConditionType::kFailed)) {
    status.conditions.push_back({ConditionType::kFailed, true, "InvalidSpec", message, now});
    if (!status.completion_time) status.completion_time = now;
    plan.events.push_back({true, "InvalidSpec", message});
    plan.status = StatusToJson(status, Generation(job_obj));
  }
  plan.state = StateOf(status);
  OrderPlan(plan, {}, {}, {}, {});
  return plan;
}

class DistributedJobPlan final : public PlanKind {
 public:
  DistributedJobPlan(const json& obj, const DistributedJob& job, const json* service)
      : obj_(obj),
        job_(job),
        service_(service),
        status_obj_(obj.contains("status") ? obj["status"] : empty_) {}

  const DistributedJob& Job() const override { return job_; }
  std::string ReplicaName(const ReplicaKey& key) const override { return PodName(job_.name, key); }
  const ReplicaLabels& Labels() const override { return kDistributedJobLabels; }
  JobStatus OldStatus() const override { return StatusFromJson(status_obj_); }

  std::vector<ApiAction> MissingServices() const override {
    if (service_) return {};
    return {{ApiActionKind::kCreateService, job_.name, BuildService(job_), "SuccessfulCreateService"}};
  }
  std::optional<json> KeySecret() const override { return BuildKeySecret(job_); }
  json NetworkPolicy() const override { return BuildNetworkPolicy(job_); }
  StatusOr<std::optional<json>> ClusterConfigMap(const BuildOptions& opts) const override {
    return BuildTfClusterConfigMap(job_, opts);
  }
  std::vector<json> GangObjects(GangApi api) const override { return BuildGangObjects(job_, api); }
  StatusOr<BuiltPod> Pod(const ReplicaKey& key, const BuildOptions& opts) const override {
    return BuildPod(job_, key, opts);
  }

  std::vector<JobEvent> Events(const Decision& d, const JobStatus&,
                               const std::vector<ReplicaObservation>&) const override {
    return d.events;
  }
  std::optional<json> NewStatus(const Decision& d, const JobStatus& old_status,
                                const std::vector<ReplicaObservation>&, const std::string& state,
                                int64_t) const override {
    const int64_t generation = Generation(obj_);
    const bool same_generation =
        status_obj_.is_object() && status_obj_.value("observedGeneration", int64_t{-1}) == generation;
    if (!(d.status == old_status) || !same_generation || !status_obj_.is_object() ||
        status_obj_.value("state", "") != state) {
      return StatusToJson(d.status, generation);
    }
    return std::nullopt;
  }

 private:
  const json empty_ = json::object();
  const json& obj_;
  const DistributedJob& job_;
  const json* service_;
  const json& status_obj_;
};

}  // namespace

std::string_view ApiActionKindName(ApiActionKind kind) {
  switch (kind) {
    case ApiActionKind::kWriteStatus:
      return "write-status";
    case ApiActionKind::kRecordEvents:
      return "record-events";
    case ApiActionKind::kCreateService:
      return "create-service";
    case ApiActionKind::kCreateKeySecret:
      return "create-key-secret";
    case ApiActionKind::kCreateNetworkPolicy:
      return "create-network-policy";
    case ApiActionKind::kCreateConfigMap:
      return "create-config-map";
    case ApiActionKind::kCreateGangObject:
      return "create-gang-object";
    case ApiActionKind::kCreatePod:
      return "create-pod";
    case ApiActionKind::kPatchPod:
      return "patch-pod";
    case ApiActionKind::kPatchJob:
      return "patch-job";
    case ApiActionKind::kDeletePod:
      return "delete-pod";
    case ApiActionKind::kDeleteService:
      return "delete-service";
    case ApiActionKind::kDeleteJob:
      return "delete-job";
  }
  return "?";
}

std::string_view OnFailureName(OnFailure on_failure) {
  switch (on_failure) {
    case OnFailure::kContinue:
      return "continue";
    case OnFailure::kNoNewPods:
      return "no-new-pods";
    case OnFailure::kStop:
      return "stop";
  }
  return "?";
}

std::vector<ApiAction> PlanDeletedJob(const std::vector<json>& pods) {
  std::vector<const json*> all;
  for (const auto& pod : pods) {
    if (pod.is_object() && pod.contains("metadata") && pod["metadata"].is_object()) all.push_back(&pod);
  }
  return KueuePatches(all, /*finished=*/false);
}

Plan PlanJob(const json& job_obj, const std::vector<json>& pods, const json* service, const Pending& pending,
             int64_t now, const BuildOptions& opts) {
  LoadedJob loaded = DecodeJob(job_obj);
  if (!loaded.job) return InvalidJob(job_obj, loaded.errors, now);
  return PlanReplicas(DistributedJobPlan(job_obj, *loaded.job, service), job_obj, pods, pending, now, opts);
}

}  // namespace ringmaster::op
