// ASCII case folding, the one the api, the CLI and the operator use for
// names that match in any case (enum names, TFJob replica types, YAML 1.1's
// plain words). Only A-Z fold: the user's locale never changes what a name
// means (a Python process sets LC_CTYPE from the environment).
#pragma once

#include <string>
#include <string_view>

namespace ringmaster {

constexpr char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// `s` with A-Z lowered.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

// Whether `a` and `b` are the same but for the case of their ASCII letters.
constexpr bool EqualFold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

}  // namespace ringmaster
