#include "collectives/op_info.h"

namespace ringmaster::internal {

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kAllReduce:
      return "all-reduce";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kAllGather:
      return "all-gather";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kGpuAllReduce:
      return "gpu-all-reduce";
    case OpKind::kAllToAll:
      return "all-to-all";
    case OpKind::kReduceScatter:
      return "reduce-scatter";
  }
  return "collective";
}

}  // namespace ringmaster::internal
