#include "expectations.h"

namespace ringmaster::op {

void Expectations::ExpectCreate(const std::string& job_key, const std::string& pod, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[job_key].creating[pod] = now;
}

void Expectations::ExpectDelete(const std::string& job_key, const std::string& pod, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[job_key].deleting[pod] = now;
}

void Expectations::ObservedCreate(const std::string& job_key, const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_key);
  if (it != jobs_.end()) it->second.creating.erase(pod);
}

void Expectations::ObservedDelete(const std::string& job_key, const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_key);
  if (it != jobs_.end()) it->second.deleting.erase(pod);
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

Pending Expectations::Get(const std::string& job_key, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  Pending p;
  auto it = jobs_.find(job_key);
  if (it == jobs_.end()) return p;
  for (auto* m : {&it->second.creating, &it->second.deleting}) {
    for (auto e = m->begin(); e != m->end();) {
      if (now - e->second >= ttl_) {
        e = m->erase(e);
      } else {
        (m == &it->second.creating ? p.creating : p.deleting).insert(e->first);
        ++e;
      }
    }
  }
  return p;
}

}  // namespace ringmaster::op
