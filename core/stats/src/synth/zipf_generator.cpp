// Bounded Zipf(A) sampler: rejection-inversion (Hoermann & Derflinger 1996, as in Apache
// Commons' RejectionInversionZipfSampler), O(1) expected per sample; ranks are mapped to rows
// by a keyed 4-round Feistel permutation over the next even power of two with cycle-walking
// (a bijection of [0, rows) in O(1) memory).
#include <cmath>

#include "internal.h"

namespace edo::stats {

struct ZipfGenerator::Impl {
  uint64_t rows;
  double alpha;
  uint64_t state;
  uint64_t keys[4];
  uint32_t half;
  uint64_t half_mask;
  double h_x1, h_n, s;

  uint64_t next() {  // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  static double helper1(double x) {
    return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
  }
  static double helper2(double x) {
    return std::fabs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
  }
  double h(double x) const { return std::exp(-alpha * std::log(x)); }
  double h_integral(double x) const {
    const double lx = std::log(x);
    return helper2((1.0 - alpha) * lx) * lx;
  }
  double h_integral_inv(double x) const {
    double t = x * (1.0 - alpha);
    if (t < -1.0) t = -1.0;
    return std::exp(helper1(t) * x);
  }

  uint64_t sample_rank() {
    if (alpha == 0.0) return 1 + static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * rows) >> 64);
    for (;;) {
      const double u = h_n + uniform() * (h_x1 - h_n);
      const double x = h_integral_inv(u);
      double kd = std::floor(x + 0.5);
      if (kd < 1.0) kd = 1.0;
      if (kd > static_cast<double>(rows)) kd = static_cast<double>(rows);
      if (kd - x <= s || u >= h_integral(kd + 0.5) - h(kd)) return static_cast<uint64_t>(kd);
    }
  }

  uint64_t feistel(uint64_t x) const {
    uint64_t l = x >> half, r = x & half_mask;
    for (uint64_t k : keys) {
      const uint64_t f = detail::mix64(r ^ k) & half_mask;
      const uint64_t nl = r;
      r = l ^ f;
      l = nl;
    }
    return (l << half) | r;
  }
  uint64_t permute(uint64_t x) const {
    do x = feistel(x);
    while (x >= rows);
    return x;
  }
};

ZipfGenerator::ZipfGenerator(uint64_t rows, double alpha, uint64_t seed) : impl_(std::make_unique<Impl>()) {
  Impl& g = *impl_;
  g.rows = rows == 0 ? 1 : rows;
  g.alpha = alpha < 0.0 ? 0.0 : alpha;
  g.state = seed ^ 0x6a09e667f3bcc909ULL;
  for (auto& k : g.keys) k = g.next();
  uint32_t bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) < g.rows) ++bits;
  g.half = (bits + 1) / 2;
  g.half_mask = (uint64_t{1} << g.half) - 1;
  if (g.alpha != 0.0) {
    g.h_x1 = g.h_integral(1.5) - 1.0;
    g.h_n = g.h_integral(static_cast<double>(g.rows) + 0.5);
    g.s = 2.0 - g.h_integral_inv(g.h_integral(2.5) - g.h(2.0));
  }
}
ZipfGenerator::~ZipfGenerator() = default;
ZipfGenerator::ZipfGenerator(ZipfGenerator&&) noexcept = default;

void ZipfGenerator::fill(int64_t* out, size_t n) {
  Impl& g = *impl_;
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(g.permute(g.sample_rank() - 1));
}

uint64_t ZipfGenerator::row_of_rank(uint64_t rank) const {
  if (rank == 0 || rank > impl_->rows) return 0;
  return impl_->permute(rank - 1);
}

}  // namespace edo::stats
