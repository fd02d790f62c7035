// A registry (or any collectable) in the Prometheus text format, as a scrape
// of the operator's /metrics reads it: what the metrics tests look for. The
// operator itself never renders it (its Exposer serializes for scrapes).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/text_serializer.h>

#include <sstream>
#include <string>

namespace ringmaster::op {

inline std::string RenderText(const prometheus::Collectable& c) {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, c.Collect());
  return os.str();
}

}  // namespace ringmaster::op
