#include "edo/gui/tables/table_detail.h"

#include <algorithm>
#include <cmath>

#include "edo/gui/tables/table_fields.h"

namespace edo::gui {

namespace {

// Ascending unique integers round(10^(i / per_decade)) in [1, n], plus n.
std::vector<uint64_t> log_edges(uint64_t n, int per_decade) {
  std::vector<uint64_t> v;
  for (int i = 0;; ++i) {
    const double x = std::round(std::pow(10.0, static_cast<double>(i) / per_decade));
    if (x >= static_cast<double>(n)) break;
    const auto k = static_cast<uint64_t>(x);
    if (v.empty() || v.back() != k) v.push_back(k);
  }
  if (n > 0) v.push_back(n);
  return v;
}

}  // namespace

TableDetail build_table_detail(const model::TableView& table, size_t top_rows) {
  TableDetail d;
  const stats::TableSummary& s = table.summary;
  d.name = table.name;
  d.rows = table.rows;
  d.lookups = s.lookups;
  d.unique_rows = s.unique_rows;
  d.sketched = is_sketched(table);
  d.row_bytes = row_bytes(table);

  const std::vector<uint64_t> counts = table.aggregate.counts_descending();
  d.ranked_rows = counts.size();
  std::vector<uint64_t> prefix(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i) prefix[i + 1] = prefix[i] + counts[i];
  const double counted = static_cast<double>(prefix.back());

  // Rank-frequency: bins [edge_i, edge_{i+1}) over ranks 1..n; the last bin includes n.
  d.zipf_valid = s.zipf.valid;
  d.zipf_alpha = s.zipf.alpha;
  d.zipf_fit_error = s.zipf.fit_error;
  const uint64_t n = counts.size();
  std::vector<uint64_t> edges = log_edges(n, 20);
  const double inv_h = d.zipf_valid ? stats::zipf_share(s.zipf.alpha, n, 1) : 0.0;  // 1 / H(n, a)
  for (size_t i = 0; i < edges.size(); ++i) {
    const uint64_t lo = edges[i];
    const uint64_t hi = i + 1 < edges.size() ? edges[i + 1] - 1 : n;  // inclusive
    if (hi < lo) continue;
    const double mean = static_cast<double>(prefix[hi] - prefix[lo - 1]) / static_cast<double>(hi - lo + 1);
    const double mid = std::sqrt(static_cast<double>(lo) * static_cast<double>(hi));
    d.rank_frequency.push_back({mid, mean});
    if (d.zipf_valid) {
      // The model's mean over the same ranks, so the line and the points compare like for
      // like: k^-a / H summed exactly over narrow bins, integrated over wide ones.
      const double a = s.zipf.alpha;
      const uint64_t width = hi - lo + 1;
      double sum = 0.0;
      if (width <= 32) {
        for (uint64_t k = lo; k <= hi; ++k) sum += std::pow(static_cast<double>(k), -a);
      } else {
        const double x0 = static_cast<double>(lo) - 0.5, x1 = static_cast<double>(hi) + 0.5;
        sum = std::fabs(a - 1.0) < 1e-9 ? std::log(x1 / x0) : (std::pow(x1, 1.0 - a) - std::pow(x0, 1.0 - a)) / (1.0 - a);
      }
      d.zipf_fit.push_back({mid, counted * inv_h * sum / static_cast<double>(width)});
    }
  }

  // Coverage at 50 points per decade of rows, from the same prefix sums as edo report.
  if (d.rows > 0 && d.lookups > 0) {
    // Plus the report's own points (top 0.1 %, 1 %, 10 % of rows, at least one row), so the
    // readout there is the number `edo report` prints.
    std::vector<uint64_t> ks = log_edges(d.rows, 50);
    for (uint64_t per_mille : {1, 10, 100}) ks.push_back(std::max<uint64_t>(1, d.rows * per_mille / 1000));
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    for (uint64_t k : ks) {
      const uint64_t i = std::min<uint64_t>(k, n);
      const double y = std::min(1.0, static_cast<double>(prefix[i]) / static_cast<double>(d.lookups));
      d.coverage.push_back({static_cast<double>(k) / static_cast<double>(d.rows), y});
    }
  }
  for (const auto& p : s.lru_curve) d.lru.push_back({p.x, p.y});
  if (table.union_lru && table.union_lru->available)
    for (const auto& p : table.union_lru->curve) d.lru_union.push_back({p.x, p.y});
  for (const auto& p : s.drift) d.drift.push_back({p.x, p.y});
  d.mean_drift = s.mean_drift_jaccard;
  d.top_rows = table.aggregate.top_rows(top_rows);
  return d;
}

uint64_t rows_in_share(const TableDetail& detail, double row_share) {
  const double k = std::floor(row_share * static_cast<double>(detail.rows) + 1e-9);
  return std::clamp<uint64_t>(static_cast<uint64_t>(std::max(0.0, k)), 1, std::max<uint64_t>(detail.rows, 1));
}

double coverage_at(const TableDetail& detail, double row_share) {
  const auto& c = detail.coverage;
  if (c.empty() || row_share <= 0.0) return 0.0;
  // The top floor(share x rows) rows, at least one (as `edo report` counts them).
  row_share = static_cast<double>(rows_in_share(detail, row_share)) / static_cast<double>(detail.rows);
  if (row_share <= c.front().x) return c.front().y;
  if (row_share >= c.back().x) return c.back().y;
  auto it = std::lower_bound(c.begin(), c.end(), row_share, [](const XY& p, double x) { return p.x < x; });
  const XY& b = *it;
  const XY& a = *(it - 1);
  const double t = (std::log(row_share) - std::log(a.x)) / (std::log(b.x) - std::log(a.x));
  return a.y + t * (b.y - a.y);
}

}  // namespace edo::gui
