#include "work_queue.h"

#include <algorithm>

namespace ringmaster::op {

namespace {
double Seconds(WorkQueue::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
}  // namespace

std::chrono::milliseconds ItemBackoff::When(const std::string& key) {
  int n = failures_[key]++;
  auto delay = base_;
  for (int i = 0; i < n && delay < cap_; ++i) delay *= 2;
  return std::min(delay, cap_);
}

int ItemBackoff::Failures(const std::string& key) const {
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

WorkQueue::WorkQueue(std::chrono::milliseconds base, std::chrono::milliseconds cap, Now now,
                     WorkQueueObserver* observer)
    : backoff_(base, cap), now_(std::move(now)), observer_(observer) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutdown_ || dirty_.count(key)) return;  // client-go counts an add only when it queues
  if (observer_) observer_->Added();
  dirty_.insert(key);
  added_.emplace(key, now_());
  if (!processing_.count(key)) {
    queue_.push_back(key);
    if (observer_) observer_->Depth(queue_.size());
    cv_.notify_one();
  }
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) return Add(key);
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  const auto at = now_() + delay;
  auto [it, inserted] = delayed_.emplace(key, at);
  if (!inserted && at < it->second) it->second = at;
  cv_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::chrono::milliseconds delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    delay = backoff_.When(key);
    if (observer_) observer_->Retried();
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  backoff_.Forget(key);
}

int WorkQueue::Failures(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return backoff_.Failures(key);
}

void WorkQueue::PromoteDueLocked(Clock::time_point now) {
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if (it->second <= now) {
      AddLocked(it->first);
      it = delayed_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<std::string> WorkQueue::Get(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = now_() + timeout;
  while (true) {
    if (shutdown_) return std::nullopt;
    const auto now = now_();
    PromoteDueLocked(now);
    if (!queue_.empty()) break;
    if (now >= deadline) return std::nullopt;
    auto wake = deadline;
    for (const auto& [key, at] : delayed_) wake = std::min(wake, at);
    // A duration, not a time point: the injected clock need not be steady_clock.
    cv_.wait_for(lock, wake - now);
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  const auto now = now_();
  if (auto it = added_.find(key); it != added_.end()) {
    if (observer_) observer_->Queued(Seconds(now - it->second));
    added_.erase(it);
  }
  processing_[key] = now;
  if (observer_) observer_->Depth(queue_.size());
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = processing_.find(key); it != processing_.end()) {
    if (observer_) observer_->Worked(Seconds(now_() - it->second));
    processing_.erase(it);
  }
  if (dirty_.count(key)) {
    queue_.push_back(key);
    if (observer_) observer_->Depth(queue_.size());
    cv_.notify_one();
  }
}

void WorkQueue::ReportUnfinished() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!observer_) return;
  const auto now = now_();
  double total = 0, longest = 0;
  for (const auto& [key, since] : processing_) {
    const double s = Seconds(now - since);
    total += s;
    longest = std::max(longest, s);
  }
  observer_->Unfinished(total, longest);
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

bool WorkQueue::ShuttingDown() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutdown_;
}

size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

}  // namespace ringmaster::op
