#include "edo/stats/che_lru.h"

#include <bit>
#include <cmath>

namespace edo::stats {

CheLru che_lru(const std::vector<std::pair<uint64_t, uint64_t>>& count_rows, double lookups, double k, size_t above) {
  CheLru out;
  out.rate.fill(-1.0);
  if (lookups <= 0.0) return out;
  double distinct = 0.0;
  for (const auto& [c, n] : count_rows) distinct += static_cast<double>(n);
  auto in_cache = [&](uint64_t c, double t) { return k >= distinct ? 1.0 : -std::expm1(-static_cast<double>(c) / lookups * t); };
  double t = 0.0;
  if (k < distinct) {  // T by bisection: the rows held grow with T
    auto filled = [&](double x) {
      double f = 0.0;
      for (const auto& [c, n] : count_rows) f += static_cast<double>(n) * in_cache(c, x);
      return f;
    };
    double lo = 0.0, hi = lookups;
    for (int i = 0; i < 200 && filled(hi) < k; ++i) hi *= 2;
    for (int i = 0; i < 64; ++i) {
      const double mid = 0.5 * (lo + hi);
      (filled(mid) < k ? lo : hi) = mid;
    }
    t = 0.5 * (lo + hi);
  }
  std::array<double, CheLru::kClasses> hits{}, refs{};
  for (const auto& [c, n] : count_rows) {
    const size_t cls = static_cast<size_t>(std::bit_width(c));
    if (cls <= above) continue;
    const double reads = static_cast<double>(c) * static_cast<double>(n);
    hits[cls] += reads * in_cache(c, t);
    refs[cls] += reads;
    out.rows_held += static_cast<double>(n) * in_cache(c, t);
  }
  for (size_t c = 0; c < CheLru::kClasses; ++c)
    if (refs[c] > 0) out.rate[c] = hits[c] / refs[c];
  return out;
}

}  // namespace edo::stats
