// Derived statistics: coverage, LRU hit rates, drift, and the summary that bundles them.
#include <algorithm>
#include <cmath>
#include <functional>

#include "edo/stats/union_lru.h"
#include "internal.h"

namespace edo::stats {

namespace {

// 1..n, `per_decade` log-spaced points per decade, plus n itself; ascending, unique.
std::vector<uint64_t> log_points(uint64_t n, int per_decade) {
  std::vector<uint64_t> v;
  if (n == 0) return v;
  for (int i = 0;; ++i) {
    const double x = std::round(std::pow(10.0, static_cast<double>(i) / per_decade));
    if (x >= static_cast<double>(n)) break;
    const uint64_t k = static_cast<uint64_t>(x);
    if (v.empty() || v.back() != k) v.push_back(k);
  }
  v.push_back(n);
  return v;
}

double coverage_from(const std::vector<uint64_t>& prefix, uint64_t lookups, uint64_t k) {
  if (lookups == 0 || prefix.empty()) return 0.0;
  const uint64_t i = std::min<uint64_t>(k, prefix.size() - 1);
  return std::min(1.0, static_cast<double>(prefix[i]) / static_cast<double>(lookups));
}

}  // namespace

double coverage_of_top(const TableAggregate& agg, uint64_t k) {
  if (agg.lookups() == 0 || k == 0) return 0.0;
  std::vector<uint64_t> c = agg.counts_descending();
  uint64_t s = 0;
  for (uint64_t i = 0; i < std::min<uint64_t>(k, c.size()); ++i) s += c[i];
  return std::min(1.0, static_cast<double>(s) / static_cast<double>(agg.lookups()));
}

namespace {
// No cache hits a row's first reference: 1 - unique/lookups bounds every cache size (also for
// merged processes, whose caches are separate: their first references are at least the
// union's). A sampled estimate can overshoot it; it is never reported above it.
double compulsory_ceiling(uint64_t lookups, uint64_t unique) {
  if (lookups == 0) return 1.0;
  return std::max(0.0, 1.0 - static_cast<double>(unique) / static_cast<double>(lookups));
}
double capped_hit_rate(const StackDistanceHistogram& h, double cache_rows, double ceiling) {
  const double t = h.total();
  if (t <= 0.0) return 0.0;
  return std::clamp(h.hits_below(cache_rows) / t, 0.0, ceiling);
}
// capped_hit_rate() at many cache sizes of one histogram: its total summed once, and the hits
// below a size as the running sum of the whole bins below it (a binary search) plus the share
// of the bin it falls in. The same additions in the same order as hits_below(), so the same
// doubles; a summary asks for ~80 sizes, each a walk over up to ~2,000 bins before (most of
// the LRU part of a report's time at 10,000 tables, issue 31).
class HitRates {
 public:
  HitRates(const StackDistanceHistogram& h, double ceiling) : total_(h.total()), ceiling_(ceiling) {
    const auto& bins = h.bins();
    double sum = 0.0;
    for (size_t i = 0; i < bins.size(); ++i) {
      if (bins[i] == 0.0) continue;  // skipped by hits_below() too
      const uint32_t bin = static_cast<uint32_t>(i);
      uint64_t up = StackDistanceHistogram::bin_upper(bin);
      if (h.max_distance() >= StackDistanceHistogram::bin_lower(bin) && h.max_distance() < up) up = h.max_distance() + 1;
      lo_.push_back(static_cast<double>(StackDistanceHistogram::bin_lower(bin)));
      hi_.push_back(static_cast<double>(up));
      value_.push_back(bins[i]);
      before_.push_back(sum);
      sum += bins[i];
    }
    before_.push_back(sum);
  }
  double at(double cache_rows) const {
    if (total_ <= 0.0) return 0.0;
    // Bins whose end is at most cache_rows are whole; the next one may be partly below it.
    const size_t j = static_cast<size_t>(std::upper_bound(hi_.begin(), hi_.end(), cache_rows) - hi_.begin());
    double h = before_[j];
    if (j < hi_.size() && cache_rows > lo_[j]) h += value_[j] * (cache_rows - lo_[j]) / (hi_[j] - lo_[j]);
    return std::clamp(h / total_, 0.0, ceiling_);
  }

 private:
  double total_, ceiling_;
  std::vector<double> lo_, hi_, value_, before_;  // the nonzero bins; before_: sum of those before
};

}  // namespace

std::vector<uint64_t> lru_cache_sizes(uint64_t rows) {
  std::vector<uint64_t> cpts = log_points(rows, 10);
  auto share = [&](uint64_t num, uint64_t den) { return std::max<uint64_t>(1, rows * num / den); };
  for (uint64_t c : {share(1, 100), share(10, 100), share(50, 100), rows}) cpts.push_back(c);
  std::sort(cpts.begin(), cpts.end());
  cpts.erase(std::unique(cpts.begin(), cpts.end()), cpts.end());
  return cpts;
}

double lru_hit_rate(const TableAggregate& agg, double cache_rows) {
  return capped_hit_rate(agg.stack_distances(), cache_rows, compulsory_ceiling(agg.lookups(), agg.unique_rows()));
}

namespace {
// Sums of the k largest counts (all of them when there are at most k): prefix[k] of
// summarize()'s sorted counts, the same integers, without sorting. As in counts_descending(),
// counts below kTallied (most of a skewed table's) are tallied; only the rest are sorted.
class TopSums {
 public:
  void add(uint64_t c) {
    if (c < kTallied) ++tally_[c];
    else large_.push_back(c);
  }
  void done() { std::sort(large_.begin(), large_.end(), std::greater<>()); }
  uint64_t top(uint64_t k) const {
    uint64_t s = 0;
    for (size_t i = 0; i < large_.size() && k > 0; ++i, --k) s += large_[i];
    for (uint64_t c = kTallied; c-- > 0 && k > 0;) {
      const uint64_t n = std::min(k, tally_[c]);
      s += n * c;
      k -= n;
    }
    return s;
  }

