// Kubernetes' name rules (kube_names.h).
#include "kube_names.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace ringmaster::internal {

bool IsDns1035Label(const std::string& s) {
  if (s.empty() || s.size() > 63 || !std::islower(static_cast<unsigned char>(s.front()))) return false;
  if (s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
           c == '-';
  });
}

bool IsDns1123Subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('.', start);
    if (end == std::string::npos) end = s.size();
    const std::string_view label(s.data() + start, end - start);
    auto alnum = [](char c) {
      return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
    };
    if (label.empty() || !alnum(label.front()) || !alnum(label.back())) return false;
    if (!std::all_of(label.begin(), label.end(), [&](char c) { return alnum(c) || c == '-'; })) return false;
    start = end + 1;
  }
  return true;
}

bool IsSecretKey(const std::string& s) {
  if (s.empty() || s.size() > 253 || s == "." || s.rfind("..", 0) == 0) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  });
}

bool IsQueueName(const std::string& s) {
  return s.size() <= 63 && IsDns1123Subdomain(s);
}

}  // namespace ringmaster::internal
