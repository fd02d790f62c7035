// The one way a list is written into a message: "a, b, c" ("" for none).
// Used by the api, the CLI and the operator alike.
#pragma once

#include <string>
#include <string_view>

namespace ringmaster {

// Each item of `items` as `text(item)` gives it (anything a std::string can
// be appended from), separated by ", ".
template <typename Range, typename Text>
std::string JoinList(const Range& items, Text&& text) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ", ";
    first = false;
    out += text(item);
  }
  return out;
}

// Items that are text already (std::string, std::string_view, const char*).
template <typename Range>
std::string JoinList(const Range& items) {
  return JoinList(items, [](const auto& item) -> std::string_view { return item; });
}

}  // namespace ringmaster
