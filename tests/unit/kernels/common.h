#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "bag_reference.h"
#include "edo/kernels/encode.h"
#include "edo/kernels/workload.h"

namespace edo::kernels::test {

inline std::vector<float> weights(std::uint64_t rows, std::uint32_t dim, std::uint64_t seed = 7, float scale = 1.f) {
  std::vector<float> w(rows * dim);
  random_weights(w.data(), rows, dim, seed, scale);
  return w;
}

inline std::vector<std::int64_t> uniform_indices(std::uint64_t rows, std::uint64_t n, std::uint64_t seed) {
  return zipf_indices(rows, n, 0.0, seed);
}

// Encodes `w` (rows x dim) with the strategy named by `spec`; `counts` drives the
// count-aware formats (pruned, offload's hot set, weighted PQ/low-rank).
inline std::unique_ptr<EncodedTable> enc(const std::string& spec, const std::vector<float>& w, std::uint64_t rows,
                                         std::uint32_t dim, const std::uint64_t* counts = nullptr) {
  EncodeOptions o;
  o.counts = counts;
  return encode(StrategySpec::parse(spec), w.data(), rows, dim, o);
}

inline std::vector<float> decode_all(const EncodedTable& t) {
  std::vector<float> out(t.rows() * t.dim());
  t.decode_rows(0, t.rows(), out.data());
  return out;
}

}  // namespace edo::kernels::test
