// Internal to the api library: the field reader that both job kinds' decoders
// (job.cc's DecodeJob, tfjob.cc's DecodeTfJob) read JSON objects with. It
// collects every problem (not just the first) with the path of its field.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/enum_names.h"
#include "ringmaster/job.h"
#include "ringmaster/join_list.h"

namespace ringmaster::internal {

class Decoder {
 public:
  std::vector<FieldError> errors;

  void Error(const std::string& path, std::string message) { errors.push_back({path, std::move(message)}); }
  // An error about the key itself (an unknown field): located at the key.
  void KeyError(const std::string& path, std::string message) {
    errors.push_back({path, std::move(message), 0, 0, /*at_key=*/true});
  }

  // Reports fields of `obj` that are not in `known`: a typo must not be
  // silently ignored (kubectl's strict field validation does the same).
  // `why`, when given, ends each message.
  void RejectUnknown(const nlohmann::json& obj, const std::string& path,
                     std::initializer_list<std::string_view> known, std::string_view why = "");

  // An object field: nullptr when absent or null (an error when required),
  // or when not an object (an error).
  const nlohmann::json* Object(const nlohmann::json& parent, const std::string& key, const std::string& path,
                               bool required);

  // Typed fields: nullopt when absent or null, or when of the wrong type or
  // out of range (an error naming the field).
  std::optional<int64_t> Integer(const nlohmann::json& parent, const std::string& key,
                                 const std::string& path, int64_t min, int64_t max);
  std::optional<double> Number(const nlohmann::json& parent, const std::string& key, const std::string& path,
                               double min);
  std::optional<std::string> String(const nlohmann::json& parent, const std::string& key,
                                    const std::string& path);
  std::optional<bool> Bool(const nlohmann::json& parent, const std::string& key, const std::string& path);

  // A string field restricted to `allowed` (exact spelling, as the CRD's enum).
  template <typename E>
  std::optional<E> Enum(const nlohmann::json& parent, const std::string& key, const std::string& path,
                        const std::vector<std::pair<std::string_view, E>>& allowed) {
    auto s = String(parent, key, path);
    if (!s) return std::nullopt;
    for (const auto& [name, value] : allowed) {
      if (*s == name) return value;
    }
    const std::string names = JoinList(
        allowed, [](const auto& a) { return a.first.empty() ? std::string("\"\"") : std::string(a.first); });
    Error(Join(path, key), "unknown value '" + *s + "', expected one of: " + names);
    return std::nullopt;
  }
  // The same for an enum of enums.h: its table's names, no aliases.
  template <typename E>
  std::optional<E> Enum(const nlohmann::json& parent, const std::string& key, const std::string& path,
                        const EnumTable& table) {
    std::vector<std::pair<std::string_view, E>> allowed;
    for (const auto& e : table.values) allowed.emplace_back(e.name, static_cast<E>(e.value));
    return Enum(parent, key, path, allowed);
  }

  static std::string Join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }
  // A value as an error message quotes it: 'text', or its JSON.
  static std::string Describe(const nlohmann::json& v);
};

}  // namespace ringmaster::internal
