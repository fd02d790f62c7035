// The field reader of the job decoders (decoder.h).
#include "decoder.h"

#include <algorithm>
#include <cmath>

namespace ringmaster::internal {
namespace {

using json = nlohmann::json;

std::string Num(double d) {
  return d == std::trunc(d) ? std::to_string(static_cast<int64_t>(d)) : std::to_string(d);
}

std::string RangeMessage(int64_t min, int64_t max) {
  if (max == INT64_MAX) return "must be >= " + std::to_string(min);
  return "must be between " + std::to_string(min) + " and " + std::to_string(max);
}

}  // namespace

std::string Decoder::Describe(const json& v) {
  // YAML text may hold bytes that are not UTF-8: replaced, not thrown on.
  return v.is_string() ? "'" + v.get<std::string>() + "'"
                       : v.dump(-1, ' ', false, json::error_handler_t::replace);
}

void Decoder::RejectUnknown(const json& obj, const std::string& path,
                            std::initializer_list<std::string_view> known, std::string_view why) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      KeyError(Join(path, key), "unknown field, expected one of: " + JoinList(known) + std::string(why));
    }
  }
}

const json* Decoder::Object(const json& parent, const std::string& key, const std::string& path,
                            bool required) {
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) {
    if (required) Error(Join(path, key), "required field is missing");
    return nullptr;
  }
  if (!it->is_object()) {
    Error(Join(path, key), "must be an object, got " + std::string(it->type_name()));
    return nullptr;
  }
  return &*it;
}

std::optional<int64_t> Decoder::Integer(const json& parent, const std::string& key, const std::string& path,
                                        int64_t min, int64_t max) {
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return std::nullopt;
  const std::string p = Join(path, key);
  int64_t v = 0;
  if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (it->is_number_float() && std::trunc(it->get<double>()) == it->get<double>() &&
             std::abs(it->get<double>()) < 9e15) {
    v = static_cast<int64_t>(it->get<double>());  // JSON writers may emit 2.0
  } else {
    Error(p, "must be an integer, got " + Describe(*it));
    return std::nullopt;
  }
  if (v < min || v > max) {
    Error(p, RangeMessage(min, max) + ", got " + std::to_string(v));
    return std::nullopt;
  }
  return v;
}

std::optional<double> Decoder::Number(const json& parent, const std::string& key, const std::string& path,
                                      double min) {
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return std::nullopt;
  const std::string p = Join(path, key);
  if (!it->is_number()) {
    Error(p, "must be a number, got " + Describe(*it));
    return std::nullopt;
  }
  double v = it->get<double>();
  if (!(v >= min) || std::isinf(v)) {
    Error(p, "must be >= " + Num(min) + ", got " + Describe(*it));
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> Decoder::String(const json& parent, const std::string& key,
                                           const std::string& path) {
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    Error(Join(path, key), "must be a string, got " + Describe(*it));
    return std::nullopt;
  }
  return it->get<std::string>();
}

std::optional<bool> Decoder::Bool(const json& parent, const std::string& key, const std::string& path) {
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) {
    Error(Join(path, key), "must be true or false, got " + Describe(*it));
    return std::nullopt;
  }
  return it->get<bool>();
}

}  // namespace ringmaster::internal
