#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "test_util.h"

namespace edo::stats {
namespace {

using testing::map_counts;
using testing::zipf_trace;

double analytic_p(uint64_t rows, double a, uint64_t k) {
  double h = 0.0;
  for (uint64_t i = 1; i <= rows; ++i) h += std::pow(static_cast<double>(i), -a);
  return std::pow(static_cast<double>(k), -a) / h;
}

TEST(ZipfGeneratorTest, TopRankFrequenciesMatchAnalytic) {
  for (double a : {0.0, 0.8, 1.05, 1.5}) {
    const uint64_t rows = 10000;
    const size_t n = 2'000'000;
    auto t = zipf_trace(rows, a, n, 5);
    auto m = map_counts(t, rows);
    ZipfGenerator g(rows, a, 5);
    for (uint64_t k : {1, 2, 3, 10, 100}) {
      const double p = analytic_p(rows, a, k);
      const double got = static_cast<double>(m[static_cast<int64_t>(g.row_of_rank(k))]) / n;
      EXPECT_NEAR(got, p, 5 * std::sqrt(p * (1 - p) / n) + 1e-9) << "alpha " << a << " rank " << k;
    }
  }
}

TEST(ZipfGeneratorTest, DeterministicAndBijective) {
  for (uint64_t rows : {1ull, 2ull, 3ull, 1000ull, 4097ull}) {
    ZipfGenerator g(rows, 1.0, 77);
    std::set<uint64_t> seen;
    for (uint64_t k = 1; k <= rows; ++k) {
      const uint64_t r = g.row_of_rank(k);
      ASSERT_LT(r, rows);
      seen.insert(r);
    }
    EXPECT_EQ(seen.size(), rows);
  }
  EXPECT_EQ(zipf_trace(1 << 20, 1.05, 1000, 3), zipf_trace(1 << 20, 1.05, 1000, 3));
  EXPECT_NE(zipf_trace(1 << 20, 1.05, 1000, 3), zipf_trace(1 << 20, 1.05, 1000, 4));
  ZipfGenerator a(1000, 1.0, 1), b(1000, 1.0, 2);
  int same = 0;
  for (uint64_t k = 1; k <= 1000; ++k) same += a.row_of_rank(k) == b.row_of_rank(k);
  EXPECT_LT(same, 20);  // different seeds, different permutations
}

TEST(ZipfFitTest, RecoversTheExponent) {
  for (double a : {0.6, 0.9, 1.05, 1.3}) {
    std::vector<uint64_t> c;
    // Expected counts of a bounded Zipf over 100k ranks, 1e8 lookups.
    const uint64_t n = 100000;
    double h = 0.0;
    for (uint64_t k = 1; k <= n; ++k) h += std::pow(static_cast<double>(k), -a);
    for (uint64_t k = 1; k <= n; ++k) c.push_back(static_cast<uint64_t>(std::llround(1e8 * std::pow(k, -a) / h)) + 1);
    ZipfFit f = fit_zipf(c);
    ASSERT_TRUE(f.valid);
    EXPECT_NEAR(f.alpha, a, 0.01);
    EXPECT_LT(f.fit_error, 0.05);
  }
  EXPECT_FALSE(fit_zipf({5, 3}).valid);
  // Sampled trace: the fit is close and the error is reported.
  auto t = zipf_trace(200000, 1.1, 2'000'000, 8);
  TableIngestor ing(200000, StatsConfig{});
  ing.add(t.data(), t.size());
  ZipfFit f = fit_zipf(ing.pending().counts_descending());
  EXPECT_NEAR(f.alpha, 1.1, 0.1);
  EXPECT_GT(f.fit_error, 0.0);
}

TEST(ZipfFitTest, ModelSharesSumToOneAndFollowThePowerLaw) {
  for (uint64_t n : {uint64_t{10}, uint64_t{5000}, uint64_t{200000}}) {
    double sum = 0.0;
    for (uint64_t k = 1; k <= n; ++k) sum += zipf_share(1.07, n, k);
    EXPECT_NEAR(sum, 1.0, 1e-6) << n;
  }
  EXPECT_NEAR(zipf_share(1.2, 1000, 10) / zipf_share(1.2, 1000, 1), std::pow(10.0, -1.2), 1e-12);
  EXPECT_EQ(zipf_share(1.0, 100, 0), 0.0);
  EXPECT_EQ(zipf_share(1.0, 100, 101), 0.0);
  EXPECT_EQ(zipf_share(1.0, 0, 1), 0.0);
}

// Tables too small for 0.1 % (or 1 %) of their rows to be a whole row: the share is that of
// their hottest row, never 0 %.
TEST(SummaryTest, CoverageOfATinyTableCountsAtLeastOneRow) {
  const uint64_t rows = 300;
  std::vector<int64_t> t{5, 5, 5, 7, 9, 5, 7, 1};
  TableIngestor ing(rows, StatsConfig{});
  ing.add(t.data(), t.size());
  TableSummary s = summarize(ing.take_delta());
  EXPECT_DOUBLE_EQ(s.coverage_top_0_1pct, 4.0 / 8);  // row 5
  EXPECT_DOUBLE_EQ(s.coverage_top_1pct, 7.0 / 8);    // 3 rows: 5, 7 and one of 1 or 9
  EXPECT_DOUBLE_EQ(s.coverage_top_10pct, 1.0);
  EXPECT_EQ(s.coverage_curve.front().x, 1.0);
}

TEST(SummaryTest, CoverageAndCurvesAgainstGroundTruth) {
  const uint64_t rows = 20000;
  auto t = zipf_trace(rows, 1.0, 300000, 12);
  TableIngestor ing(rows, StatsConfig{});
  ing.add(t.data(), t.size());
  TableAggregate a = ing.take_delta();
  auto m = map_counts(t, rows);
  std::vector<uint64_t> c;
  for (auto& [r, n] : m) c.push_back(n);
  std::sort(c.rbegin(), c.rend());
  auto cov = [&](uint64_t k) {
    uint64_t s = 0;
    for (uint64_t i = 0; i < std::min<uint64_t>(k, c.size()); ++i) s += c[i];
    return static_cast<double>(s) / t.size();
  };
  TableSummary s = summarize(a);
  EXPECT_EQ(s.lookups, t.size());
  EXPECT_EQ(s.unique_rows, m.size());
  EXPECT_DOUBLE_EQ(s.coverage_top_0_1pct, cov(20));
  EXPECT_DOUBLE_EQ(s.coverage_top_1pct, cov(200));
  EXPECT_DOUBLE_EQ(s.coverage_top_10pct, cov(2000));
  EXPECT_DOUBLE_EQ(coverage_of_top(a, 77), cov(77));
  for (const auto& p : s.coverage_curve) EXPECT_DOUBLE_EQ(p.y, cov(static_cast<uint64_t>(p.x)));
  EXPECT_DOUBLE_EQ(s.coverage_curve.back().y, 1.0);
  // LRU curve: starts at 1 row, ends at all rows, includes 1/10/50/100 % exactly.
  std::set<double> xs;
  for (const auto& p : s.lru_curve) xs.insert(p.x);
  EXPECT_EQ(*xs.begin(), 1.0);
  for (double x : {200.0, 2000.0, 10000.0, 20000.0}) EXPECT_TRUE(xs.count(x)) << x;
  EXPECT_GT(s.lru_curve.size(), 30u);
  for (size_t i = 1; i < s.lru_curve.size(); ++i) EXPECT_GE(s.lru_curve[i].y, s.lru_curve[i - 1].y - 1e-12);
  EXPECT_DOUBLE_EQ(s.lru_hit_rate_10pct, lru_hit_rate(a, 2000));
  EXPECT_NEAR(s.lru_hit_rate_10pct, static_cast<double>(testing::lru_sim_hits(t, 2000)) / t.size(), 1e-12);
  EXPECT_TRUE(s.zipf.valid);
}

TEST(DriftTest, HotSetsPerWindowAndJaccard) {
  StatsConfig cfg;
  cfg.drift_top_k = 10;
  cfg.max_windows = 3;
  TableIngestor ing(1000, cfg);
  auto window = [&](int first) {  // rows first..first+9 read 50 times each, others once
    std::vector<int64_t> v;
    for (int r = 0; r < 10; ++r)
      for (int k = 0; k < 50; ++k) v.push_back(first + r);
    for (int r = 500; r < 600; ++r) v.push_back(r);
    ing.add(v.data(), v.size());
  };
  window(0);
  ing.close_window();
  window(0);
  (void)ing.take_delta();  // a delta in the middle of a window must not split it
  window(0);
  ing.close_window();
  TableAggregate agg = ing.take_delta();
  window(5);
  ing.close_window();
  window(100);
  ing.close_window();
  window(100);
  ing.close_window();
  ASSERT_TRUE(agg.merge(ing.take_delta()));
  // 5 windows closed, max_windows = 3: the oldest two are dropped.
  ASSERT_EQ(agg.windows().size(), 3u);
  EXPECT_EQ(agg.windows()[0].window_index, 2u);
  EXPECT_EQ(agg.windows()[2].window_index, 4u);
  std::vector<uint64_t> w2 = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  EXPECT_EQ(agg.windows()[0].rows, w2);
  EXPECT_EQ(agg.windows()[0].lookups, 600u);
  TableSummary s = summarize(agg);
  ASSERT_EQ(s.drift.size(), 2u);
  EXPECT_DOUBLE_EQ(s.drift[0].x, 3.0);
  EXPECT_DOUBLE_EQ(s.drift[0].y, 0.0);
  EXPECT_DOUBLE_EQ(s.drift[1].y, 1.0);
  EXPECT_DOUBLE_EQ(s.mean_drift_jaccard, 0.5);
}

TEST(DriftTest, WindowSpanningDeltasKeepsItsCounts) {
  StatsConfig cfg;
  cfg.drift_top_k = 2;
  TableIngestor ing(100, cfg);
  std::vector<int64_t> a = {1, 1, 1, 2, 2, 3}, b = {3, 3, 3};
  ing.add(a.data(), a.size());
  TableAggregate d1 = ing.take_delta();
  ing.add(b.data(), b.size());
  ing.close_window();
  TableAggregate d2 = ing.take_delta();
  ASSERT_TRUE(d1.windows().empty());
  ASSERT_EQ(d2.windows().size(), 1u);
  EXPECT_EQ(d2.windows()[0].rows, (std::vector<uint64_t>{1, 3}));  // 3 read 4 times, 1 three times
  EXPECT_EQ(d2.windows()[0].lookups, 9u);
}

}  // namespace
}  // namespace edo::stats

namespace edo::stats {
namespace {

// The fit's normaliser H(n, a) = sum k^-a is summed for 32 terms and by Euler-Maclaurin beyond
// (zipf_fit.cpp): it must agree with the plain sum (in long double) to 1e-12 for every size
// and every exponent the fit searches, across the switch at 32 terms, and for exponents next
// to 1 (where the tail's integral (hi^(1-a) - lo^(1-a)) / (1-a) cancelled).
TEST(ZipfShare, NormaliserMatchesThePlainSumAcrossSizesAndExponents) {
  for (uint64_t n : {1ull, 2ull, 31ull, 32ull, 33ull, 34ull, 100ull, 4097ull, 123457ull}) {
    for (double a : {0.0, 0.3, 0.999999999999, 1.0, 1.05, 1.5, 2.0, 3.7, 6.0}) {
      long double h = 0;
      for (uint64_t k = n; k >= 1; --k) h += std::pow(static_cast<long double>(k), -static_cast<long double>(a));
      const double want = static_cast<double>(1.0L / h);
      EXPECT_NEAR(zipf_share(a, n, 1), want, 1e-12 * want) << "n " << n << ", a " << a;
    }
  }
}

}  // namespace
}  // namespace edo::stats
