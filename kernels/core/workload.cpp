// Synthetic row ids (through core/stats' ZipfGenerator), the seeded RNG and the weights generator.
#include "edo/kernels/workload.h"

#include <omp.h>

#include <cmath>
#include <stdexcept>

#include "edo/kernels/strategy.h"
#include "edo/stats/table_stats.h"

namespace edo::kernels {

namespace {
std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix(seed);
}
std::uint64_t Rng::next() {
  const std::uint64_t r = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return r;
}
double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
std::uint64_t Rng::below(std::uint64_t n) {
  // Lemire's multiply-shift with rejection.
  unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
  std::uint64_t lo = static_cast<std::uint64_t>(m);
  if (lo < n) {
    const std::uint64_t t = -n % n;
    while (lo < t) {
      m = static_cast<unsigned __int128>(next()) * n;
      lo = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}
float Rng::normal() {
  const double u1 = (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = uniform();
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

std::vector<std::int64_t> random_permutation(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> p(n);
  for (std::uint64_t i = 0; i < n; ++i) p[i] = static_cast<std::int64_t>(i);
  Rng rng(seed ^ 0x5eed5eed5eedULL);
  for (std::uint64_t i = n; i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
  return p;
}

std::vector<std::int64_t> zipf_indices(std::uint64_t rows, std::uint64_t count, double alpha, std::uint64_t seed) {
  if (rows == 0) throw std::invalid_argument("zipf_indices: the table has no rows");
  std::vector<std::int64_t> out(count);
  stats::ZipfGenerator(rows, alpha > 0 ? alpha : 0.0, seed).fill(out.data(), out.size());
  return out;
}

std::vector<std::vector<std::int64_t>> zipf_batches(std::uint64_t rows, double alpha, std::uint64_t seed, std::uint64_t batches,
                                                    std::uint64_t batch) {
  if (rows == 0) throw std::invalid_argument("zipf_batches: the table has no rows");
  stats::ZipfGenerator gen(rows, alpha > 0 ? alpha : 0.0, seed);
  std::vector<std::vector<std::int64_t>> out(batches, std::vector<std::int64_t>(batch));
  for (auto& b : out) gen.fill(b.data(), b.size());
  return out;
}

std::uint64_t zipf_row_of_rank(std::uint64_t rows, double alpha, std::uint64_t seed, std::uint64_t rank) {
  return stats::ZipfGenerator(rows, alpha > 0 ? alpha : 0.0, seed).row_of_rank(rank);
}

void random_weights(float* out, std::uint64_t rows, std::uint32_t dim, std::uint64_t seed, float scale) {
  constexpr std::uint64_t kChunk = 4096;
  const std::int64_t chunks = static_cast<std::int64_t>((rows + kChunk - 1) / kChunk);
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    Rng rng(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(c) + 1);
    const std::uint64_t lo = static_cast<std::uint64_t>(c) * kChunk, hi = std::min(rows, lo + kChunk);
    // Approximately normal and cheap: the sum of four uniform 16-bit draws (Irwin-Hall,
    // variance 4/12 of the unit range), centred and scaled to unit variance.
    constexpr float kNorm = 1.7320508f / 65536.f;  // sqrt(12/4) per unit of 2^16
    for (std::uint64_t i = lo * dim; i < hi * dim; ++i) {
      const std::uint64_t r = rng.next();
      const float s = static_cast<float>((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) - 131070.f;
      out[i] = s * kNorm * scale;
    }
  }
}

}  // namespace edo::kernels
