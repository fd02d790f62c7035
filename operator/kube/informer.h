// An informer: list, then watch from the list's resourceVersion with
// bookmarks, into an in-memory cache; 410 Gone -> relist; transport errors
// -> reconnect with capped exponential backoff. Handlers run on the
// informer's thread after the cache is updated. Objects are indexed by their
// job label (`ringmaster.io/job-name` unless given: "namespace/job") for the
// controller.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "names.h"
#include "watch_event.h"

namespace ringmaster::op {

class Informer {
 public:
  // `old` is the cached object before a change (null for an add).
  using Handler = std::function<void(WatchEventType, const nlohmann::json& obj, const nlohmann::json* old)>;

  // `collection_path`: e.g. "/api/v1/pods" or "/api/v1/namespaces/x/pods".
  // Trims an object before it is cached (memory: drop what no one reads).
  using Transform = std::function<void(nlohmann::json&)>;

  // `job_label`: the label whose value names an object's job (ByJob's index).
  Informer(KubeClient& client, std::string name, std::string collection_path, std::string label_selector,
           Handler handler, Transform transform = nullptr, std::string job_label = kLabelJobName);
  ~Informer();

  void Start();
  void Stop();  // cancels the watch; joins the thread
  bool HasSynced() const { return synced_; }

  std::optional<nlohmann::json> Get(const std::string& key) const;  // "namespace/name"
  std::vector<nlohmann::json> ByJob(const std::string& job_key) const;
  std::vector<nlohmann::json> List() const;
  // Visits every cached object under the cache's lock (no copies).
  void ForEach(const std::function<void(const nlohmann::json&)>& fn) const;
  // Puts a newer object into the cache (a write's answer), ignored when the
  // cache already holds a newer one.
  void Upsert(const nlohmann::json& obj);

  int relists() const { return relists_; }

 private:
  void Run();
  bool Relist();  // false on failure
  void Apply(WatchEventType type, nlohmann::json obj);
  static std::string KeyOf(const nlohmann::json& obj);

  KubeClient& client_;
  std::string name_, path_, selector_;
  Handler handler_;
  Transform transform_;
  std::string job_label_;
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> store_;
  std::map<std::string, std::set<std::string>> by_job_;
  std::string resource_version_;
  std::atomic<bool> synced_{false}, stop_{false};
  std::atomic<int> relists_{0};
  std::mutex canceller_mu_;
  std::unique_ptr<WatchCanceller> canceller_;
  std::thread thread_;
};

// Drops metadata.managedFields (often the largest part of an object).
void StripManagedFields(nlohmann::json& obj);
// Keeps of a pod only what the controller reads: metadata and the status
// fields behind the phase, exit codes, restart counts and termination
// messages (state and lastState .terminated).
void TrimPod(nlohmann::json& pod);

// A resourceVersion is an opaque string, but the API server's are integers:
// newer wins when both parse; otherwise the incoming one does.
bool NewerResourceVersion(const std::string& incoming, const std::string& cached);

}  // namespace ringmaster::op
