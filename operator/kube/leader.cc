#include "leader.h"

#include <cstdio>
#include <thread>

#include "log.h"
#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::string s = FormatRfc3339(us / 1'000'000);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06lldZ", static_cast<long long>(us % 1'000'000));
  return s.substr(0, s.size() - 1) + frac;
}

LeaderElector::LeaderElector(KubeClient& client, LeaderOptions options)
    : client_(client), options_(std::move(options)) {}

std::string LeaderElector::Path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + options_.namespace_ + "/leases";
}

ApiVerdict LeaderElector::Judge(std::string_view verb, const StatusOr<HttpResponse>& answer) const {
  if (!answer.ok())
    return JudgeLeaseAnswer(verb, 0, answer.status().ToString(), options_.namespace_, options_.name);
  return JudgeLeaseAnswer(verb, answer->code, answer->Message(), options_.namespace_, options_.name);
}

bool LeaderElector::TryAcquireOrRenew(ApiVerdict* problem) {
  *problem = {};
  const auto now_wall = std::chrono::system_clock::now();
  const auto now = std::chrono::steady_clock::now();
  const std::string now_text = FormatMicroTime(now_wall);
  auto got = client_.Request("GET", Path() + "/" + options_.name);
  if (got.ok() && got->code == 404) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", options_.name}, {"namespace", options_.namespace_}}},
                  {"spec",
                   {{"holderIdentity", options_.identity},
                    {"leaseDurationSeconds", options_.lease_duration.count()},
                    {"acquireTime", now_text},
                    {"renewTime", now_text},
                    {"leaseTransitions", 0}}}};
    auto created = client_.Request("POST", Path(), &lease);
    *problem = Judge("create", created);
    return created.ok() && created->ok();
  }
  *problem = Judge("get", got);
  if (!got.ok() || !got->ok()) return false;
  json lease = got->body;
  json& spec = lease["spec"];
  if (!spec.is_object()) spec = json::object();
  const std::string holder = spec.value("holderIdentity", "");
  const std::string record = holder + "|" + spec.value("renewTime", "");
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = now;
  }
  const int64_t duration = spec.value("leaseDurationSeconds", options_.lease_duration.count());
  const bool expired = now > observed_at_ + std::chrono::seconds(duration);
  const bool mine = holder == options_.identity;
  if (!mine && !holder.empty() && !expired) return false;
  if (!mine) {
    spec["acquireTime"] = now_text;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = options_.lease_duration.count();
  spec["renewTime"] = now_text;
  auto put = client_.Request("PUT", Path() + "/" + options_.name, &lease);
  if (put.ok() && put->code == 409) return false;  // someone else wrote first: not a problem
  *problem = Judge("update", put);
  if (!put.ok() || !put->ok()) return false;
  observed_record_ = options_.identity + "|" + now_text;
  observed_at_ = now;
  return true;
}

Status LeaderElector::Acquire(const std::atomic<bool>& stop) {
  LogInfo("waiting for the leader lease",
          {{"lease", options_.namespace_ + "/" + options_.name}, {"identity", options_.identity}});
  std::string holder_logged, problem_logged;
  auto problem_at = std::chrono::steady_clock::time_point{};
  while (!stop) {
    ApiVerdict problem;
    if (TryAcquireOrRenew(&problem)) {
      leading_ = true;
      LogInfo("became the leader", {{"identity", options_.identity}});
      return OkStatus();
    }
    if (!problem.heals) {
      LogError("cannot take the leader lease", {{"error", problem.message}});
      return FailedPreconditionError(problem.message);
    }
    const auto now = std::chrono::steady_clock::now();
    if (!problem.message.empty() &&
        (problem.message != problem_logged || now - problem_at > std::chrono::seconds(30))) {
      LogWarning("still waiting for the leader lease", {{"error", problem.message}});
      problem_logged = problem.message;
      problem_at = now;
    }
    const std::string holder = observed_record_.substr(0, observed_record_.find('|'));
    if (problem.message.empty() && !holder.empty() && holder != holder_logged) {
      LogInfo("another operator leads; standing by",
              {{"lease", options_.namespace_ + "/" + options_.name}, {"holder", holder}});
      holder_logged = holder;
    }
    for (auto t = std::chrono::milliseconds(0); t < options_.retry_period && !stop;
         t += std::chrono::milliseconds(100))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return CancelledError("stopped while waiting for the leader lease");
}

bool LeaderElector::Renew(const std::atomic<bool>& stop) {
  auto last_renew = std::chrono::steady_clock::now();
  while (!stop) {
    for (auto t = std::chrono::milliseconds(0); t < options_.retry_period && !stop;
         t += std::chrono::milliseconds(100))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (stop) break;
    ApiVerdict problem;
    if (TryAcquireOrRenew(&problem)) {
      last_renew = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - last_renew > options_.renew_deadline) {
      leading_ = false;
      LogError("lost the leader lease", {{"identity", options_.identity}, {"error", problem.message}});
      return false;
    }
  }
  return true;
}

void LeaderElector::Release() {
  if (!leading_) return;
  auto got = client_.Request("GET", Path() + "/" + options_.name);
  if (!got.ok() || !got->ok()) return;
  json lease = got->body;
  if (lease["spec"].value("holderIdentity", "") != options_.identity) return;
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = FormatMicroTime(std::chrono::system_clock::now());
  auto put = client_.Request("PUT", Path() + "/" + options_.name, &lease);
  leading_ = false;
  if (put.ok() && put->ok()) LogInfo("released the leader lease", {{"identity", options_.identity}});
}

}  // namespace ringmaster::op
