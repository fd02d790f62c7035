// The element-wise steps beside the reduction loops (kernels.h): MEAN's
// divide, an op's identity, and one element in or out. Built with -O3 as
// kernels.cc is.
#include <cstring>
#include <limits>

#include "collectives/half.h"
#include "collectives/kernels.h"

namespace ringmaster::internal {
namespace {

using half::B2F;
using half::F2B;
using half::F2H;
using half::H2F;

template <typename T>
void Fill(void* data, size_t n, T v) {
  T* p = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) p[i] = v;
}

// An integer type's identity of an op: 0, 1, its largest (MIN) or smallest (MAX) value.
template <typename T>
void FillInt(void* data, size_t n, bool zero, bool one, bool hi) {
  Fill<T>(data, n,
          zero  ? T{0}
          : one ? T{1}
          : hi  ? std::numeric_limits<T>::max()
                : std::numeric_limits<T>::lowest());
}

template <typename T>
void DivideInt(void* data, size_t n, int64_t d) {
  T* p = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<int64_t>(p[i]) / d);
}

}  // namespace

void DivideBy(DataType dtype, void* data, size_t n, int64_t d) {
  switch (dtype) {
    case DataType::kFloat16: {
      auto* p = static_cast<uint16_t*>(data);
      const float fd = static_cast<float>(d);
      for (size_t i = 0; i < n; ++i) p[i] = F2H(H2F(p[i]) / fd);
      return;
    }
    case DataType::kBFloat16: {
      auto* p = static_cast<uint16_t*>(data);
      const float fd = static_cast<float>(d);
      for (size_t i = 0; i < n; ++i) p[i] = F2B(B2F(p[i]) / fd);
      return;
    }
    case DataType::kFloat32: {
      auto* p = static_cast<float*>(data);
      const float fd = static_cast<float>(d);
      for (size_t i = 0; i < n; ++i) p[i] = p[i] / fd;
      return;
    }
    case DataType::kFloat64: {
      auto* p = static_cast<double*>(data);
      const double fd = static_cast<double>(d);
      for (size_t i = 0; i < n; ++i) p[i] = p[i] / fd;
      return;
    }
    case DataType::kInt32: {
      auto* p = static_cast<int32_t*>(data);
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(p[i] / d);
      return;
    }
    case DataType::kInt64: {
      auto* p = static_cast<int64_t*>(data);
      for (size_t i = 0; i < n; ++i) p[i] = p[i] / d;
      return;
    }
    case DataType::kUInt8:
      return DivideInt<uint8_t>(data, n, d);
    case DataType::kInt8:
      return DivideInt<int8_t>(data, n, d);
    case DataType::kUInt16:
      return DivideInt<uint16_t>(data, n, d);
    case DataType::kInt16:
      return DivideInt<int16_t>(data, n, d);
    case DataType::kBool:
      return;  // never reduced
  }
}

void FillIdentity(DataType dtype, ReduceOp op, void* data, size_t n) {
  const bool zero = op == ReduceOp::kSum || op == ReduceOp::kMean;
  const bool one = op == ReduceOp::kProduct;
  const bool hi = op == ReduceOp::kMin;  // MIN's identity is the largest value
  switch (dtype) {
    case DataType::kFloat16:
      return Fill<uint16_t>(data, n, zero ? 0 : one ? 0x3c00 : hi ? 0x7c00 : 0xfc00);
    case DataType::kBFloat16:
      return Fill<uint16_t>(data, n, zero ? 0 : one ? 0x3f80 : hi ? 0x7f80 : 0xff80);
    case DataType::kFloat32: {
      constexpr float inf = std::numeric_limits<float>::infinity();
      return Fill<float>(data, n, zero ? 0.f : one ? 1.f : hi ? inf : -inf);
    }
    case DataType::kFloat64: {
      constexpr double inf = std::numeric_limits<double>::infinity();
      return Fill<double>(data, n, zero ? 0. : one ? 1. : hi ? inf : -inf);
    }
    case DataType::kInt32:
      return Fill<int32_t>(data, n,
                           zero  ? 0
                           : one ? 1
                           : hi  ? std::numeric_limits<int32_t>::max()
                                 : std::numeric_limits<int32_t>::min());
    case DataType::kInt64:
      return Fill<int64_t>(data, n,
                           zero  ? 0
                           : one ? 1
                           : hi  ? std::numeric_limits<int64_t>::max()
                                 : std::numeric_limits<int64_t>::min());
    case DataType::kUInt8:
      return FillInt<uint8_t>(data, n, zero, one, hi);
    case DataType::kInt8:
      return FillInt<int8_t>(data, n, zero, one, hi);
    case DataType::kUInt16:
      return FillInt<uint16_t>(data, n, zero, one, hi);
    case DataType::kInt16:
      return FillInt<int16_t>(data, n, zero, one, hi);
    case DataType::kBool:  // never reduced; false/true as the op's identity would be
      return Fill<uint8_t>(data, n, (one || hi) ? 1 : 0);
  }
}

void StoreElement(DataType dtype, void* base, size_t i, double v) {
  switch (dtype) {
    case DataType::kFloat16:
      static_cast<uint16_t*>(base)[i] = FloatToHalf(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(base)[i] = FloatToBFloat16(static_cast<float>(v));
      break;
    case DataType::kFloat32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      static_cast<double*>(base)[i] = v;
      break;
    case DataType::kInt32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      break;
    case DataType::kInt64:
      static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v);
      break;
    // The narrow integers wrap (through int64: no out-of-range conversion).
    case DataType::kUInt8:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
      break;
    case DataType::kInt8:
      static_cast<int8_t*>(base)[i] = static_cast<int8_t>(static_cast<int64_t>(v));
      break;
    case DataType::kUInt16:
      static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(static_cast<int64_t>(v));
      break;
    case DataType::kInt16:
      static_cast<int16_t*>(base)[i] = static_cast<int16_t>(static_cast<int64_t>(v));
      break;
    case DataType::kBool:
      static_cast<uint8_t*>(base)[i] = v != 0 ? 1 : 0;
      break;
  }
}

double LoadElement(DataType dtype, const void* base, size_t i) {
  switch (dtype) {
    case DataType::kFloat16:
      return HalfToFloat(static_cast<const uint16_t*>(base)[i]);
    case DataType::kBFloat16:
      return BFloat16ToFloat(static_cast<const uint16_t*>(base)[i]);
    case DataType::kFloat32:
      return static_cast<const float*>(base)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(base)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(base)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case DataType::kUInt8:
      return static_cast<const uint8_t*>(base)[i];
    case DataType::kInt8:
      return static_cast<const int8_t*>(base)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(base)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(base)[i];
    case DataType::kBool:
      return static_cast<const uint8_t*>(base)[i] != 0 ? 1 : 0;
  }
  return 0;
}

}  // namespace ringmaster::internal
