// What the operator has asked the API server to do for each job but has not
// yet seen in its informer cache. Read into reconcile's `Pending`, so a
// reconcile that runs before the cache catches up neither creates a pod twice
// nor counts a restart twice. A deletion is pending until the pods a plan is
// made from show it (the pod gone or terminating), never lowered by a watch
// event alone: the event may come after the reconcile read its pods.
// Entries expire (a lost watch event must not block a job forever).
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reconcile.h"
#include "watch_event.h"

namespace ringmaster::op {

class Expectations {
 public:
  explicit Expectations(int64_t ttl_seconds = 300) : ttl_(ttl_seconds) {}

  // The controller's bookkeeping around one action of a plan (kCreatePod,
  // kDeletePod; others are ignored): Asked before its request, Answered
  // with the HTTP status of the answer (0: no answer). A refused request
  // leaves nothing to wait for; a create answered 409 (AlreadyExists) or a
  // delete answered 404 (gone already) waits for the cache as a success
  // does.
  void Asked(const std::string& job_key, const ApiAction& a, int64_t now);
  void Answered(const std::string& job_key, const ApiAction& a, int code);
  // A watch event of one of the job's pods: its creation, if pending, is
  // seen (a pod created and deleted before any reconcile saw it is gone,
  // not pending). Deletions are left to Settle.
  void Observe(const std::string& job_key, WatchEventType type, const nlohmann::json& pod);
  // What is still pending for a plan made from `pods` (the job's pods as
  // the cache showed them to this reconcile): a creation until they hold a
  // pod of its name, a deletion until they hold none or one terminating.
  // What they show done is dropped.
  Pending Settle(const std::string& job_key, const std::vector<nlohmann::json>& pods, int64_t now);
  // What is pending, whatever the cache shows.
  Pending Get(const std::string& job_key, int64_t now);

  void ExpectCreate(const std::string& job_key, const std::string& pod, int64_t now);
  void ExpectDelete(const std::string& job_key, const std::string& pod, int64_t now);
  // A create or delete that failed: nothing to wait for.
  void Cancel(const std::string& job_key, const std::string& pod);
  void Forget(const std::string& job_key);  // the job is gone

 private:
  struct Entry {
    std::map<std::string, int64_t> creating, deleting;  // pod -> when asked
  };
  // The entries of `e` not expired at `now` (the expired dropped).
  Pending PendingLocked(Entry& e, int64_t now);

  int64_t ttl_;
  std::mutex mu_;
  std::map<std::string, Entry> jobs_;
};

}  // namespace ringmaster::op