 private:
  static constexpr uint64_t kTallied = 256;
  uint64_t tally_[kTallied] = {};
  std::vector<uint64_t> large_;
};
}  // namespace

TableSummary summarize_headline(const TableAggregate& agg) {
  TableSummary s;
  s.rows = agg.rows();
  s.lookups = agg.lookups();
  s.unique_rows = agg.unique_rows();
  s.mode = agg.mode();
  auto share = [&](uint64_t num, uint64_t den) { return std::max<uint64_t>(1, s.rows * num / den); };
  if (s.lookups > 0) {
    TopSums counts;
    agg.for_each_nonzero([&](uint64_t, uint64_t c) { counts.add(c); });
    counts.done();
    auto coverage = [&](uint64_t k) {
      return std::min(1.0, static_cast<double>(counts.top(k)) / static_cast<double>(s.lookups));
    };
    s.coverage_top_10pct = coverage(share(1, 10));
    s.coverage_top_1pct = coverage(share(1, 100));
    s.coverage_top_0_1pct = coverage(share(1, 1000));
  }
  if (!agg.stack_distances().empty()) {
    const HitRates rates(agg.stack_distances(), compulsory_ceiling(s.lookups, s.unique_rows));
    auto hit = [&](uint64_t c) { return rates.at(static_cast<double>(c)); };
    s.lru_hit_rate_1pct = hit(share(1, 100));
    s.lru_hit_rate_10pct = hit(share(10, 100));
    s.lru_hit_rate_50pct = hit(share(50, 100));
    s.lru_hit_rate_100pct = hit(s.rows);
  }
  return s;
}

TableSummary summarize(const TableAggregate& agg) {
  TableSummary s;
  s.rows = agg.rows();
  s.lookups = agg.lookups();
  s.unique_rows = agg.unique_rows();
  s.mode = agg.mode();

  const std::vector<uint64_t> counts = agg.counts_descending();
  std::vector<uint64_t> prefix(counts.size() + 1, 0);  // prefix[k] = sum of top k
  for (size_t i = 0; i < counts.size(); ++i) prefix[i + 1] = prefix[i] + counts[i];
  // num/den of the rows, at least one row: the top 0.1 % of a 300-row table is its hottest
  // row, not nothing; the LRU points below round the same way.
  auto share = [&](uint64_t num, uint64_t den) { return std::max<uint64_t>(1, s.rows * num / den); };
  s.coverage_top_0_1pct = coverage_from(prefix, s.lookups, share(1, 1000));
  s.coverage_top_1pct = coverage_from(prefix, s.lookups, share(1, 100));
  s.coverage_top_10pct = coverage_from(prefix, s.lookups, share(1, 10));
  std::vector<uint64_t> kpts = log_points(s.rows, 10);
  for (uint64_t k : {share(1, 1000), share(1, 100), share(1, 10)})
    if (k <= s.rows) kpts.push_back(k);
  std::sort(kpts.begin(), kpts.end());
  kpts.erase(std::unique(kpts.begin(), kpts.end()), kpts.end());
  for (uint64_t k : kpts)
    s.coverage_curve.push_back({static_cast<double>(k), coverage_from(prefix, s.lookups, k)});

  s.zipf = fit_zipf(counts);

  if (!agg.stack_distances().empty()) {
    const std::vector<uint64_t> cpts = lru_cache_sizes(s.rows);
    const StackDistanceHistogram& h = agg.stack_distances();
    const HitRates rates(h, compulsory_ceiling(s.lookups, s.unique_rows));
    auto hit = [&](uint64_t c) { return rates.at(static_cast<double>(c)); };
    for (uint64_t c : cpts) s.lru_curve.push_back({static_cast<double>(c), hit(c)});
    s.lru_hit_rate_1pct = hit(share(1, 100));
    s.lru_hit_rate_10pct = hit(share(10, 100));
    s.lru_hit_rate_50pct = hit(share(50, 100));
    s.lru_hit_rate_100pct = hit(s.rows);
  }

  const auto& w = agg.windows();
  double sum = 0.0;
  for (size_t i = 1; i < w.size(); ++i) {
    const auto& a = w[i - 1].rows;
    const auto& b = w[i].rows;
    size_t inter = 0, x = 0, y = 0;
    while (x < a.size() && y < b.size()) {
      if (a[x] < b[y]) ++x;
      else if (b[y] < a[x]) ++y;
      else { ++inter; ++x; ++y; }
    }
    const size_t uni = a.size() + b.size() - inter;
    const double j = uni == 0 ? 1.0 : static_cast<double>(inter) / static_cast<double>(uni);
    s.drift.push_back({static_cast<double>(w[i].window_index), j});
    sum += j;
  }
  if (!s.drift.empty()) s.mean_drift_jaccard = sum / static_cast<double>(s.drift.size());
  return s;
}

}  // namespace edo::stats
