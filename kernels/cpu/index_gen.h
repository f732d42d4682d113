// Synthetic index streams for benchmarks and tests, private to kernels/ (the official
// generator lives in core/stats; this one follows the same definition, DESIGN.md
// "Synthetic Zipf(A)"): bounded Zipf over ranks 1..R with P(k) ~ k^-A, sampled by
// rejection-inversion (Hoermann & Derflinger 1996), ranks mapped to rows through a seeded
// random permutation so that hot rows are spread over the table.
#pragma once

#include <cstdint>
#include <vector>

namespace edo::kernels {

// xoshiro256** seeded through splitmix64.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  double uniform();                        // [0, 1)
  std::uint64_t below(std::uint64_t n);    // [0, n), unbiased
  float normal();                          // N(0, 1)

 private:
  std::uint64_t s_[4];
};

class ZipfSampler {
 public:
  ZipfSampler(std::uint64_t n, double exponent);  // exponent > 0
  std::uint64_t sample(Rng& rng) const;            // rank in [1, n]

 private:
  double h(double x) const;
  double h_integral(double x) const;
  double h_integral_inverse(double x) const;
  std::uint64_t n_;
  double s_, h_integral_x1_, h_integral_n_, s_val_;
};

// A seeded random permutation of 0..n-1 (rank k -> row perm[k-1]).
std::vector<std::int64_t> random_permutation(std::uint64_t n, std::uint64_t seed);

// count row ids of a table of `rows` rows: uniform when zipf <= 0, else Zipf(zipf) ranks
// mapped through `perm` (which must have `rows` entries).
std::vector<std::int64_t> generate_indices(std::uint64_t rows, std::uint64_t count, double zipf, std::uint64_t seed,
                                           const std::vector<std::int64_t>& perm);

// rows x dim fp32 weights, approximately N(0, 1) * scale (Irwin-Hall of 4 uniforms: mean 0,
// variance 1, bounded by +-3.46), deterministic for a seed (parallel).
void random_weights(float* out, std::uint64_t rows, std::uint32_t dim, std::uint64_t seed, float scale = 1.f);

}  // namespace edo::kernels
