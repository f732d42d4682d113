// Low-rank factorisation (strategy "lowrank", ALBERT-style): W ~ A * B with A: V x r and
// B: r x D, both fp32, row-major, fitted by a truncated SVD of W (access-count weighted when a
// count vector is given). device bytes = (V*r + r*D) * 4. Decoding: x(r)[d] = sum_k A[r,k] B[k,d].
// A pooled bag is linear, so backends may pool the A rows first and multiply by B once per bag.
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

struct LowRankView {
  const float* a;
  const float* b;
  std::uint32_t rank, dim;
};

EDO_HD float lowrank_value(const LowRankView& v, std::int64_t row, std::uint32_t d) {
  const float* ar = v.a + static_cast<std::uint64_t>(row) * v.rank;
  float s = 0.f;
  for (std::uint32_t k = 0; k < v.rank; ++k) s = fma_f(ar[k], v.b[static_cast<std::uint64_t>(k) * v.dim + d], s);
  return s;
}

}  // namespace edo::kernels
