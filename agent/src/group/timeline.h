// The timeline (Horovod's start_timeline): every collective a member runs
// while it is on, as one Chrome trace event ("Trace Event Format", read by
// chrome://tracing and Perfetto) per pack, from what the flight recorder
// already measures. One JSON array, appended as collectives finish, on the
// thread that ran them (a short buffered write under a lock: no thread of
// its own, nothing queued); Close() ends the array.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "group/flight_entry.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

class Timeline {
 public:
  // Creates (truncates) `path` and names the process: "<task>" as pid `rank`.
  static StatusOr<std::shared_ptr<Timeline>> Open(const std::string& path, int rank, const std::string& task);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // One finished collective; `stream` names its thread row ("collectives",
  // "process sets").
  void Record(const FlightEntry& e, int stream);
  // Ends the array and closes the file; later Records are dropped.
  Status Close();
  const std::string& path() const { return path_; }

 private:
  Timeline(std::FILE* f, std::string path, int rank) : file_(f), path_(std::move(path)), rank_(rank) {}
  void WriteLocked(const std::string& event);

  std::mutex mu_;
  std::FILE* file_;
  std::string path_;
  int rank_;
  bool first_ = true;
};

// The event Record writes (one JSON object, no newline), for tests.
std::string TimelineEventJson(const FlightEntry& e, int rank, int stream);

}  // namespace ringmaster::internal
