// A replica's output cut into lines for `ringmaster run`'s relay, bounded:
// a line longer than the bound goes out in pieces of at most that size, so
// a process that never writes a newline cannot grow the runner's memory.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ringmaster::cli {

class LineSplitter {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;

  explicit LineSplitter(size_t max_line = kMaxLine) : max_line_(max_line) {}

  // Appends `bytes`; calls `line` for each line they complete (without its
  // "\n"), then once with the unfinished rest if that has grown over the
  // bound (which is then dropped from the buffer).
  void Feed(std::string_view bytes, const std::function<void(std::string_view)>& line);

  // The unfinished rest (at the process's end), nullopt when there is none;
  // the buffer is empty afterwards.
  std::optional<std::string> TakeRest();

 private:
  size_t max_line_;
  std::string partial_;
};

}  // namespace ringmaster::cli
