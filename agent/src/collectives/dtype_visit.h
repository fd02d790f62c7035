// The one switch over the dtypes. VisitDType hands a loop the runtime dtype
// as a compile-time tag, whose Elem is the element's C++ type (float16 and
// bfloat16 are their bits, bool one byte); the cases are expanded from
// enums.h's table, so a dtype added there does not compile until it has an
// element type here. Forced inline (with the callers' lambdas: RM_VISIT),
// so the reduction loops of kernels.cc stay inside the AVX2 build that
// calls them.
#pragma once

#include <cstdint>

#include "ringmaster/communicator.h"

namespace ringmaster::internal {

template <DataType D>
struct ElementOf;
template <>
struct ElementOf<DataType::kFloat16> {
  using type = uint16_t;
};
template <>
struct ElementOf<DataType::kBFloat16> {
  using type = uint16_t;
};
template <>
struct ElementOf<DataType::kFloat32> {
  using type = float;
};
template <>
struct ElementOf<DataType::kFloat64> {
  using type = double;
};
template <>
struct ElementOf<DataType::kInt32> {
  using type = int32_t;
};
template <>
struct ElementOf<DataType::kInt64> {
  using type = int64_t;
};
template <>
struct ElementOf<DataType::kUInt8> {
  using type = uint8_t;
};
template <>
struct ElementOf<DataType::kInt8> {
  using type = int8_t;
};
template <>
struct ElementOf<DataType::kUInt16> {
  using type = uint16_t;
};
template <>
struct ElementOf<DataType::kInt16> {
  using type = int16_t;
};
template <>
struct ElementOf<DataType::kBool> {
  using type = uint8_t;
};

template <DataType D>
struct DTypeTag {
  static constexpr DataType kDType = D;
  using Elem = typename ElementOf<D>::type;
  // float16 and bfloat16: bits that reduce through float.
  static constexpr bool kHalf = D == DataType::kFloat16 || D == DataType::kBFloat16;
  static constexpr bool kFloating = kHalf || D == DataType::kFloat32 || D == DataType::kFloat64;
};

// For a lambda handed to VisitDType: `[&](auto tag) RM_VISIT { ... }`.
#define RM_VISIT __attribute__((always_inline))

// f(DTypeTag<dtype>{}), or otherwise() for a value outside the table.
template <class F, class G>
[[gnu::always_inline]] inline decltype(auto) VisitDType(DataType dtype, F&& f, G&& otherwise) {
  switch (dtype) {
#define RM_VISIT_CASE(c_name, cxx_name, value, name) \
  case DataType::cxx_name:                           \
    return f(DTypeTag<DataType::cxx_name>{});
    RM_DTYPE_TABLE(RM_VISIT_CASE)
#undef RM_VISIT_CASE
  }
  return otherwise();
}

}  // namespace ringmaster::internal
