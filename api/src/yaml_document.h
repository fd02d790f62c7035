// Internal to the api library: YAML/JSON text -> JSON documents, with where
// every field sits, for the loaders of both job kinds (job_loader.cc,
// tfjob.cc). Errors from the format-agnostic decoders carry field paths;
// Locate turns a path into the line and column it was written at.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringmaster/job.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

struct Mark {
  int line = 0, column = 0;  // 1-based
};
using MarkMap = std::unordered_map<std::string, Mark>;
// Where each field's value starts, and where its key is written, by path
// ("spec.replicaSpecs.Worker.replicas", "a.b[2]").
struct Marks {
  MarkMap values, keys;
};

struct YamlDocument {
  nlohmann::json object;
  Marks marks;
  int index = 0;  // 0-based position in the file
};

// Every non-empty document of the text (`---` separated). InvalidArgument
// "SOURCE:LINE:COL: ... (not valid YAML or JSON)" when the text does not parse.
StatusOr<std::vector<YamlDocument>> ParseYamlDocuments(std::string_view text, std::string_view source_name);

// Sets e.line/e.column from its path: the field itself (its key, for an
// at_key error) or its nearest written ancestor.
void Locate(FieldError& e, const Marks& marks);

// The document's `kind` when it is an object with a string kind, else "".
std::string DocumentKind(const nlohmann::json& object);

}  // namespace ringmaster::internal
