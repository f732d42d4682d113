// int4 row-wise quantisation, FBGEMM "FusedNBitRowwiseQuantizedSBHalf" layout (bit rate 4),
// rows padded:
//
//   byte 0 .. ceil(D/2)-1 : packed codes, element 2i in the low nibble of byte i,
//                           element 2i+1 in the high nibble
//   next 2 bytes          : fp16 scale
//   next 2 bytes          : fp16 bias
//   then zero padding up to R = round_up(ceil(D/2) + 4, 16)
//
// Decoding: x[d] = q[d] * scale + bias with scale/bias widened to fp32. Encoding picks
// bias = min(row) rounded *down* to fp16 and scale = (max - bias)/15 rounded *up* to fp16, so
// the whole row range is covered and every element's error is at most scale/2.
#pragma once

#include "edo/kernels/formats/common.h"
#include "edo/kernels/formats/fp16.h"

namespace edo::kernels {

EDO_HD std::uint64_t int4_code_bytes(std::uint32_t dim) { return (std::uint64_t{dim} + 1u) / 2u; }
EDO_HD std::uint64_t int4_row_bytes(std::uint32_t dim) { return round_up(int4_code_bytes(dim) + 4u, kRowAlign); }

EDO_HD std::uint32_t int4_code(const std::uint8_t* row, std::uint32_t d) {
  return (row[d >> 1] >> ((d & 1u) * 4u)) & 0xfu;
}

// Through a signed int, as int8_dequant (q <= 15): the conversion vectorises.
EDO_HD float int4_dequant(std::uint32_t q, float scale, float bias) {
  return fma_f(static_cast<float>(static_cast<std::int32_t>(q)), scale, bias);
}

EDO_HD float int4_row_scale(const std::uint8_t* row, std::uint32_t dim) {
  return half_to_float(load_u16(row + int4_code_bytes(dim)));
}
EDO_HD float int4_row_bias(const std::uint8_t* row, std::uint32_t dim) {
  return half_to_float(load_u16(row + int4_code_bytes(dim) + 2));
}

}  // namespace edo::kernels
