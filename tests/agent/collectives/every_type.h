// The element types and reduction ops the kernels' and the algorithms'
// tests run through: every one, and the narrow integers apart.
#pragma once

#include "ringmaster/communicator.h"

namespace ringmaster::internal {

constexpr DataType kNarrow[] = {DataType::kUInt8, DataType::kInt8, DataType::kUInt16, DataType::kInt16};
constexpr DataType kEveryType[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                   DataType::kFloat64, DataType::kInt32,    DataType::kInt64,
                                   DataType::kUInt8,   DataType::kInt8,     DataType::kUInt16,
                                   DataType::kInt16,   DataType::kBool};
constexpr ReduceOp kEveryOp[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                                 ReduceOp::kProduct};

}  // namespace ringmaster::internal
