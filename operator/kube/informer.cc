#include "informer.h"

#include <chrono>
#include <random>

#include "api_verdict.h"
#include "log.h"
#include "names.h"
#include "observe.h"

namespace ringmaster::op {

using nlohmann::json;

namespace {

// Sleeps up to `d`, waking early when `stop` is set.
void SleepUnlessStopped(std::chrono::milliseconds d, const std::atomic<bool>& stop) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}
}  // namespace

void StripManagedFields(json& obj) {
  if (obj.is_object() && obj.contains("metadata") && obj["metadata"].is_object())
    obj["metadata"].erase("managedFields");
}

void TrimPod(json& pod) {
  StripManagedFields(pod);
  if (!pod.is_object()) return;
  json trimmed = json::object();
  if (pod.contains("metadata")) {
    trimmed["metadata"] = std::move(pod["metadata"]);
    json& meta = trimmed["metadata"];
    // Of the annotations only Kueue's end-of-group mark (the plan sets it
    // once, when the job has ended).
    json kept = json::object();
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      auto it = meta["annotations"].find(kKueueRetriableInGroupAnnotation);
      if (it != meta["annotations"].end()) kept[kKueueRetriableInGroupAnnotation] = std::move(*it);
    }
    meta.erase("annotations");
    if (!kept.empty()) meta["annotations"] = std::move(kept);
  }
  // The scheduling gates: a gated pod waits for its queue's admission.
  if (pod.contains("spec") && pod["spec"].is_object() && pod["spec"].contains("schedulingGates"))
    trimmed["spec"] = {{"schedulingGates", std::move(pod["spec"]["schedulingGates"])}};
  if (pod.contains("status") && pod["status"].is_object()) {
    json& st = pod["status"];
    json out = json::object();
    if (st.contains("phase")) out["phase"] = std::move(st["phase"]);
    // Kueue's TerminationTarget: the pod is stopped by a preemption, not a failure.
    if (st.contains("conditions") && st["conditions"].is_array()) {
      json conds = json::array();
      for (auto& c : st["conditions"]) {
        if (c.is_object() && c.value("type", "") == kKueueTerminationTargetCondition)
          conds.push_back(std::move(c));
      }
      if (!conds.empty()) out["conditions"] = std::move(conds);
    }
    if (st.contains("containerStatuses") && st["containerStatuses"].is_array()) {
      json cs = json::array();
      for (auto& c : st["containerStatuses"]) {
        if (!c.is_object()) continue;
        json keep = json::object();
        if (c.contains("name")) keep["name"] = std::move(c["name"]);
        if (c.contains("restartCount")) keep["restartCount"] = std::move(c["restartCount"]);
        // terminated (exit code, finishedAt, the termination message: the
        // job's verdict) of the current and, for a restarted container, the
        // last run.
        for (const char* which : {"state", "lastState"}) {
          if (c.contains(which) && c[which].is_object() && c[which].contains("terminated"))
            keep[which] = {{"terminated", std::move(c[which]["terminated"])}};
        }
        cs.push_back(std::move(keep));
      }
      out["containerStatuses"] = std::move(cs);
    }
    trimmed["status"] = std::move(out);
  }
  pod = std::move(trimmed);
}

bool NewerResourceVersion(const std::string& incoming, const std::string& cached) {
  try {
    return std::stoull(incoming) >= std::stoull(cached);
  } catch (...) {
    return true;
  }
}

Informer::Informer(KubeClient& client, std::string name, std::string collection_path,
                   std::string label_selector, Handler handler, Transform transform, std::string job_label)
    : client_(client),
      name_(std::move(name)),
      path_(std::move(collection_path)),
      selector_(std::move(label_selector)),
      handler_(std::move(handler)),
      transform_(transform ? std::move(transform) : Transform(StripManagedFields)),
      job_label_(std::move(job_label)) {}

Informer::~Informer() {
  Stop();
}

void Informer::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(canceller_mu_);
    if (canceller_) canceller_->Cancel();
  }
  if (thread_.joinable()) thread_.join();
}

std::string Informer::KeyOf(const json& obj) {
  return ObjectKey(MetadataString(obj, "namespace"), MetadataString(obj, "name"));
}

std::optional<json> Informer::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = store_.find(key);
  if (it == store_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> Informer::ByJob(const std::string& job_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> out;
  auto it = by_job_.find(job_key);
  if (it == by_job_.end()) return out;
  for (const auto& k : it->second) {
    auto o = store_.find(k);
    if (o != store_.end()) out.push_back(o->second);
  }
  return out;
}

std::vector<json> Informer::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> out;
  out.reserve(store_.size());
  for (const auto& [k, v] : store_) out.push_back(v);
  return out;
}

void Informer::ForEach(const std::function<void(const json&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [k, v] : store_) fn(v);
}

void Informer::Upsert(const json& in) {
  json obj = in;
  transform_(obj);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = KeyOf(obj);
  auto it = store_.find(key);
  if (it != store_.end() && !NewerResourceVersion(MetadataString(obj, "resourceVersion"),
                                                  MetadataString(it->second, "resourceVersion")))
    return;
  store_[key] = obj;
}

