// The public enums' sizes and names.
#include "collectives/dtype_visit.h"
#include "ringmaster/communicator.h"
#include "ringmaster/enum_names.h"

namespace ringmaster {

size_t DataTypeSize(DataType dtype) {
  return internal::VisitDType(
      dtype, [](auto tag) { return sizeof(typename decltype(tag)::Elem); }, [] { return size_t{0}; });
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
