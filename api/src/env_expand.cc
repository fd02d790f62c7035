#include "ringmaster/env_expand.h"

namespace ringmaster {

std::string ExpandKubeVars(std::string_view input, const EnvLookup& lookup) {
  std::string out;
  out.reserve(input.size());
  size_t i = 0;
  while (i < input.size()) {
    const char c = input[i];
    if (c != '$' || i + 1 == input.size()) {
      out += c;
      ++i;
      continue;
    }
    const char next = input[i + 1];
    if (next == '$') {  // "$$" -> "$", and the second "$" starts nothing
      out += '$';
      i += 2;
    } else if (next == '(') {
      const size_t close = input.find(')', i + 2);
      if (close == std::string_view::npos) {  // unclosed: literal "$(", scan on after it
        out += "$(";
        i += 2;
        continue;
      }
      const std::string_view name = input.substr(i + 2, close - i - 2);
      if (auto value = lookup(name)) {
        out += *value;
      } else {
        out += "$(";
        out += name;
        out += ')';
      }
      i = close + 1;
    } else {  // "$x": both kept
      out += '$';
      out += next;
      i += 2;
    }
  }
  return out;
}

}  // namespace ringmaster
