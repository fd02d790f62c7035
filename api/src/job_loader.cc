// YAML/JSON text -> DistributedJob. yaml-cpp parses both (JSON is YAML), and
// while converting to JSON we remember where every field path sits so that
// errors from the (format-agnostic) decoder can name the line and column.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <sstream>
#include <unordered_map>

#include "ringmaster/job.h"
#include "yaml_document.h"

namespace ringmaster {
namespace internal {
namespace {

using json = nlohmann::json;

std::string Join(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

Mark ToMark(const YAML::Mark& m) {
  return {m.line + 1, m.column + 1};
}

// Plain (unquoted) YAML scalars are typed by their text, YAML 1.2 core schema.
json PlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;
  if (auto [p, ec] = std::from_chars(b, e, i); ec == std::errc() && p == e) return i;
  double d = 0;
  if (auto [p, ec] = std::from_chars(b, e, d); ec == std::errc() && p == e) return d;
  return s;
}

json Convert(const YAML::Node& node, const std::string& path, Marks& marks) {
  if (!path.empty()) marks.values[path] = ToMark(node.Mark());
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // Quoted scalars carry the non-specific tag "!": always strings.
      return node.Tag() == "!" ? json(node.Scalar()) : PlainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      size_t i = 0;
      for (const auto& item : node) {
        arr.push_back(Convert(item, path + "[" + std::to_string(i) + "]", marks));
        ++i;
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : node) {
        std::string key = kv.first.as<std::string>();
        marks.keys[Join(path, key)] = ToMark(kv.first.Mark());
        obj[key] = Convert(kv.second, Join(path, key), marks);
      }
      return obj;
    }
  }
  return nullptr;
}

// yaml-cpp 0.7 (Debian 12's) loops forever in LoadAll, one null document
// after another until memory runs out, when a token follows a flow
// collection's end where no document can start ("{a}," or "[a],": fixed
// upstream by jbeder/yaml-cpp#1319, after 0.8.0). Such a document starts
// where the one before it started; a pass over the events first turns that
// into a parse error, so LoadAll only ever sees text on which it terminates.
class StuckDocumentGuard : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (started_ && mark.pos == last_.pos)
      throw YAML::ParserException(mark, "unexpected text after the end of a flow collection");
    started_ = true;
    last_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
  }
  void OnMapEnd() override {}

 private:
  bool started_ = false;
  YAML::Mark last_;
};

std::vector<YAML::Node> LoadAllDocuments(const std::string& text) {
  {
    std::istringstream in(text);
    YAML::Parser parser(in);
    StuckDocumentGuard guard;
    while (parser.HandleNextDocument(guard)) {
    }
  }
  return YAML::LoadAll(text);
}

}  // namespace

// Errors name a path that may not exist in the text (a missing field): point
// at its nearest written ancestor.
void Locate(FieldError& e, const Marks& marks) {
  std::string p = e.path;
  const MarkMap& first = e.at_key ? marks.keys : marks.values;
  if (auto it = first.find(p); it != first.end()) {
    e.line = it->second.line;
    e.column = it->second.column;
    return;
  }
  while (!p.empty()) {
    if (auto it = marks.values.find(p); it != marks.values.end()) {
      e.line = it->second.line;
      e.column = it->second.column;
      return;
    }
    auto cut = p.find_last_of(".[");
    if (cut == std::string::npos) break;
    p.resize(cut);
  }
}

std::string DocumentKind(const json& object) {
  if (!object.is_object()) return "";
  // Not value("kind", ""): that throws for `kind:` with no value (null) or a number.
  auto kind = object.find("kind");
  return kind != object.end() && kind->is_string() ? kind->get<std::string>() : "";
}

StatusOr<std::vector<YamlDocument>> ParseYamlDocuments(std::string_view text, std::string_view source_name) {
  std::vector<YAML::Node> docs;
  try {
    docs = LoadAllDocuments(std::string(text));
  } catch (const YAML::Exception& e) {
    FieldError err{"", e.msg, e.mark.line + 1, e.mark.column + 1};
    if (e.mark.is_null()) err.line = err.column = 0;
    return InvalidArgumentError(FormatFieldError(err, source_name) + " (not valid YAML or JSON)");
  }
  std::vector<YamlDocument> out;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (docs[i].IsNull()) continue;  // an empty document between two `---`
    YamlDocument doc;
    doc.index = static_cast<int>(i);
    try {
      doc.object = Convert(docs[i], "", doc.marks);
    } catch (const YAML::Exception& e) {
      return InvalidArgumentError(
          FormatFieldError({"", e.msg, e.mark.line + 1, e.mark.column + 1}, source_name));
    }
    out.push_back(std::move(doc));
  }
  return out;
}

}  // namespace internal

std::string FormatFieldError(const FieldError& e, std::string_view source) {
  std::string out(source);
  if (e.line > 0) out += ":" + std::to_string(e.line) + ":" + std::to_string(e.column);
  if (!out.empty()) out += ": ";
  if (!e.path.empty()) out += e.path + ": ";
  return out + e.message;
}

StatusOr<std::vector<LoadedJob>> LoadJobs(std::string_view text, std::string_view source_name) {
  auto docs = internal::ParseYamlDocuments(text, source_name);
  if (!docs.ok()) return docs.status();
  std::vector<LoadedJob> jobs;
  for (const auto& doc : *docs) {
    // A non-object document is decoded, so that its error is reported.
    if (doc.object.is_object() && internal::DocumentKind(doc.object) != kKind) continue;
    LoadedJob loaded = DecodeJob(doc.object);
    loaded.document_index = doc.index;
    for (auto& err : loaded.errors) internal::Locate(err, doc.marks);
    jobs.push_back(std::move(loaded));
  }
  if (jobs.empty()) {
    return InvalidArgumentError(std::string(source_name) + ": no " + kKind + " document found");
  }
  return jobs;
}

StatusOr<DistributedJob> LoadSingleJob(std::string_view text, std::string_view source_name) {
  auto jobs = LoadJobs(text, source_name);
  if (!jobs.ok()) return jobs.status();
  std::string problems;
  for (const auto& j : *jobs) {
    for (const auto& e : j.errors)
      problems += (problems.empty() ? "" : "\n") + FormatFieldError(e, source_name);
  }
  if (!problems.empty()) return InvalidArgumentError(problems);
  if (jobs->size() != 1) {
    return InvalidArgumentError(std::string(source_name) + ": holds " + std::to_string(jobs->size()) + " " +
                                kKind + " documents, expected one");
  }
  return std::move(*jobs->front().job);
}

}  // namespace ringmaster
