// bfloat16: the top 16 bits of an IEEE float (1 sign, 8 exponent, 7 mantissa bits).
// Stored row layout (strategy "bf16"): D uint16 values, row bytes = 2*D, no metadata.
// float -> bf16 rounds to nearest, ties to even; NaN stays a quiet NaN.
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

EDO_HD float bf16_to_float(std::uint16_t b) { return bits_as_float(static_cast<std::uint32_t>(b) << 16); }

EDO_HD std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = float_as_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN
  const std::uint32_t lsb = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7fffu + lsb) >> 16);  // overflow rounds to inf, as IEEE
}

}  // namespace edo::kernels
