// The public enums' sizes and names.
#include "ringmaster/communicator.h"
#include "ringmaster/enum_names.h"

namespace ringmaster {

size_t DataTypeSize(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool:
      return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kUInt16:
    case DataType::kInt16:
      return 2;
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
  }
  return 0;
}

std::string_view DataTypeName(DataType dtype) {
  const auto name = DTypeTable().NameOf(static_cast<int>(dtype));
  return name.empty() ? "invalid" : name;
}

std::string_view ReduceOpName(ReduceOp op) {
  const auto name = ReduceOpTable().NameOf(static_cast<int>(op));
  return name.empty() ? "invalid" : name;
}

}  // namespace ringmaster
