// The event recorder (events.h): a bounded queue and one thread that posts.
#include "events.h"

#include <algorithm>

#include "event_delivery.h"
#include "log.h"
#include "observe.h"
#include "time_util.h"

namespace ringmaster::op {

using nlohmann::json;

EventRecorder::EventRecorder(KubeClient& client, size_t capacity) : client_(client), capacity_(capacity) {}

EventRecorder::~EventRecorder() {
  Stop(std::chrono::milliseconds(0));
}

void EventRecorder::Start() {
  thread_ = std::thread([this] { Run(); });
}

void EventRecorder::Stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) {
      stop_ = true;
      stop_by_ = std::chrono::steady_clock::now() + grace;
    }
  }
  cv_.notify_all();
  stopped_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string EventRecorder::OnceKey(const json& involved, const std::string& once) {
  const std::string uid = MetadataString(involved, "uid");
  // Names are at most 253 characters: the object's part is cut to leave
  // room for the key (a pod's uid in it) and the object's uid (36 each).
  return MetadataString(involved, "namespace") + "/" + MetadataString(involved, "name").substr(0, 150) + "." +
         once + (uid.empty() ? "" : "." + uid);
}

bool EventRecorder::Known(const json& involved, const std::string& once) {
  const std::string key = OnceKey(involved, once);
  std::lock_guard<std::mutex> lock(mu_);
  return once_known_.count(key) > 0;
}

json EventRecorder::Make(const json& involved, const std::string& api_version, const std::string& kind,
                         bool warning, const std::string& reason, const std::string& message,
                         const std::string& once) {
  const std::string ns = MetadataString(involved, "namespace");
  const int64_t now = NowSeconds();
  const std::string ts = FormatRfc3339(now);
  const std::string object = MetadataString(involved, "name");
  const std::string name = !once.empty() ? OnceKey(involved, once).substr(ns.size() + 1)
                                         : object + "." + std::to_string(now) + "." + std::to_string(seq_++);
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", name}, {"namespace", ns}}},
             {"involvedObject",
              {{"apiVersion", api_version},
               {"kind", kind},
               {"name", MetadataString(involved, "name")},
               {"namespace", ns},
               {"uid", MetadataString(involved, "uid")},
               {"resourceVersion", MetadataString(involved, "resourceVersion")}}},
             {"reason", reason},
             {"message", message},
             {"type", warning ? "Warning" : "Normal"},
             {"source", {{"component", "ringmaster-operator"}}},
             {"firstTimestamp", ts},
             {"lastTimestamp", ts},
             {"count", 1}};
  return ev;
}

void EventRecorder::KnowOnce(const std::string& key) {
  once_known_.insert(key);
  once_order_.push_back(key);
  if (once_order_.size() > kOnceKept) {
    once_known_.erase(once_order_.front());
    once_order_.pop_front();
  }
}

bool EventRecorder::Record(const json& involved, const std::string& api_version, const std::string& kind,
                           bool warning, const std::string& reason, const std::string& message,
                           const std::string& once) {
  json ev = Make(involved, api_version, kind, warning, reason, message, once);
  const std::string key =
      ev["metadata"]["namespace"].get<std::string>() + "/" + ev["metadata"]["name"].get<std::string>();
  std::lock_guard<std::mutex> lock(mu_);
  if (!once.empty() && once_known_.count(key)) return false;
  if (stop_ || queue_.size() >= capacity_) {
    ++dropped_;
    LogWarning("event dropped: queue full", {{"reason", reason}});
    return false;
  }
  if (!once.empty()) KnowOnce(key);
  queue_.push_back({std::move(ev), std::chrono::steady_clock::now(), 0, !once.empty()});
  cv_.notify_one();
  return true;
}

Status EventRecorder::Deliver(const json& involved, const std::string& api_version, const std::string& kind,
                              bool warning, const std::string& reason, const std::string& message,
                              const std::string& once, std::chrono::milliseconds within) {
  using Clock = std::chrono::steady_clock;
  if (once.empty()) {  // a fresh name at each telling: nothing to dedupe, nothing to wait for
    Record(involved, api_version, kind, warning, reason, message);
    return OkStatus();
  }
  json ev = Make(involved, api_version, kind, warning, reason, message, once);
  const std::string ns = ev["metadata"]["namespace"].get<std::string>();
  const std::string key = ns + "/" + ev["metadata"]["name"].get<std::string>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (once_known_.count(key) && !std::any_of(queue_.begin(), queue_.end(), [&](const Queued& q) {
          return q.event["metadata"]["name"] == ev["metadata"]["name"];
        }))
      return OkStatus();  // delivered before
  }
  const auto start = Clock::now();
  std::string error;
  for (int attempts = 1;; ++attempts) {
    auto resp = client_.Request("POST", "/api/v1/namespaces/" + ns + "/events", &ev);
    const int code = resp.ok() ? resp->code : 0;
    error = resp.ok() ? resp->Message() : resp.status().ToString();
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    const EventPostDecision d = DecideEventPost(code, attempts, age);
    if (d.next == EventPostNext::kDone) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!once_known_.count(key)) KnowOnce(key);
      return OkStatus();
    }
    if (d.next == EventPostNext::kDrop || age + d.delay >= within) break;
    std::unique_lock<std::mutex> lock(mu_);
    if (stopped_cv_.wait_for(lock, d.delay, [&] { return stop_; })) break;
  }
  return UnavailableError("event " + key + " (" + reason + ") not recorded: " + error);
}

void EventRecorder::Run() {
  using Clock = std::chrono::steady_clock;
  while (true) {
    json ev;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty() || (stop_ && Clock::now() >= stop_by_)) return;
      ev = queue_.front().event;  // stays at the front (order kept) until delivered or dropped
    }
    const std::string ns = ev["metadata"]["namespace"];
    auto resp = client_.Request("POST", "/api/v1/namespaces/" + ns + "/events", &ev);
    const int code = resp.ok() ? resp->code : 0;
    std::unique_lock<std::mutex> lock(mu_);
    Queued& front = queue_.front();
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - front.recorded);
    const EventPostDecision d = DecideEventPost(code, ++front.attempts, age);
    if (d.next == EventPostNext::kRetry) {
      // Woken early only to stop; Stop()'s grace still bounds the wait.
      cv_.wait_for(lock, d.delay, [&] { return stop_; });
      if (stop_) cv_.wait_until(lock, std::min(stop_by_, Clock::now() + d.delay));
      continue;
    }
    if (d.next == EventPostNext::kDrop) {
      ++dropped_;
      LogWarning("event not recorded", {{"reason", ev["reason"]},
                                        {"attempts", front.attempts},
                                        {"error", resp.ok() ? resp->Message() : resp.status().ToString()}});
      // Not recorded: a later telling of it may be.
      if (front.once) once_known_.erase(ns + "/" + ev["metadata"]["name"].get<std::string>());
    }
    queue_.pop_front();
  }
}

}  // namespace ringmaster::op
