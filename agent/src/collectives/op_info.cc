#include "collectives/op_info.h"

#include "ringmaster/enum_names.h"

namespace ringmaster::internal {

const char* OpKindName(OpKind k) {
  const auto name = CollectiveTable().NameOf(static_cast<int>(k));
  return name.empty() ? "collective" : name.data();  // the table's names are literals
}

}  // namespace ringmaster::internal