void Informer::Apply(WatchEventType type, json obj) {
  transform_(obj);
  const std::string key = KeyOf(obj);
  const std::string job = JobKeyOf(obj, job_label_.c_str());
  std::optional<json> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = store_.find(key);
    if (it != store_.end()) old = it->second;
    if (type == WatchEventType::kDeleted) {
      store_.erase(key);
      if (old) {
        const std::string old_job = JobKeyOf(*old, job_label_.c_str());
        if (!old_job.empty()) by_job_[old_job].erase(key);
      }
    } else {
      // Our own write's answer (Upsert) may be ahead of the watch: the
      // versions in between are history, not news.
      if (old && !NewerResourceVersion(MetadataString(obj, "resourceVersion"),
                                       MetadataString(*old, "resourceVersion")))
        return;
      store_[key] = obj;
      if (!job.empty()) by_job_[job].insert(key);
    }
  }
  handler_(type, obj, old ? &*old : nullptr);
}

bool Informer::Relist() {
  ++relists_;
  std::string cont;
  std::map<std::string, json> fresh;
  std::string rv;
  do {
    std::string path = path_ + "?limit=500";
    if (!selector_.empty()) path += "&labelSelector=" + QueryEscape(selector_);
    if (!cont.empty()) path += "&continue=" + QueryEscape(cont);
    auto resp = client_.Request("GET", path);
    if (!resp.ok()) {
      LogWarning("list failed", {{"informer", name_}, {"error", resp.status().ToString()}});
      return false;
    }
    if (!resp->ok()) {
      // A missing CRD or Role is an error the user must act on; a 5xx may pass.
      ApiVerdict v = JudgeListAnswer(name_.substr(0, name_.find('/')), path_, resp->code, resp->Message());
      if (v.heals)
        LogWarning("list failed", {{"informer", name_}, {"code", resp->code}, {"error", v.message}});
      else
        LogError("list failed", {{"informer", name_}, {"code", resp->code}, {"error", v.message}});
      return false;
    }
    json& body = resp->body;
    if (body.contains("items") && body["items"].is_array()) {
      for (auto& item : body["items"]) {
        transform_(item);
        const std::string key = KeyOf(item);
        fresh[key] = std::move(item);
      }
    }
    rv = body["metadata"].value("resourceVersion", "");
    cont = body["metadata"].value("continue", "");
  } while (!cont.empty() && !stop_);

  // Deletions first, then adds/updates, through the same path as watch events.
  std::vector<json> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : store_) {
      if (!fresh.count(k)) gone.push_back(v);
    }
  }
  for (const auto& g : gone) Apply(WatchEventType::kDeleted, g);
  const size_t listed = fresh.size();
  for (auto& [k, v] : fresh) Apply(WatchEventType::kModified, std::move(v));
  resource_version_ = rv;
  synced_ = true;
  LogInfo("listed", {{"informer", name_}, {"objects", listed}, {"resourceVersion", rv}});
  return true;
}

void Informer::Run() {
  std::mt19937 rng(std::random_device{}());
  auto backoff = std::chrono::milliseconds(500);
  const auto max_backoff = std::chrono::milliseconds(30'000);
  bool need_list = true;
  while (!stop_) {
    if (need_list) {
      if (!Relist()) {
        SleepUnlessStopped(backoff, stop_);
        backoff = std::min(backoff * 2, max_backoff);
        continue;
      }
      need_list = false;
    }
    // Server-side timeout in [240, 300) s, as client-go spreads its reconnects.
    const int timeout = 240 + static_cast<int>(rng() % 60);
    std::string path = path_ + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(timeout) +
                       "&resourceVersion=" + QueryEscape(resource_version_);
    if (!selector_.empty()) path += "&labelSelector=" + QueryEscape(selector_);
    {
      std::lock_guard<std::mutex> lock(canceller_mu_);
      canceller_ = std::make_unique<WatchCanceller>();
      if (stop_) break;
    }
    bool gone = false;
    bool got_events = false;
    const auto watch_start = std::chrono::steady_clock::now();
    bool stopped = false;
    int http_code = 0;
    Status st = client_.Watch(
        path,
        [&](std::string_view line) {
          auto ev = DecodeWatchEvent(line);
          if (!ev.ok()) {
            // A non-2xx body (a Status) comes here too.
            json body = json::parse(line, nullptr, false);
            if (IsGoneStatus(body)) gone = true;
            stopped = true;
            return false;
          }
          got_events = true;
          switch (ev->type) {
            case WatchEventType::kBookmark:
              resource_version_ = ev->resource_version;
              return true;
            case WatchEventType::kError:
              gone = ev->gone;
              LogWarning("watch error", {{"informer", name_}, {"gone", gone}, {"error", ev->error_message}});
              stopped = true;
              return false;
            default:
              if (!ev->resource_version.empty()) resource_version_ = ev->resource_version;
              Apply(ev->type, std::move(ev->object));
              return true;
          }
        },
        std::chrono::seconds(timeout + 60), canceller_.get(), &http_code);
    if (stop_) break;
    if (gone || http_code == 410) {
      LogInfo("resourceVersion expired (410): relisting", {{"informer", name_}});
      need_list = true;
      continue;
    }
    if (st.ok() && !stopped && http_code >= 200 && http_code < 300 &&
        (got_events || std::chrono::steady_clock::now() - watch_start > std::chrono::seconds(1))) {
      backoff = std::chrono::milliseconds(500);
      continue;  // the server closed the watch at its timeout: resume
    }
    LogWarning("watch failed; reconnecting",
               {{"informer", name_}, {"error", st.ToString()}, {"backoff_ms", backoff.count()}});
    SleepUnlessStopped(backoff, stop_);
    backoff = std::min(backoff * 2, max_backoff);
  }
}

}  // namespace ringmaster::op
