#include "expectations.h"

#include "observe.h"

namespace ringmaster::op {

void Expectations::ExpectCreate(const std::string& job_key, const std::string& pod, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[job_key].creating[pod] = now;
}

void Expectations::ExpectDelete(const std::string& job_key, const std::string& pod, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[job_key].deleting[pod] = now;
}

void Expectations::Cancel(const std::string& job_key, const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_key);
  if (it == jobs_.end()) return;
  it->second.creating.erase(pod);
  it->second.deleting.erase(pod);
}

void Expectations::Forget(const std::string& job_key) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(job_key);
}

void Expectations::Asked(const std::string& job_key, const ApiAction& a, int64_t now) {
  if (a.kind == ApiActionKind::kCreatePod) ExpectCreate(job_key, a.name, now);
  if (a.kind == ApiActionKind::kDeletePod) ExpectDelete(job_key, a.name, now);
}

void Expectations::Answered(const std::string& job_key, const ApiAction& a, int code) {
  const bool ok = code >= 200 && code < 300;
  // A create refused as AlreadyExists (409): the pod is there, the cache
  // will show it. A delete answered 404: the pod is gone, but the cache may
  // still show it failed, so the deletion stays pending until it does not.
  const bool done = ok || (a.kind == ApiActionKind::kCreatePod && code == 409) ||
                    (a.kind == ApiActionKind::kDeletePod && code == 404);
  if ((a.kind == ApiActionKind::kCreatePod || a.kind == ApiActionKind::kDeletePod) && !done)
    Cancel(job_key, a.name);
}

void Expectations::Observe(const std::string& job_key, WatchEventType type, const nlohmann::json& pod) {
  // Any event of the pod's name tells that its creation reached the API
  // server (a pod created and deleted before a reconcile saw it is gone,
  // not pending). Lowered early, a creation costs at worst a create
  // refused as AlreadyExists. A deletion is not lowered here: a reconcile
  // that read the pods before this event would see the failed pod, not on
  // its way out, and restart it again (Settle lowers it against the pods
  // the plan is made from).
  (void)type;
  const std::string name = MetadataString(pod, "name");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_key);
  if (it != jobs_.end()) it->second.creating.erase(name);
}

Pending Expectations::Settle(const std::string& job_key, const std::vector<nlohmann::json>& pods,
                             int64_t now) {
  std::map<std::string, bool> shown;  // pod name -> on its way out
  for (const auto& pod : pods) {
    if (!pod.is_object() || !pod.contains("metadata") || !pod["metadata"].is_object()) continue;
    const auto& meta = pod["metadata"];
    const bool going = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
    shown[MetadataString(pod, "name")] = going;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_key);
  if (it == jobs_.end()) return {};
  Entry& e = it->second;
  for (auto c = e.creating.begin(); c != e.creating.end();) {
    c = shown.count(c->first) ? e.creating.erase(c) : std::next(c);
  }
  for (auto d = e.deleting.begin(); d != e.deleting.end();) {
    auto s = shown.find(d->first);
    d = s == shown.end() || s->second ? e.deleting.erase(d) : std::next(d);
  }
  return PendingLocked(e, now);
}

Pending Expectations::Get(const std::string& job_key, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_key);
  if (it == jobs_.end()) return {};
  return PendingLocked(it->second, now);
}

Pending Expectations::PendingLocked(Entry& e, int64_t now) {
  Pending p;
  for (auto* m : {&e.creating, &e.deleting}) {
    for (auto x = m->begin(); x != m->end();) {
      if (now - x->second >= ttl_) {
        x = m->erase(x);
      } else {
        (m == &e.creating ? p.creating : p.deleting).insert(x->first);
        ++x;
      }
    }
  }
  return p;
}

}  // namespace ringmaster::op
