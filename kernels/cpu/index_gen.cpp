#include "kernels/cpu/index_gen.h"

#include <omp.h>

#include <cmath>
#include <stdexcept>

#include "kernels/cpu/strategy.h"

namespace edo::kernels {

namespace {
std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
double helper1(double x) { return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x)); }
double helper2(double x) { return std::fabs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x)); }
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

ZipfSampler::ZipfSampler(std::uint64_t n, double exponent) : n_(n), s_(exponent) {
  if (n == 0) throw std::invalid_argument("Zipf: need at least one rank");
  if (!(exponent > 0)) throw std::invalid_argument("Zipf: exponent must be > 0");
  h_integral_x1_ = h_integral(1.5) - 1.0;
  h_integral_n_ = h_integral(static_cast<double>(n) + 0.5);
  s_val_ = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
}
double ZipfSampler::h(double x) const { return std::exp(-s_ * std::log(x)); }
double ZipfSampler::h_integral(double x) const {
  const double lx = std::log(x);
  return helper2((1.0 - s_) * lx) * lx;
}
double ZipfSampler::h_integral_inverse(double x) const {
  double t = x * (1.0 - s_);
  if (t < -1.0) t = -1.0;
  return std::exp(helper1(t) * x);
}
std::uint64_t ZipfSampler::sample(Rng& rng) const {
  for (;;) {
    const double u = h_integral_n_ + rng.uniform() * (h_integral_x1_ - h_integral_n_);
    const double x = h_integral_inverse(u);
    double kd = std::floor(x + 0.5);
    if (kd < 1.0) kd = 1.0;
    if (kd > static_cast<double>(n_)) kd = static_cast<double>(n_);
    const std::uint64_t k = static_cast<std::uint64_t>(kd);
    if (kd - x <= s_val_ || u >= h_integral(kd + 0.5) - h(kd)) return k;
  }
}

std::vector<std::int64_t> random_permutation(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> p(n);
  for (std::uint64_t i = 0; i < n; ++i) p[i] = static_cast<std::int64_t>(i);
  Rng rng(seed ^ 0x5eed5eed5eedULL);
  for (std::uint64_t i = n; i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
  return p;
}

std::vector<std::int64_t> generate_indices(std::uint64_t rows, std::uint64_t count, double zipf, std::uint64_t seed,
                                           const std::vector<std::int64_t>& perm) {
  std::vector<std::int64_t> out(count);
  // Deterministic in parallel: fixed chunks with their own streams.
  constexpr std::uint64_t kChunk = 1 << 16;
  const std::int64_t chunks = static_cast<std::int64_t>((count + kChunk - 1) / kChunk);
  if (zipf > 0 && perm.size() != rows) throw std::invalid_argument("generate_indices: permutation size != rows");
  const ZipfSampler z(rows, zipf > 0 ? zipf : 1.0);
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    Rng rng(seed * 0x100000001b3ULL + static_cast<std::uint64_t>(c));
    const std::uint64_t lo = static_cast<std::uint64_t>(c) * kChunk, hi = std::min(count, lo + kChunk);
    for (std::uint64_t i = lo; i < hi; ++i)
      out[i] = zipf > 0 ? perm[z.sample(rng) - 1] : static_cast<std::int64_t>(rng.below(rows));
  }
  return out;
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
