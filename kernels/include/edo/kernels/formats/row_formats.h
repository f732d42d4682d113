// The row-contiguous formats (fp32, fp16, bf16, fp8, int8, int4): every row is a fixed
// number of bytes at base + row * row_bytes, and decodes without reading anything else
// (except fp8's per-table scale). This header ties the per-format headers together for the
// generic kernels of both backends.
#pragma once

#include "edo/kernels/formats/bf16.h"
#include "edo/kernels/formats/common.h"
#include "edo/kernels/formats/fp16.h"
#include "edo/kernels/formats/fp8_e4m3.h"
#include "edo/kernels/formats/int4_rowwise.h"
#include "edo/kernels/formats/int8_rowwise.h"

namespace edo::kernels {

enum class RowKind : std::uint32_t { F32 = 0, F16 = 1, BF16 = 2, FP8 = 3, INT8 = 4, INT4 = 5 };

struct RowView {
  const std::uint8_t* base;
  std::uint64_t row_bytes;
  std::uint32_t dim;
  float table_scale;   // fp8 with scale=table; 0 means "per-row scale in the row"
};

// Per-row parameters decoded once per row (a, b: x = decode(code) * a + b).
struct RowParams {
  float a, b;
};

template <RowKind K>
EDO_HD RowParams row_params(const std::uint8_t* row, std::uint32_t dim, float table_scale) {
  if constexpr (K == RowKind::INT8) {
    return {int8_row_scale(row, dim), int8_row_bias(row, dim)};
  } else if constexpr (K == RowKind::INT4) {
    return {int4_row_scale(row, dim), int4_row_bias(row, dim)};
  } else if constexpr (K == RowKind::FP8) {
    return {table_scale != 0.f ? table_scale : load_f32(row + dim), 0.f};
  } else {
    return {1.f, 0.f};
  }
}

// Element d of a row, given its row parameters.
template <RowKind K>
EDO_HD float row_value(const std::uint8_t* row, std::uint32_t d, RowParams p) {
  if constexpr (K == RowKind::F32) {
    return reinterpret_cast<const float*>(row)[d];
  } else if constexpr (K == RowKind::F16) {
    return half_to_float(reinterpret_cast<const std::uint16_t*>(row)[d]);
  } else if constexpr (K == RowKind::BF16) {
    return bf16_to_float(reinterpret_cast<const std::uint16_t*>(row)[d]);
  } else if constexpr (K == RowKind::FP8) {
    return e4m3_to_float(row[d]) * p.a;
  } else if constexpr (K == RowKind::INT8) {
    return int8_dequant(row[d], p.a, p.b);
  } else {
    return int4_dequant(int4_code(row, d), p.a, p.b);
  }
}

EDO_HD std::uint64_t row_bytes_of(RowKind k, std::uint32_t dim, bool fp8_row_scale = true) {
  switch (k) {
    case RowKind::F32: return 4ull * dim;
    case RowKind::F16:
    case RowKind::BF16: return 2ull * dim;
    case RowKind::FP8: return fp8_row_bytes(dim, fp8_row_scale);
    case RowKind::INT8: return int8_row_bytes(dim);
    case RowKind::INT4: return int4_row_bytes(dim);
  }
  return 0;
}

}  // namespace edo::kernels
