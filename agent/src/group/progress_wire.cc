// A progress report to and from its control frame (progress_wire.h).
#include "group/progress_wire.h"

#include "ringmaster/enum_names.h"

namespace ringmaster::internal {

ProgressReportWire ProgressToWire(const ProgressReport& r, const ProgressQueryWire& q, int from) {
  return ProgressReportWire{q.seq,
                            r.last_finished,
                            r.last_started,
                            r.info.bytes,
                            r.info.pack,
                            r.info.packs,
                            static_cast<uint8_t>(r.progress),
                            static_cast<uint8_t>(r.info.kind),
                            static_cast<uint8_t>(r.info.dtype),
                            0,
                            q.id,
                            r.info.timeout_s,
                            from,
                            q.origin};
}

ProgressReport ProgressFromWire(const ProgressReportWire& w) {
  ProgressReport r;
  r.progress = w.progress <= static_cast<uint8_t>(Progress::kFailed) ? static_cast<Progress>(w.progress)
                                                                     : Progress::kUnknown;
  r.last_finished = w.last_finished;
  r.last_started = w.last_started;
  r.info.bytes = w.bytes;
  r.info.pack = w.pack;
  r.info.packs = w.packs;
  r.info.kind = CollectiveTable().Contains(w.kind) ? static_cast<OpKind>(w.kind) : OpKind::kAllReduce;
  r.info.dtype =
      w.dtype <= static_cast<uint8_t>(kLastDataType) ? static_cast<DataType>(w.dtype) : DataType::kFloat32;
  r.info.timeout_s = w.timeout_s;
  return r;
}

}  // namespace ringmaster::internal
