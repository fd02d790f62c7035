#include "watch_event.h"

namespace ringmaster::op {

using nlohmann::json;

namespace {

// The string at `key`, or `fallback`: json::value() throws when the field is
// there with another type, and a watch line is whatever the server sent.
std::string StringOr(const json& obj, const char* key, std::string fallback) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}

}  // namespace

bool IsGoneStatus(const json& body) {
  if (!body.is_object() || StringOr(body, "kind", "") != "Status") return false;
  auto code = body.find("code");
  if (code != body.end() && code->is_number() && code->get<double>() == 410) return true;
  const std::string reason = StringOr(body, "reason", "");
  return reason == "Expired" || reason == "Gone";
}

StatusOr<WatchEvent> DecodeWatchEvent(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("watch event is not a JSON object");
  auto type = j.find("type");
  auto object = j.find("object");
  if (type == j.end() || !type->is_string() || object == j.end() || !object->is_object())
    return InvalidArgumentError("watch event needs 'type' and 'object'");
  WatchEvent ev;
  const std::string t = *type;
  if (t == "ADDED") {
    ev.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    ev.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    ev.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
  } else if (t == "ERROR") {
    ev.type = WatchEventType::kError;
  } else {
    return InvalidArgumentError("unknown watch event type '" + t + "'");
  }
  ev.object = std::move(*object);
  if (ev.type == WatchEventType::kError) {
    ev.gone = IsGoneStatus(ev.object);
    ev.error_message = StringOr(ev.object, "message", "watch error");
    return ev;
  }
  if (ev.object.contains("metadata") && ev.object["metadata"].is_object()) {
    ev.resource_version = StringOr(ev.object["metadata"], "resourceVersion", "");
  }
  return ev;
}

}  // namespace ringmaster::op
