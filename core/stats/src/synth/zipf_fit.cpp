// Maximum-likelihood Zipf exponent of a rank-frequency curve.
//
// Model: discrete bounded power law over ranks 1..n (n = rows seen): P(k) = k^-a / H(n, a).
// Log-likelihood of counts c_k: L(a) = -a * sum c_k ln k - N ln H(n, a), concave in a, so a
// golden-section search on [0, 6] finds the maximum. H is summed exactly for k <= 32 and
// by Euler-Maclaurin beyond, so a fit over 2^26 ranks costs O(n) once plus O(1) per step.
//
// fit_error: RMS over ranks of log10(observed frequency) - log10(model frequency), taken at
// log-spaced ranks (20 per decade) so that every decade of ranks weighs the same (otherwise
// the long flat tail of count-1 rows dominates).
#include <algorithm>
#include <cmath>
#include <vector>

#include "internal.h"

namespace edo::stats {

namespace {

// Terms summed one by one; the rest by Euler-Maclaurin to the fifth derivative. The first
// neglected term (B8/8! f^(7)) is below 1e-14 of the sum from 32 terms on for every exponent
// the fit tries (0..6), so the sum is exact to double precision; 32 terms instead of thousands
// keep the fit, called for every table by the report, cheap at 10,000 tables (issue 31).
constexpr uint64_t kExactTerms = 32;

// sum_{k=1..n} k^-a
double harmonic(uint64_t n, double a) {
  const uint64_t m = std::min(n, kExactTerms);
  double h = 0.0;
  for (uint64_t k = m; k >= 1; --k) h += std::pow(static_cast<double>(k), -a);
  if (n <= m) return h;
  const double lo = static_cast<double>(m + 1), hi = static_cast<double>(n);
  // The integral of x^-a over [lo, hi]: (hi^b - lo^b) / b with b = 1 - a, written as
  // lo^b * expm1(b L) / b (L = ln(hi/lo)), which does not cancel when a is close to 1.
  const double b = 1.0 - a, L = std::log(hi / lo);
  const double integral = b == 0.0 ? L : std::pow(lo, b) * std::expm1(b * L) / b;
  // f(x) = x^-a and its odd derivatives: d1 = -a x^(-a-1), d3 = -a(a+1)(a+2) x^(-a-3),
  // d5 = -a(a+1)(a+2)(a+3)(a+4) x^(-a-5); Bernoulli weights 1/12, -1/720, 1/30240.
  auto f = [&](double x) { return std::pow(x, -a); };
  auto d1 = [&](double x) { return -a * std::pow(x, -a - 1.0); };
  auto d3 = [&](double x) { return -a * (a + 1) * (a + 2) * std::pow(x, -a - 3.0); };
  auto d5 = [&](double x) { return -a * (a + 1) * (a + 2) * (a + 3) * (a + 4) * std::pow(x, -a - 5.0); };
  return h + integral + (f(lo) + f(hi)) / 2.0 + (d1(hi) - d1(lo)) / 12.0 - (d3(hi) - d3(lo)) / 720.0 +
         (d5(hi) - d5(lo)) / 30240.0;
}

// ln(k) for k = 1..2^16, computed once: the fit's first pass takes the log of every rank, and
// tables of a few thousand ranks are most of a report of 10,000 tables (issue 31). The same
// std::log values, so the same fit.
constexpr uint64_t kLogTable = uint64_t{1} << 16;
double log_of_rank(uint64_t k) {
  static const std::vector<double> table = [] {
    std::vector<double> t(kLogTable + 1, 0.0);
    for (uint64_t i = 1; i <= kLogTable; ++i) t[i] = std::log(static_cast<double>(i));
    return t;
  }();
  return k <= kLogTable ? table[k] : std::log(static_cast<double>(k));
}

}  // namespace

double zipf_share(double alpha, uint64_t ranks, uint64_t k) {
  if (ranks == 0 || k == 0 || k > ranks) return 0.0;
  return std::pow(static_cast<double>(k), -alpha) / harmonic(ranks, alpha);
}

ZipfFit fit_zipf(const std::vector<uint64_t>& c) {
  ZipfFit fit;
  size_t n = c.size();
  while (n > 0 && c[n - 1] == 0) --n;
  if (n < 3) return fit;
  double total = 0.0, slog = 0.0;
  for (size_t i = 0; i < n; ++i) {
    total += static_cast<double>(c[i]);
    slog += static_cast<double>(c[i]) * log_of_rank(i + 1);
  }
  auto ll = [&](double a) { return -a * slog - total * std::log(harmonic(n, a)); };
  double lo = 0.0, hi = 6.0;
  const double g = (std::sqrt(5.0) - 1.0) / 2.0;
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = ll(x1), f2 = ll(x2);
  for (int it = 0; it < 80 && hi - lo > 1e-7; ++it) {
    if (f1 < f2) {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + g * (hi - lo);
      f2 = ll(x2);
    } else {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - g * (hi - lo);
      f1 = ll(x1);
    }
  }
  fit.alpha = (lo + hi) / 2.0;
  const double logh = std::log10(harmonic(n, fit.alpha));
  double se = 0.0;
  int m = 0;
  uint64_t prev = 0;
  for (int i = 0;; ++i) {
    const uint64_t k = static_cast<uint64_t>(std::round(std::pow(10.0, i / 20.0)));
    if (k > n) break;
    if (k == prev) continue;
    prev = k;
    const double obs = std::log10(static_cast<double>(c[k - 1]) / total);
    const double model = -fit.alpha * std::log10(static_cast<double>(k)) - logh;
    se += (obs - model) * (obs - model);
    ++m;
  }
  fit.fit_error = m ? std::sqrt(se / m) : 0.0;
  fit.valid = true;
  return fit;
}

}  // namespace edo::stats
