// fp8 e4m3fn (OCP FP8 "E4M3", as torch.float8_e4m3fn / __nv_fp8_e4m3): 1 sign, 4 exponent
// (bias 7), 3 mantissa bits; no infinities; S.1111.111 is NaN; largest finite 448.
//
// Strategy "fp8" stores x / scale in e4m3fn:
//   scale=row  (default): row = [D bytes e4m3][fp32 scale] padded to 16 bytes,
//                         scale = max|x_row| / 448 (1 if the row is all zeros).
//   scale=table:          row = [D bytes e4m3] padded to 16 bytes, one fp32 scale for the
//                         whole table = max|x| / 448.
// Decoding: x = e4m3_to_float(code) * scale. Encoding rounds to nearest even and saturates
// to +-448 (the "satfinite" conversion).
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

inline constexpr float kE4M3Max = 448.0f;

EDO_HD float e4m3_to_float(std::uint8_t b) {
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  const std::uint32_t em = b & 0x7fu;
  const float f = bits_as_float(em << 20) * bits_as_float(0x7b800000u);  // * 2^120 rebias 7 -> 127
  const std::uint32_t bits = (em == 0x7fu) ? 0x7fc00000u : float_as_bits(f);
  return bits_as_float(bits | sign);
}

EDO_HD std::uint8_t float_to_e4m3(float f) {
  const std::uint32_t x = float_as_bits(f);
  const std::uint32_t sign = (x >> 24) & 0x80u;
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7fu);  // NaN
  if (ax >= 0x43e00000u) return static_cast<std::uint8_t>(sign | 0x7eu);  // >= 448 (incl. inf): saturate
  if (ax == 0) return static_cast<std::uint8_t>(sign);
  const int e = static_cast<int>(ax >> 23) - 127;
  std::uint32_t m = ax & 0x7fffffu;
  std::uint32_t hexp;
  int shift;
  if (e >= -6) {
    hexp = static_cast<std::uint32_t>(e + 7);
    shift = 20;
  } else {
    hexp = 0;
    m |= (ax >> 23) ? 0x800000u : 0u;
    shift = 20 + (-6 - e);
    if (shift > 24) return static_cast<std::uint8_t>(sign);
  }
  const std::uint32_t mant = m >> shift;
  const std::uint32_t rest = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  std::uint32_t v = (hexp << 3) + mant;
  v += (rest > half || (rest == half && (mant & 1u))) ? 1u : 0u;
  if (v > 0x7eu) v = 0x7eu;  // values in [448, 464) round to 448 or would hit the NaN code
  return static_cast<std::uint8_t>(sign | v);
}

// Row layout helpers.
EDO_HD std::uint64_t fp8_row_bytes(std::uint32_t dim, bool per_row_scale) {
  return round_up(dim + (per_row_scale ? 4u : 0u), kRowAlign);
}

}  // namespace edo::kernels
