#include "group/timeline.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace ringmaster::internal {

std::string TimelineEventJson(const FlightEntry& e, int rank, int stream) {
  nlohmann::ordered_json args = {
      {"seq", e.seq},
      {"pack", e.info.pack},
      {"packs", e.info.packs},
      {"dtype", std::string(DataTypeName(e.info.dtype))},
      {"bytes", e.info.bytes},
      {"algorithm", e.info.algorithm},
      {"outcome", e.progress == Progress::kFailed ? std::string(StatusCodeName(e.outcome))
                                                  : std::string(ProgressName(e.progress))}};
  nlohmann::ordered_json j = {{"name", OpKindName(e.info.kind)},
                              {"cat", "collective"},
                              {"ph", "X"},
                              {"ts", e.start_unix_us},
                              {"dur", std::max<int64_t>(0, e.end_unix_us - e.start_unix_us)},
                              {"pid", rank},
                              {"tid", stream},
                              {"args", args}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

StatusOr<std::shared_ptr<Timeline>> Timeline::Open(const std::string& path, int rank,
                                                   const std::string& task) {
  if (path.empty()) return InvalidArgumentError("timeline: the file path is empty");
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return InvalidArgumentError("timeline: cannot create " + path + ": " + std::strerror(errno));
  std::shared_ptr<Timeline> t(new Timeline(f, path, rank));
  std::lock_guard<std::mutex> lock(t->mu_);
  std::fputs("[\n", f);
  auto meta = [&](const char* what, int tid, const std::string& name) {
    nlohmann::ordered_json m = {
        {"name", what}, {"ph", "M"}, {"pid", rank}, {"tid", tid}, {"args", {{"name", name}}}};
    t->WriteLocked(m.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  };
  meta("process_name", 0, task);
  meta("thread_name", 0, "collectives");
  meta("thread_name", 1, "process sets");
  return t;
}

Timeline::~Timeline() {
  (void)Close();
}

void Timeline::WriteLocked(const std::string& event) {
  if (!file_) return;
  if (!first_) std::fputs(",\n", file_);
  first_ = false;
  std::fputs(event.c_str(), file_);
}

void Timeline::Record(const FlightEntry& e, int stream) {
  const std::string event = TimelineEventJson(e, rank_, stream);  // outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  WriteLocked(event);
}

Status Timeline::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return OkStatus();
  std::fputs("\n]\n", file_);
  const bool failed = std::ferror(file_) != 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (failed || !closed) return InternalError("timeline: writing " + path_ + " failed");
  return OkStatus();
}

}  // namespace ringmaster::internal
