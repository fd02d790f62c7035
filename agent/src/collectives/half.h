// float16 and bfloat16 to and from float, round to nearest even, inline:
// the reduction loops (kernels.cc) and MEAN's divide (elementwise.cc) call
// them per element. kernels.h has their public, out-of-line names.
#pragma once

#include <cstdint>
#include <cstring>

namespace ringmaster::internal::half {

inline uint32_t AsBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float AsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float H2F(uint16_t h) {
  constexpr uint32_t kShiftedExp = 0x7c00u << 13;
  uint32_t o = (h & 0x7fffu) << 13;
  uint32_t exp = kShiftedExp & o;
  o += (127u - 15u) << 23;
  if (exp == kShiftedExp) {
    o += (128u - 16u) << 23;  // Inf/NaN
  } else if (exp == 0) {
    o += 1u << 23;  // subnormal: renormalise
    o = AsBits(AsFloat(o) - AsFloat(113u << 23));
  }
  return AsFloat(o | (static_cast<uint32_t>(h & 0x8000u) << 16));
}

inline uint16_t F2H(float value) {
  constexpr uint32_t kInf = 255u << 23, kMax = (127u + 16u) << 23;
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t f = AsBits(value);
  uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint16_t o;
  if (f >= kMax) {
    o = f > kInf ? 0x7e00 : 0x7c00;
  } else if (f < (113u << 23)) {
    o = static_cast<uint16_t>(AsBits(AsFloat(f) + AsFloat(kDenormMagic)) - kDenormMagic);
  } else {
    uint32_t mant_odd = (f >> 13) & 1u;
    f += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    f += mant_odd;
    o = static_cast<uint16_t>(f >> 13);
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

inline float B2F(uint16_t b) {
  return AsFloat(static_cast<uint32_t>(b) << 16);
}
inline uint16_t F2B(float value) {
  uint32_t u = AsBits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace ringmaster::internal::half
