// line_splitter.h: a replica's output cut into bounded lines.
#include "line_splitter.h"

namespace ringmaster::cli {

void LineSplitter::Feed(std::string_view bytes, const std::function<void(std::string_view)>& line) {
  partial_.append(bytes);
  size_t start = 0, nl;
  while ((nl = partial_.find('\n', start)) != std::string::npos) {
    line(std::string_view(partial_).substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
  if (partial_.size() > max_line_) {
    line(partial_);
    partial_.clear();
  }
}

std::optional<std::string> LineSplitter::TakeRest() {
  if (partial_.empty()) return std::nullopt;
  std::string rest = std::move(partial_);
  partial_.clear();
  return rest;
}

}  // namespace ringmaster::cli
