// What a collective is, known when it is built: its kind and its shape.
// Below the flight recorder (group/), which records it, and the ops
// (op.h), which carry it.
#pragma once

#include <cstdint>

#include "ringmaster/communicator.h"

namespace ringmaster::internal {

// The kinds of collective: enums.h's one table (RM_COLLECTIVE_TABLE), which
// the TensorFlow op's agreement numbers its calls by too. Values travel in
// progress reports (group.cc): append only.
enum class OpKind : uint8_t { RM_COLLECTIVE_TABLE(RM_ENUM_CXX_ENUMERATOR) };
const char* OpKindName(OpKind k);  // "all-reduce", ...; "collective" for none of them

// What a collective is, known when it is built (the same on every member
// that runs the same program).
struct OpInfo {
  OpKind kind = OpKind::kAllReduce;
  int32_t pack = 0, packs = 1;
  DataType dtype = DataType::kFloat32;
  uint64_t bytes = 0;
  const char* algorithm = "";  // static string: "ring", "recursive_doubling", ...
  double timeout_s = 0;        // 0: none
};

}  // namespace ringmaster::internal
