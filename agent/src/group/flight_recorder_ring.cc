#include "group/flight_recorder_ring.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "group/timeline.h"

namespace ringmaster::internal {

namespace {
int64_t UnixMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

FlightRecorder::FlightRecorder(size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {}

FlightEntry* FlightRecorder::Find(uint64_t seq) {
  FlightEntry& e = ring_[seq % ring_.size()];
  return e.seq == seq ? &e : nullptr;
}

void FlightRecorder::Reset() {
  std::lock_guard<SpinLock> lock(mu_);
  for (auto& e : ring_) e = FlightEntry{};
  last_finished_ = last_started_ = last_queued_ = 0;
}

void FlightRecorder::Queued(uint64_t seq, const OpInfo& info) {
  std::lock_guard<SpinLock> lock(mu_);
  FlightEntry& e = ring_[seq % ring_.size()];
  e = FlightEntry{};
  e.seq = seq;
  e.info = info;
  last_queued_ = std::max(last_queued_, seq);
}

void FlightRecorder::Started(uint64_t seq) {
  const int64_t now = UnixMicros();
  std::lock_guard<SpinLock> lock(mu_);
  if (FlightEntry* e = Find(seq)) {
    e->progress = Progress::kRunning;
    e->start_unix_us = now;
  }
  last_started_ = std::max(last_started_, seq);
}

void FlightRecorder::Finished(uint64_t seq, StatusCode outcome, const HeardRanks& heard_from) {
  const int64_t now = UnixMicros();
  std::shared_ptr<Timeline> timeline;
  FlightEntry copy;
  int stream = 0;
  {
    std::lock_guard<SpinLock> lock(mu_);
    if (FlightEntry* e = Find(seq)) {
      e->progress = outcome == StatusCode::kOk ? Progress::kFinished : Progress::kFailed;
      e->outcome = outcome;
      e->heard_from = heard_from;
      e->end_unix_us = now;
      if (timeline_ && e->start_unix_us) {
        timeline = timeline_;
        copy = *e;
        stream = timeline_stream_;
      }
    }
    if (outcome == StatusCode::kOk) last_finished_ = std::max(last_finished_, seq);
  }
  if (timeline) timeline->Record(copy, stream);  // outside the spin lock: it writes a file
}

void FlightRecorder::SetTimeline(std::shared_ptr<Timeline> timeline, int stream) {
  std::lock_guard<SpinLock> lock(mu_);
  timeline_ = std::move(timeline);
  timeline_stream_ = stream;
}

ProgressReport FlightRecorder::Report(uint64_t seq) const {
  std::lock_guard<SpinLock> lock(mu_);
  ProgressReport r;
  r.last_finished = last_finished_;
  r.last_started = last_started_;
  const FlightEntry& e = ring_[seq % ring_.size()];
  if (e.seq == seq) {
    r.progress = e.progress;
    r.info = e.info;
  } else {
    // Not held: never submitted, or so long ago that it was overwritten
    // (then it finished: a ring entry is reused only K collectives later).
    r.progress = seq > last_queued_ ? Progress::kNeverEntered : Progress::kFinished;
  }
  return r;
}

std::vector<FlightEntry> FlightRecorder::Snapshot() const {
  std::lock_guard<SpinLock> lock(mu_);
  std::vector<FlightEntry> out;
  for (const auto& e : ring_)
    if (e.seq) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
  return out;
}

std::string FlightDumpJson(const std::string& task, int rank, int size, const Status& cause,
                           const std::vector<FlightEntry>& entries, size_t max_entries) {
  nlohmann::ordered_json j;
  j["ringmaster_flight_recorder"] = 1;
  j["task"] = task;
  j["rank"] = rank;
  j["size"] = size;
  j["pid"] = static_cast<int64_t>(::getpid());
  j["cause"] = {{"code", std::string(StatusCodeName(cause.code()))}, {"message", cause.message()}};
  j["dumped_unix_us"] = UnixMicros();
  auto& list = j["entries"] = nlohmann::ordered_json::array();
  const size_t from = entries.size() > max_entries ? entries.size() - max_entries : 0;
  for (size_t i = from; i < entries.size(); ++i) {
    const FlightEntry& e = entries[i];
    nlohmann::ordered_json heard = nlohmann::ordered_json::array();
    for (int k = 0; k < e.heard_from.kept(); ++k)
      if (e.heard_from.lowest[k] < size) heard.push_back(e.heard_from.lowest[k]);
    std::string outcome = e.progress == Progress::kFailed ? std::string(StatusCodeName(e.outcome))
                                                          : std::string(ProgressName(e.progress));
    nlohmann::ordered_json entry = {{"seq", e.seq},
                                    {"kind", OpKindName(e.info.kind)},
                                    {"pack", e.info.pack},
                                    {"packs", e.info.packs},
                                    {"dtype", std::string(DataTypeName(e.info.dtype))},
                                    {"bytes", e.info.bytes},
                                    {"algorithm", e.info.algorithm},
                                    {"heard_from", heard}};
    // Past the kept ranks (an all-to-all at large N): how many more.
    if (e.heard_from.count > static_cast<uint32_t>(e.heard_from.kept()))
      entry["heard_from_more"] = e.heard_from.count - e.heard_from.kept();
    entry["start_unix_us"] =
        e.start_unix_us ? nlohmann::ordered_json(e.start_unix_us) : nlohmann::ordered_json();
    entry["end_unix_us"] = e.end_unix_us ? nlohmann::ordered_json(e.end_unix_us) : nlohmann::ordered_json();
    entry["outcome"] = outcome;
    list.push_back(std::move(entry));
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace ringmaster::internal
