// Multi-hash embedding (strategy "multihash"): k hash functions map a row id into one shared
// table of B buckets.
//   mode=sum    : table is B x D fp32; x(r) = sum_i T[h_i(r)]
//   mode=concat : table is B x (D/k) fp32; x(r) = [T[h_0(r)], T[h_1(r)], ..., T[h_{k-1}(r)]]
// h_i(r) = mix64(r + (seed + i) * golden) mod B, mix64 = splitmix64's finaliser.
// device bytes = B * width * 4 (hash parameters are constants). Needs retraining: the
// encoder only fits the buckets to the fp32 weights by least squares.
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

enum class HashMode : std::uint32_t { Sum = 0, Concat = 1 };

struct MultiHashView {
  const float* table;
  std::uint64_t buckets;
  std::uint64_t seed;
  std::uint32_t dim, k, width;  // width = dim (sum) or dim/k (concat)
  HashMode mode;
};

EDO_HD std::uint64_t multihash_bucket(const MultiHashView& v, std::int64_t row, std::uint32_t i) {
  return mix64(static_cast<std::uint64_t>(row) + (v.seed + i) * 0x9e3779b97f4a7c15ULL) % v.buckets;
}

EDO_HD float multihash_value(const MultiHashView& v, std::int64_t row, std::uint32_t d) {
  if (v.mode == HashMode::Concat) {
    const std::uint32_t i = d / v.width;
    return v.table[multihash_bucket(v, row, i) * v.width + (d - i * v.width)];
  }
  float s = 0.f;
  for (std::uint32_t i = 0; i < v.k; ++i) s += v.table[multihash_bucket(v, row, i) * v.dim + d];
  return s;
}

}  // namespace edo::kernels
