#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "edo/kernels/workload.h"
#include "edo/kernels/encode.h"

namespace edo::kernels::test {

inline std::vector<float> weights(std::uint64_t rows, std::uint32_t dim, std::uint64_t seed = 7, float scale = 1.f) {
  std::vector<float> w(rows * dim);
  random_weights(w.data(), rows, dim, seed, scale);
  return w;
}

inline std::vector<std::int64_t> uniform_indices(std::uint64_t rows, std::uint64_t n, std::uint64_t seed) {
  return zipf_indices(rows, n, 0.0, seed);
}

// fp64 reference bag over the table's own decoded rows, with the bound of float
// accumulation error: tol = (len * 2^-23 + 1e-6) * sum |w_i x_i| (per element).
struct RefBag {
  std::vector<double> value, tol;
};
inline RefBag reference_bag(const std::vector<float>& decoded, std::uint32_t dim, const std::vector<std::int64_t>& idx,
                            const std::vector<std::int64_t>& offsets, const float* psw, Pooling mode) {
  const std::size_t nb = offsets.size() - 1;
  RefBag r{std::vector<double>(nb * dim, 0.0), std::vector<double>(nb * dim, 0.0)};
  for (std::size_t b = 0; b < nb; ++b) {
    for (std::int64_t p = offsets[b]; p < offsets[b + 1]; ++p) {
      const double w = psw ? psw[p] : 1.0;
      for (std::uint32_t d = 0; d < dim; ++d) {
        const double x = w * decoded[static_cast<std::size_t>(idx[p]) * dim + d];
        r.value[b * dim + d] += x;
        r.tol[b * dim + d] += std::fabs(x);
      }
    }
    const auto len = offsets[b + 1] - offsets[b];
    const double k = static_cast<double>(len) * 0x1p-23 + 1e-6;
    for (std::uint32_t d = 0; d < dim; ++d) {
      if (mode == Pooling::Mean && len > 0) {
        r.value[b * dim + d] /= static_cast<double>(len);
        r.tol[b * dim + d] /= static_cast<double>(len);
      }
      r.tol[b * dim + d] = r.tol[b * dim + d] * k + 1e-6;
    }
  }
  return r;
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
