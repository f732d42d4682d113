// Synthetic inputs for benchmarks, the tuner and tests: row-id streams and fp32 weights.
//
// Row ids follow docs/stats.md "Synthetic Zipf(A)" through core/stats' ZipfGenerator, the one
// generator of the project (edo synth uses it too): bounded Zipf over ranks 1..R, ranks mapped
// to rows by a seeded permutation; A <= 0 gives uniform rows.
#pragma once

#include <cstdint>
#include <vector>

namespace edo::kernels {

// `count` row ids of a `rows`-row table. One generator draws them all: the same
// (rows, alpha, seed) gives the same stream, and its hottest row is zipf_row_of_rank(.., 1).
std::vector<std::int64_t> zipf_indices(std::uint64_t rows, std::uint64_t count, double alpha, std::uint64_t seed);
// `batches` batches of `batch` ids drawn one after the other from one generator, so every
// batch has the same hot rows.
std::vector<std::vector<std::int64_t>> zipf_batches(std::uint64_t rows, double alpha, std::uint64_t seed, std::uint64_t batches,
                                                    std::uint64_t batch);
// The row of rank `rank` (1 = most read) in that workload.
std::uint64_t zipf_row_of_rank(std::uint64_t rows, double alpha, std::uint64_t seed, std::uint64_t rank);

// xoshiro256** seeded through splitmix64: weights, k-means sampling, test inputs.
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

// A seeded random permutation of 0..n-1 (sampling rows without replacement).
std::vector<std::int64_t> random_permutation(std::uint64_t n, std::uint64_t seed);

// rows x dim fp32 weights, approximately N(0, 1) * scale (Irwin-Hall of 4 uniforms: mean 0,
// variance 1, bounded by +-3.46), deterministic for a seed (parallel).
void random_weights(float* out, std::uint64_t rows, std::uint32_t dim, std::uint64_t seed, float scale = 1.f);

}  // namespace edo::kernels
