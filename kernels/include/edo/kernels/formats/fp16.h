// IEEE 754 binary16 ("fp16"): 1 sign, 5 exponent (bias 15), 10 mantissa bits.
// Stored row layout (strategy "fp16"): D uint16 values, row bytes = 2*D, no metadata.
// Conversions are written by hand (no <cuda_fp16.h>, no F16C) so that host and device
// share one definition. float -> half rounds to nearest, ties to even (also the directed
// roundings used by int4's scale/bias); overflow -> +-inf, NaN stays NaN (quiet).
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

// Exact half -> float (every half is representable as a float). Branch-light so that a loop
// over it vectorises on the CPU.
EDO_HD float half_to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
  float f;  // the hardware conversion: exact as well, one instruction
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t em = h & 0x7fffu;  // exponent and mantissa
  // Normal and subnormal: shift into float position, then scale by 2^112 to rebias
  // (15 -> 127). Multiplying by a power of two is exact and handles subnormals for free.
  float f = bits_as_float(em << 13) * bits_as_float(0x77800000u);  // 2^112
  // Inf/NaN: exponent all ones -> float exponent all ones, mantissa kept.
  const std::uint32_t infnan = 0x7f800000u | (em & 0x3ffu) << 13;
  const std::uint32_t bits = (em >= 0x7c00u) ? infnan : float_as_bits(f);
  return bits_as_float(bits | sign);
#endif
}

enum class Round : int { NearestEven = 0, Down = 1, Up = 2 };  // Down/Up = toward -inf/+inf

// float -> half with the given rounding (default: nearest, ties to even).
EDO_HD std::uint16_t float_to_half(float f, Round mode = Round::NearestEven) {
  const std::uint32_t x = float_as_bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  }
  const bool neg = sign != 0;
  // "Away from zero" for directed rounding: Up on positives, Down on negatives.
  const bool away = (mode == Round::Up && !neg) || (mode == Round::Down && neg);
  const bool toward_zero = (mode == Round::Up && neg) || (mode == Round::Down && !neg);
  const int e = static_cast<int>(ax >> 23) - 127;  // unbiased exponent
  std::uint32_t mant;                              // 10-bit (or subnormal) half mantissa, pre-rounding
  std::uint32_t rest;                              // dropped bits
  int shift;                                       // how many bits dropped
  std::uint32_t hexp;
  if (e > 15) {  // overflow
    if (toward_zero) return static_cast<std::uint16_t>(sign | 0x7bffu);
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  }
  if (e >= -14) {  // normal half
    hexp = static_cast<std::uint32_t>(e + 15);
    shift = 13;
    const std::uint32_t m = ax & 0x7fffffu;
    mant = m >> shift;
    rest = m & ((1u << shift) - 1u);
  } else {  // subnormal half (or zero)
    hexp = 0;
    if (ax == 0) return static_cast<std::uint16_t>(sign);
    const std::uint32_t m = (ax & 0x7fffffu) | ((ax >> 23) ? 0x800000u : 0u);
    shift = 13 + (-14 - e);
    if (shift > 24) {  // far below the smallest subnormal: zero, or one ulp when rounding away
      return static_cast<std::uint16_t>(sign | (away ? 1u : 0u));
    }
    mant = m >> shift;
    rest = m & ((1u << shift) - 1u);
  }
  std::uint32_t h = (hexp << 10) + mant;  // carries from mant into the exponent are correct
  const std::uint32_t half = 1u << (shift - 1);
  bool inc;
  if (mode == Round::NearestEven) {
    inc = rest > half || (rest == half && (mant & 1u));
  } else {
    inc = away && rest != 0;
  }
  h += inc ? 1u : 0u;
  if (h >= 0x7c00u && toward_zero) h = 0x7bffu;
  return static_cast<std::uint16_t>(sign | h);
}

}  // namespace edo::kernels
