// One line of a Kubernetes watch stream ({"type":..., "object":...}), decoded.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ringmaster/status.h"

namespace ringmaster::op {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;
  // The object's metadata.resourceVersion: where to resume the watch.
  std::string resource_version;
  // An ERROR with code 410: the resourceVersion is too old, relist.
  bool gone = false;
  std::string error_message;
};

// InvalidArgument for a line that is not a watch event.
StatusOr<WatchEvent> DecodeWatchEvent(std::string_view line);

// A response (list or error) whose Status says 410 / reason Expired.
bool IsGoneStatus(const nlohmann::json& body);

}  // namespace ringmaster::op
