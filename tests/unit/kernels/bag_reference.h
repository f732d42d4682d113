// The fp64 reference of a pooled bag and the error a float32 backend may make, derived from the
// bag's length and magnitudes (shared by the CPU tests here and the CUDA tests in tests/gpu).
//
// The reference sums the table's own decoded rows (EncodedTable::decode_rows, the formats'
// EDO_HD math) in double. A backend that evaluates in float32, u = 2^-24:
//
//  * "in order" (every backend for row formats, PQ, QR, pruned, offload; the CUDA backend for
//    every format): it decodes a row's element x_k and adds w_k x_k to an fp32 accumulator,
//    bag position after bag position (fma(w, x, acc), or acc + fl(w x)). Step k errs by at
//    most u |s_k| (s_k the computed partial sum) plus, when w x is rounded first or a scale
//    is folded into the weight (fp8: fma(code, w * scale, acc)), 2u |w_k x_k|. So
//        |computed - exact| <= u (sum_k |S_k| + 2 sum_k |w_k x_k|) (1 + 2 n u)
//    with S_k the exact partial sums (the factor covers the second-order terms). Decodes are
//    bit-identical on both backends (same EDO_HD functions, fma on both), so no decode term.
//  * "any order" (the CPU backend's multi-hash, which adds each bucket row on its own, and
//    low rank, which pools the rows of A and multiplies by B once per bag): the float sum of N
//    terms in any order errs by at most (N - 1) u sum |terms|; the terms are the decode's own
//    (k bucket values; r products a_k B_kd), so
//        |computed - exact| <= u (N + 2) sum_k |w_k| m_k,    m_k = sum of |decode terms|,
//    N = n k (multi-hash) or n + r (low rank), +2 for the decode's and the weight's roundings.
//
// Mean divides the sum and its bound by the length and adds the rounding of 1/len and of the
// product: 2u |mean|. A tolerance that is wider than this is not a check; one that is tighter
// fails correct backends (the in-order bound is what a float sum guarantees, nothing more).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "edo/kernels/formats/lowrank.h"
#include "edo/kernels/formats/multihash.h"
#include "edo/kernels/strategy.h"

namespace edo::kernels::test {

inline constexpr double kUnitRoundoff = 0x1p-24;

enum class Order { InOrder, AnyOrder };

// |terms| of the decode of element d of a row, for the formats whose decode is itself a sum
// (multi-hash sum: k buckets; low rank: r products); the number of such terms per row.
struct DecodeTerms {
  FormatData f;
  explicit DecodeTerms(const EncodedTable& t) : f(t.format_data()) {}
  std::uint32_t count() const {
    if (f.kind == FormatKind::MultiHash && static_cast<int>(f.scalar("mode")) == static_cast<int>(HashMode::Sum))
      return static_cast<std::uint32_t>(f.scalar("k"));
    if (f.kind == FormatKind::LowRank) return static_cast<std::uint32_t>(f.scalar("rank"));
    return 1;
  }
  // sum of |terms|; for single-term formats |x| (given).
  double magnitude(std::int64_t row, std::uint32_t d, double x) const {
    if (f.kind == FormatKind::LowRank) {
      const auto r = static_cast<std::uint32_t>(f.scalar("rank"));
      const auto* a = static_cast<const float*>(f.array("a").data) + static_cast<std::uint64_t>(row) * r;
      const auto* b = static_cast<const float*>(f.array("b").data);
      double m = 0;
      for (std::uint32_t k = 0; k < r; ++k) m += std::fabs(static_cast<double>(a[k]) * b[static_cast<std::uint64_t>(k) * f.dim + d]);
      return m;
    }
    if (count() > 1) {  // multi-hash, sum mode
      const MultiHashView v{static_cast<const float*>(f.array("table").data), static_cast<std::uint64_t>(f.scalar("buckets")),
                            static_cast<std::uint64_t>(f.scalar("seed")), f.dim, static_cast<std::uint32_t>(f.scalar("k")),
                            static_cast<std::uint32_t>(f.scalar("width")), HashMode::Sum};
      double m = 0;
      for (std::uint32_t i = 0; i < v.k; ++i) m += std::fabs(v.table[multihash_bucket(v, row, i) * v.dim + d]);
      return m;
    }
    return std::fabs(x);
  }
};

struct RefBag {
  std::vector<double> value, tol;
};

// decoded: the table's rows x dim decoded rows. `order`: how the backend under test adds.
inline RefBag reference_bag(const EncodedTable& table, const std::vector<float>& decoded, const std::vector<std::int64_t>& idx,
                            const std::vector<std::int64_t>& offsets, const float* psw, Pooling mode, Order order) {
  const std::uint32_t dim = table.dim();
  const DecodeTerms terms(table);
  const std::size_t nb = offsets.size() - 1;
  RefBag r{std::vector<double>(nb * dim, 0.0), std::vector<double>(nb * dim, 0.0)};
  std::vector<double> partial(dim), abs_partial(dim), abs_terms(dim), abs_decode(dim);
  for (std::size_t b = 0; b < nb; ++b) {
    std::fill(partial.begin(), partial.end(), 0.0);
    std::fill(abs_partial.begin(), abs_partial.end(), 0.0);
    std::fill(abs_terms.begin(), abs_terms.end(), 0.0);
    std::fill(abs_decode.begin(), abs_decode.end(), 0.0);
    for (std::int64_t p = offsets[b]; p < offsets[b + 1]; ++p) {
      const double w = psw ? psw[p] : 1.0;
      for (std::uint32_t d = 0; d < dim; ++d) {
        const double x = decoded[static_cast<std::size_t>(idx[p]) * dim + d];
        partial[d] += w * x;
        abs_partial[d] += std::fabs(partial[d]);
        abs_terms[d] += std::fabs(w * x);
        abs_decode[d] += std::fabs(w) * terms.magnitude(idx[p], d, x);
      }
    }
    const auto len = static_cast<double>(offsets[b + 1] - offsets[b]);
    const double n_terms = order == Order::AnyOrder
                               ? (table.strategy() == "lowrank" ? len + terms.count() : len * terms.count())
                               : len;
    for (std::uint32_t d = 0; d < dim; ++d) {
      double v = partial[d];
      double tol = order == Order::InOrder ? kUnitRoundoff * (abs_partial[d] + 2 * abs_terms[d]) * (1 + 2 * len * kUnitRoundoff)
                                           : kUnitRoundoff * (n_terms + 2) * abs_decode[d];
      if (mode == Pooling::Mean && len > 0) {
        v /= len;
        tol = tol / len + 2 * kUnitRoundoff * std::fabs(v);
      }
      r.value[b * dim + d] = v;
      // Subnormal results: float keeps absolute precision 2^-149 there.
      r.tol[b * dim + d] = tol + 0x1p-140;
    }
  }
  return r;
}

// How each backend adds a strategy's terms (see the top of this file).
inline Order cpu_order(const std::string& strategy_name, const EncodedTable& t) {
  return (strategy_name == "lowrank" || DecodeTerms(t).count() > 1) ? Order::AnyOrder : Order::InOrder;
}

}  // namespace edo::kernels::test
