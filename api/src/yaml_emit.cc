#include "yaml_emit.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "ringmaster/ascii_case.h"

namespace ringmaster::internal {
namespace {

using json = nlohmann::json;

// Emits JSON as block YAML that loads back into the same JSON: a string is
// plain only when it cannot be read as anything else.
bool PlainSafe(const std::string& s) {
  if (s.empty() || s.size() > 200) return false;
  const unsigned char first = static_cast<unsigned char>(s.front());
  if (!std::isalpha(first) && first != '_' && first != '/') return false;
  if (!std::all_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return std::isalnum(u) || c == '_' || c == '.' || c == '/' || c == '-';
      })) {
    return false;
  }
  // YAML 1.1's booleans and nulls too (kubectl reads YAML 1.1).
  for (std::string_view word :
       {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "nan", "inf", "infinity"}) {
    if (EqualFold(s, word)) return false;
  }
  return true;
}

void Emit(YAML::Emitter& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.items()) {
        // A simple key is at most 1024 characters as read back (escapes
        // included): a longer one is written as an explicit "? key".
        if (key.size() > 128) out << YAML::LongKey;
        out << YAML::Key;
        if (PlainSafe(key)) {
          out << key;
        } else {
          out << YAML::DoubleQuoted << key;
        }
        out << YAML::Value;
        Emit(out, value);
      }
      out << YAML::EndMap;
      return;
    case json::value_t::array:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& item : v) Emit(out, item);
      out << YAML::EndSeq;
      return;
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (PlainSafe(s)) {
        out << s;
      } else {
        out << YAML::DoubleQuoted << s;
      }
      return;
    }
    case json::value_t::null:
      out << YAML::Null;
      return;
    case json::value_t::boolean:
      out << v.get<bool>();
      return;
    default:  // numbers: JSON's spelling is YAML's
      out << v.dump();
      return;
  }
}

}  // namespace

std::string JsonAsYaml(const json& value) {
  YAML::Emitter out;
  out.SetOutputCharset(YAML::EscapeNonAscii);
  Emit(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace ringmaster::internal
