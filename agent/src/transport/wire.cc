#include "transport/wire.h"

#include <cstring>

namespace ringmaster::internal {

ControlFrameParser::Result ControlFrameParser::Next(ControlHeader* header, std::string* body) {
  if (broken_) return Result::kError;
  if (buf_.size() < sizeof(ControlHeader)) return Result::kNeedMore;
  ControlHeader h;
  std::memcpy(&h, buf_.data(), sizeof h);
  if (h.magic != kControlMagic || h.length > kMaxControlText || h.type < kHeartbeat ||
      h.type > kLastControlType) {
    broken_ = true;
    buf_.clear();
    return Result::kError;
  }
  if (buf_.size() < sizeof h + h.length) return Result::kNeedMore;
  *header = h;
  body->assign(buf_, sizeof h, h.length);
  buf_.erase(0, sizeof h + h.length);
  return Result::kFrame;
}

size_t ControlFrameParser::Room() const {
  const size_t cap = sizeof(ControlHeader) + kMaxControlText;
  return broken_ || buf_.size() >= cap ? 0 : cap - buf_.size();
}

}  // namespace ringmaster::internal
