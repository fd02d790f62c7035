#include "collectives/kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "collectives/dtype_visit.h"
#include "collectives/half.h"

namespace ringmaster::internal {
namespace {

using half::B2F;
using half::F2B;
using half::F2H;
using half::H2F;

// Each op's scalar form, and (x86-64) its 8 x float form for float16 under
// F16C: min/max take the operands in the order that keeps the scalar
// form's answer for NaNs and signed zeros (minps(x, y) = x < y ? x : y).
// Integers wrap around on overflow, as TensorFlow's do (two's complement),
// computed in unsigned arithmetic so that it is defined behaviour.
template <typename T, bool = std::is_integral_v<T>>
struct WrapOf {
  using type = T;
};
template <typename T>
struct WrapOf<T, true> {
  // At least unsigned int: narrower types would promote to (signed) int,
  // whose products can overflow (65535 * 65535).
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <typename T>
using Wrap = typename WrapOf<T>::type;

struct Sum {
  template <typename T>
  static T Apply(T a, T b) {
    return static_cast<T>(static_cast<Wrap<T>>(a) + static_cast<Wrap<T>>(b));
  }
#if defined(__x86_64__)
  [[gnu::target("avx2,f16c")]] static __m256 Vec(__m256 a, __m256 b) {
    return _mm256_add_ps(a, b);
  }
#endif
};
struct Prod {
  template <typename T>
  static T Apply(T a, T b) {
    return static_cast<T>(static_cast<Wrap<T>>(a) * static_cast<Wrap<T>>(b));
  }
#if defined(__x86_64__)
  [[gnu::target("avx2,f16c")]] static __m256 Vec(__m256 a, __m256 b) {
    return _mm256_mul_ps(a, b);
  }
#endif
};
struct Min {
  template <typename T>
  static T Apply(T a, T b) {
    return b < a ? b : a;
  }
#if defined(__x86_64__)
  [[gnu::target("avx2,f16c")]] static __m256 Vec(__m256 a, __m256 b) {
    return _mm256_min_ps(b, a);
  }
#endif
};
struct Max {
  template <typename T>
  static T Apply(T a, T b) {
    return a < b ? b : a;
  }
#if defined(__x86_64__)
  [[gnu::target("avx2,f16c")]] static __m256 Vec(__m256 a, __m256 b) {
    return _mm256_max_ps(b, a);
  }
#endif
};

// Every loop below is inlined into the two builds of ReduceAll, so each is
// compiled for that build's instruction set.
#define RM_INLINE [[gnu::always_inline]] inline

template <typename T, typename Op>
RM_INLINE void Loop(T* __restrict a, const T* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = Op::Apply(a[i], b[i]);
}

template <typename Op>
RM_INLINE void LoopHalf(uint16_t* __restrict a, const uint16_t* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = F2H(Op::Apply(H2F(a[i]), H2F(b[i])));
}
template <typename Op>
RM_INLINE void LoopBf16(uint16_t* __restrict a, const uint16_t* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = F2B(Op::Apply(B2F(a[i]), B2F(b[i])));
}

template <typename Op>
RM_INLINE void Dispatch(DataType dtype, void* inout, const void* in, size_t n) {
  VisitDType(
      dtype,
      [&](auto tag) RM_VISIT {
        using Tag = decltype(tag);
        using T = typename Tag::Elem;
        auto* a = static_cast<T*>(inout);
        const auto* b = static_cast<const T*>(in);
        if constexpr (Tag::kDType == DataType::kFloat16) {
          LoopHalf<Op>(a, b, n);
        } else if constexpr (Tag::kDType == DataType::kBFloat16) {
          LoopBf16<Op>(a, b, n);
        } else if constexpr (Tag::kDType != DataType::kBool) {  // bool: every caller refuses it first
          Loop<T, Op>(a, b, n);
        }
      },
      [] {});
}

}  // namespace

float HalfToFloat(uint16_t h) {
  return H2F(h);
}
uint16_t FloatToHalf(float f) {
  return F2H(f);
}
float BFloat16ToFloat(uint16_t b) {
  return B2F(b);
}
uint16_t FloatToBFloat16(float f) {
  return F2B(f);
}

namespace {

RM_INLINE void ReduceAll(DataType dtype, ReduceOp op, void* inout, const void* in, size_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      return Dispatch<Sum>(dtype, inout, in, count);
    case ReduceOp::kProduct:
      return Dispatch<Prod>(dtype, inout, in, count);
    case ReduceOp::kMin:
      return Dispatch<Min>(dtype, inout, in, count);
    case ReduceOp::kMax:
      return Dispatch<Max>(dtype, inout, in, count);
  }
}

void ReduceBaseline(DataType dtype, ReduceOp op, void* inout, const void* in, size_t count) {
  ReduceAll(dtype, op, inout, in, count);
}

#if defined(__x86_64__)
// float16 through F16C: 8 halves to floats, the op, back with round to
// nearest even (the scalar F2H's rounding); the tail as in the baseline.
template <typename Op>
[[gnu::target("avx2,f16c")]] void HalfF16c(uint16_t* __restrict a, const uint16_t* __restrict b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(a + i),
                     _mm256_cvtps_ph(Op::Vec(x, y), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) a[i] = F2H(Op::Apply(H2F(a[i]), H2F(b[i])));
}

[[gnu::target("avx2,f16c")]] void ReduceAvx2(DataType dtype, ReduceOp op, void* inout, const void* in,
                                             size_t count) {
  if (dtype == DataType::kFloat16) {
    auto* a = static_cast<uint16_t*>(inout);
    const auto* b = static_cast<const uint16_t*>(in);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        return HalfF16c<Sum>(a, b, count);
      case ReduceOp::kProduct:
        return HalfF16c<Prod>(a, b, count);
      case ReduceOp::kMin:
        return HalfF16c<Min>(a, b, count);
      case ReduceOp::kMax:
        return HalfF16c<Max>(a, b, count);
    }
  }
  ReduceAll(dtype, op, inout, in, count);
}

bool CpuHasAvx2() {
  __builtin_cpu_init();
  // AVX2 through the compiler's runtime (which also checks that the OS saves
  // the YMM registers); F16C from CPUID leaf 1 (clang's builtin lacks it).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  return __builtin_cpu_supports("avx2") && f16c;
}
#endif

}  // namespace

bool KernelIsaSupported(KernelIsa isa) {
#if defined(__x86_64__)
  static const bool avx2 = CpuHasAvx2();
  return isa == KernelIsa::kBaseline || avx2;
#else
  return isa == KernelIsa::kBaseline;
#endif
}

KernelIsa ActiveKernelIsa() {
  static const KernelIsa active =
      KernelIsaSupported(KernelIsa::kAvx2) ? KernelIsa::kAvx2 : KernelIsa::kBaseline;
  return active;
}

void ReduceIntoWith(KernelIsa isa, DataType dtype, ReduceOp op, void* inout, const void* in, size_t count) {
#if defined(__x86_64__)
  if (isa == KernelIsa::kAvx2) return ReduceAvx2(dtype, op, inout, in, count);
#endif
  (void)isa;
  ReduceBaseline(dtype, op, inout, in, count);
}

void ReduceInto(DataType dtype, ReduceOp op, void* inout, const void* in, size_t count) {
  ReduceIntoWith(ActiveKernelIsa(), dtype, op, inout, in, count);
}

}  // namespace ringmaster::internal
