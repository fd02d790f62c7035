// What the operator has asked the API server to do for each job but has not
// yet seen in its informer cache. Read into reconcile's `Pending`, so a
// reconcile that runs before the cache catches up neither creates a pod twice
// nor counts a restart twice. Entries expire (a lost watch event must not
// block a job forever). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "reconcile.h"

namespace ringmaster::op {

class Expectations {
 public:
  explicit Expectations(int64_t ttl_seconds = 300) : ttl_(ttl_seconds) {}

  void ExpectCreate(const std::string& job_key, const std::string& pod, int64_t now);
  void ExpectDelete(const std::string& job_key, const std::string& pod, int64_t now);
  // The cache showed the pod (created) or showed it gone or terminating.
  void ObservedCreate(const std::string& job_key, const std::string& pod);
  void ObservedDelete(const std::string& job_key, const std::string& pod);
  // A create or delete that failed: nothing to wait for.
  void Cancel(const std::string& job_key, const std::string& pod);
  void Forget(const std::string& job_key);  // the job is gone
  Pending Get(const std::string& job_key, int64_t now);

 private:
  struct Entry {
    std::map<std::string, int64_t> creating, deleting;  // pod -> when asked
  };
  int64_t ttl_;
  std::mutex mu_;
  std::map<std::string, Entry> jobs_;
};

}  // namespace ringmaster::op
