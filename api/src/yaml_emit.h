// Internal to the api library: a JSON value written as block YAML that
// reads back as the same JSON (for `ringmaster convert`'s output).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ringmaster::internal {

// Non-ASCII is escaped; a string is written plain only when YAML 1.1 (what
// kubectl reads) cannot take it for anything else.
std::string JsonAsYaml(const nlohmann::json& value);

}  // namespace ringmaster::internal
