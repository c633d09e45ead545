// Conversions between f32 and the 16-bit float formats gradscope reads (IEEE half, bfloat16).
//
//   uint16_t h = gradscope::float_to_half(0.1f);
//   float back = gradscope::half_to_float(h);      // 0.0999755859375f
//
// Rounding is to nearest, ties to even; NaN stays NaN, overflow becomes Inf.
#pragma once

#include <cstdint>
#include <cstring>

namespace gradscope {

namespace internal {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace internal

/// IEEE 754 binary16 to float; exact for every input, denormals included.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return internal::bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return internal::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  // Zero or denormal: the value is mant * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return internal::bits_float(sign | internal::float_bits(magnitude));
}

/// float to IEEE 754 binary16, round to nearest even.
inline uint16_t float_to_half(float f) {
  const uint32_t x = internal::float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (abs < 0x38800000u) {
    // Result is denormal or zero: scale so that the half's last bit is the float's unit.
    const float magnitude = internal::bits_float(abs) * 16777216.0f;  // * 2^24, exact
    const float rounded = magnitude + 8388608.0f - 8388608.0f;         // round to integer, RNE
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(rounded));
  }
  const uint32_t mant_odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xc8000fffu + mant_odd;  // rebias exponent and round (RNE)
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

/// bfloat16 to float: the upper 16 bits of an f32.
inline float bfloat16_to_float(uint16_t b) {
  return internal::bits_float(static_cast<uint32_t>(b) << 16);
}

/// float to bfloat16, round to nearest even; NaN stays NaN.
inline uint16_t float_to_bfloat16(float f) {
  const uint32_t x = internal::float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace gradscope
