// The operator's watch-stream decoder: each line of the input is one line of
// a watch response, handled as the informer handles it (DecodeWatchEvent;
// for a line that is not an event, the body is checked for a 410 Status).
#include "watch_event.h"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_check.h"

namespace {

using namespace ringmaster;
using fuzz::CheckError;

void OneLine(std::string_view line) {
  auto ev = op::DecodeWatchEvent(line);
  if (!ev.ok()) {
    CheckError(ev.status());
    FUZZ_CHECK(ev.status().code() == StatusCode::kInvalidArgument);
    const nlohmann::json body = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    (void)op::IsGoneStatus(body);
    return;
  }
  FUZZ_CHECK(ev->object.is_object());
  if (ev->type == op::WatchEventType::kError) {
    FUZZ_CHECK(ev->gone == op::IsGoneStatus(ev->object));
    return;
  }
  FUZZ_CHECK(!ev->gone);
  // Where the watch resumes is the object's own resourceVersion.
  const auto meta = ev->object.find("metadata");
  if (meta != ev->object.end() && meta->is_object()) {
    const auto rv = meta->find("resourceVersion");
    if (rv != meta->end() && rv->is_string()) FUZZ_CHECK(ev->resource_version == rv->get<std::string>());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    OneLine(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return 0;
}
