// The element-wise steps beside the reduction loops (kernels.h): MEAN's
// divide, an op's identity, and one element in or out. Built with -O3 as
// kernels.cc is.
#include <cstring>
#include <limits>

#include "collectives/dtype_visit.h"
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

// A floating type's identity of an op: 0, 1, +inf (MIN) or -inf (MAX).
template <typename F>
F FloatIdentity(bool zero, bool one, bool hi) {
  constexpr F inf = std::numeric_limits<F>::infinity();
  return zero ? F{0} : one ? F{1} : hi ? inf : -inf;
}

// float16 and bfloat16 through float, round to nearest even.
template <DataType D>
float Widen(uint16_t bits) {
  return D == DataType::kFloat16 ? H2F(bits) : B2F(bits);
}
template <DataType D>
uint16_t Narrow(float f) {
  return D == DataType::kFloat16 ? F2H(f) : F2B(f);
}

}  // namespace

void DivideBy(DataType dtype, void* data, size_t n, int64_t d) {
  VisitDType(
      dtype,
      [&](auto tag) RM_VISIT {
        using Tag = decltype(tag);
        using T = typename Tag::Elem;
        T* p = static_cast<T*>(data);
        if constexpr (Tag::kHalf) {
          const float fd = static_cast<float>(d);
          for (size_t i = 0; i < n; ++i) p[i] = Narrow<Tag::kDType>(Widen<Tag::kDType>(p[i]) / fd);
        } else if constexpr (Tag::kFloating) {
          const T fd = static_cast<T>(d);
          for (size_t i = 0; i < n; ++i) p[i] = p[i] / fd;
        } else if constexpr (Tag::kDType != DataType::kBool) {  // bool is never reduced
          for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<int64_t>(p[i]) / d);
        }
      },
      [] {});
}

void FillIdentity(DataType dtype, ReduceOp op, void* data, size_t n) {
  const bool zero = op == ReduceOp::kSum || op == ReduceOp::kMean;
  const bool one = op == ReduceOp::kProduct;
  const bool hi = op == ReduceOp::kMin;  // MIN's identity is the largest value
  VisitDType(
      dtype,
      [&](auto tag) RM_VISIT {
        using Tag = decltype(tag);
        using T = typename Tag::Elem;
        if constexpr (Tag::kHalf) {
          Fill<uint16_t>(data, n, Narrow<Tag::kDType>(FloatIdentity<float>(zero, one, hi)));
        } else if constexpr (Tag::kFloating) {
          Fill<T>(data, n, FloatIdentity<T>(zero, one, hi));
        } else if constexpr (Tag::kDType == DataType::kBool) {
          Fill<uint8_t>(data, n,
                        (one || hi) ? 1 : 0);  // never reduced; false/true as the op's identity would be
        } else {
          FillInt<T>(data, n, zero, one, hi);
        }
      },
      [] {});
}

void StoreElement(DataType dtype, void* base, size_t i, double v) {
  VisitDType(
      dtype,
      [&](auto tag) RM_VISIT {
        using Tag = decltype(tag);
        using T = typename Tag::Elem;
        T* p = static_cast<T*>(base);
        if constexpr (Tag::kHalf) {
          p[i] = Narrow<Tag::kDType>(static_cast<float>(v));
        } else if constexpr (Tag::kFloating) {
          p[i] = static_cast<T>(v);
        } else if constexpr (Tag::kDType == DataType::kBool) {
          p[i] = v != 0 ? 1 : 0;
        } else {
          p[i] = static_cast<T>(
              static_cast<int64_t>(v));  // integers wrap (through int64: no out-of-range conversion)
        }
      },
      [] {});
}

double LoadElement(DataType dtype, const void* base, size_t i) {
  return VisitDType(
      dtype,
      [&](auto tag) RM_VISIT {
        using Tag = decltype(tag);
        const auto v = static_cast<const typename Tag::Elem*>(base)[i];
        if constexpr (Tag::kHalf) return static_cast<double>(Widen<Tag::kDType>(v));
        if constexpr (Tag::kDType == DataType::kBool) return v != 0 ? 1.0 : 0.0;
        return static_cast<double>(v);
      },
      [] { return 0.0; });
}

}  // namespace ringmaster::internal
