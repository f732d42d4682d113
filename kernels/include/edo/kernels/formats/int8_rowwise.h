// int8 row-wise quantisation, FBGEMM "Fused8BitRowwiseQuantizedSBFloat" layout, rows padded:
//
//   byte 0 .. D-1      : uint8 codes q[d]
//   byte D .. D+3      : fp32 scale   (little endian, as in memory)
//   byte D+4 .. D+7    : fp32 bias
//   byte D+8 .. R-1    : zero padding, R = round_up(D + 8, 16)
//
// Decoding: x[d] = q[d] * scale + bias (one fma). Encoding: bias = min(row),
// scale = (max - min) / 255 (1 if max == min, then every code is 0), q = round((x - bias)/scale)
// clamped to [0, 255]. The reconstruction error of every element is at most scale/2
// (plus float rounding). Rows start on a 16-byte boundary; tables are 64-byte aligned.
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

EDO_HD std::uint64_t int8_row_bytes(std::uint32_t dim) { return round_up(std::uint64_t{dim} + 8u, kRowAlign); }

// The code goes to float through a signed int (the same value: q <= 255): compilers vectorise
// int32 -> float (cvtdq2ps) but converted the unsigned code one element at a time
// (vcvtusi2ss), which made int8 bags of 16-wide rows 4x slower than fp32 on the CPU.
EDO_HD float int8_dequant(std::uint8_t q, float scale, float bias) {
  return fma_f(static_cast<float>(static_cast<std::int32_t>(q)), scale, bias);
}

// Scale and bias of a row: read from the row's tail.
EDO_HD float int8_row_scale(const std::uint8_t* row, std::uint32_t dim) {
  return load_f32(row + dim);
}
EDO_HD float int8_row_bias(const std::uint8_t* row, std::uint32_t dim) {
  return load_f32(row + dim + 4);
}

}  // namespace edo::kernels
