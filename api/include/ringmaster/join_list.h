// The one way a list is written into a message: "a, b, c" ("" for none),
// or in a sentence "a, b and c". Used by the api, the CLI, the operator and
// the agent alike.
#pragma once

#include <iterator>
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

// Text items in a sentence: "a", "a and b", "a, b and c".
template <typename Range>
std::string JoinListAnd(const Range& items) {
  std::string out;
  size_t i = 0;
  const size_t n = std::size(items);
  for (const auto& item : items) {
    if (i) out += i + 1 == n ? " and " : ", ";
    out += item;
    ++i;
  }
  return out;
}

}  // namespace ringmaster
