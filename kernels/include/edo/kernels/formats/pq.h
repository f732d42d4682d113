// Product quantisation (strategy "pq"): the D columns are split into M sub-spaces of
// dsub = D/M columns; each sub-space has K centroids (K = 256 by default, at most 256; k-means
// with a fixed seed); a row is M uint8 codes.
//   codes    : rows x M uint8, row-major (row r's codes at codes[r*M .. r*M+M-1])
//   codebook : M x K x dsub fp32 (sub-space s, centroid c at codebook[(s*K + c)*dsub])
// device bytes = rows*M + M*K*dsub*4. Decoding: x[d] = codebook[s][codes[r][s]][d - s*dsub].
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

inline constexpr std::uint32_t kPqCentroids = 256;

struct PqView {
  const std::uint8_t* codes;
  const float* codebook;
  std::uint32_t dim, m, dsub, k;  // k: centroids per sub-space
};

// Pointer to the dsub floats that decode sub-space s of a row.
EDO_HD const float* pq_subvector(const PqView& v, std::int64_t row, std::uint32_t s) {
  const std::uint32_t c = v.codes[static_cast<std::uint64_t>(row) * v.m + s];
  return v.codebook + (static_cast<std::uint64_t>(s) * v.k + c) * v.dsub;
}

EDO_HD float pq_value(const PqView& v, std::int64_t row, std::uint32_t d) {
  const std::uint32_t s = d / v.dsub;
  return pq_subvector(v, row, s)[d - s * v.dsub];
}

}  // namespace edo::kernels
