#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "internal.h"
#include "test_util.h"

namespace edo::stats {
namespace {

using testing::lru_sim_hits;
using testing::zipf_trace;

TEST(StackDistanceHistogramTest, BinsAreLogLinearAndContiguous) {
  using H = StackDistanceHistogram;
  for (uint64_t d : std::initializer_list<uint64_t>{0ull, 1ull, 255ull, 256ull, 257ull, 511ull, 512ull, 1000ull, 123456789ull, 1ull << 40,
                     (1ull << 63) + 5, UINT64_MAX}) {
    const uint32_t b = H::bin_of(d);
    EXPECT_LE(H::bin_lower(b), d) << d;
    if (H::bin_upper(b) != UINT64_MAX) {
      EXPECT_LT(d, H::bin_upper(b)) << d;
    }
    if (d >= 256) {
      EXPECT_LT(static_cast<double>(H::bin_upper(b) - H::bin_lower(b)) / H::bin_lower(b), 0.008);
    }
  }
  for (uint32_t b = 0; b < 5000; ++b) EXPECT_EQ(H::bin_upper(b), H::bin_lower(b + 1)) << b;
  for (uint64_t d = 0; d < 5000; ++d) EXPECT_EQ(H::bin_of(d), d < 256 ? d : H::bin_of(d)) << d;
}

// The exact stack's tally bins without a branch: the same bins as the histogram's.
// bin_of (branch-free) against the bins' definition: the distance below 256, above it 256 +
// (o - 8) 128 + the 7 bits after the leading one, o = floor(log2 d).
uint32_t defined_bin(uint64_t d) {
  if (d < 256) return static_cast<uint32_t>(d);
  const uint32_t o = 63u - static_cast<uint32_t>(__builtin_clzll(d));
  return 256 + (o - 8) * 128 + static_cast<uint32_t>((d >> (o - 7)) & 127);
}

TEST(StackDistanceHistogramTest, BinsAreTheDefinedBins) {
  using H = StackDistanceHistogram;
  for (uint64_t d = 0; d < (1u << 16); ++d) ASSERT_EQ(H::bin_of(d), defined_bin(d)) << d;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t d = rng() >> (rng() % 64);
    ASSERT_EQ(H::bin_of(d), defined_bin(d)) << d;
  }
  for (uint32_t o = 0; o < 64; ++o)
    for (uint64_t d : {uint64_t{1} << o, (uint64_t{1} << o) - 1, (uint64_t{1} << o) + 1, ~uint64_t{0} >> o})
      ASSERT_EQ(H::bin_of(d), defined_bin(d)) << d;
}

TEST(StackDistanceHistogramTest, HitsBelowInterpolatesAndColdIsSeparate) {
  StackDistanceHistogram h;
  h.add(0);
  h.add(3, 2.0);
  h.add(1000);  // bin [1000, 1004) but max distance 1000 -> treated as [1000, 1001)
  h.add_cold(5.0);
  EXPECT_DOUBLE_EQ(h.total(), 9.0);
  EXPECT_DOUBLE_EQ(h.cold(), 5.0);
  EXPECT_DOUBLE_EQ(h.hits_below(0.0), 0.0);
  EXPECT_DOUBLE_EQ(h.hits_below(1.0), 1.0);
  EXPECT_DOUBLE_EQ(h.hits_below(3.5), 2.0);
  EXPECT_DOUBLE_EQ(h.hits_below(4.0), 3.0);
  EXPECT_DOUBLE_EQ(h.hits_below(1000.5), 3.5);
  EXPECT_DOUBLE_EQ(h.hits_below(1001.0), 4.0);
  EXPECT_DOUBLE_EQ(h.hits_below(1e18), 4.0);
  StackDistanceHistogram g;
  g.add(2000);
  g.merge(h);
  EXPECT_EQ(g.max_distance(), 2000u);
  EXPECT_DOUBLE_EQ(g.total(), 10.0);
}

// The stack itself against a move-to-front list, on traces whose live ids span several
// 32768-timestamp super blocks (long gaps) and force many compactions.
TEST(MattsonStackTest, DistancesMatchMoveToFrontList) {
  for (const uint64_t ids : {uint64_t{7}, uint64_t{3000}, uint64_t{40000}}) {
    std::mt19937_64 rng(ids);
    detail::MattsonStack stack;
    std::vector<uint64_t> mtf;  // most recent first
    const size_t refs = ids < 1000 ? 20000 : 120000;
    for (size_t i = 0; i < refs; ++i) {
      // half uniform over all ids (long gaps), half from a small hot set (short gaps)
      const uint64_t id = (rng() & 1) ? rng() % ids : rng() % std::min<uint64_t>(ids, 16);
      const auto it = std::find(mtf.begin(), mtf.end(), id);
      const uint64_t want = it == mtf.end() ? detail::MattsonStack::kCold : static_cast<uint64_t>(it - mtf.begin());
      if (it != mtf.end()) mtf.erase(it);
      mtf.insert(mtf.begin(), id);
      ASSERT_EQ(stack.reference(id), want) << "ids " << ids << " reference " << i;
    }
    EXPECT_EQ(stack.distinct(), mtf.size());
  }
}

TEST(ExactLruTest, MatchesListLruSimulation) {
  const uint64_t rows = 3000;
  auto t = zipf_trace(rows, 0.9, 60000, 11);
  StatsConfig cfg;
  TableIngestor ing(rows, cfg);
  for (size_t off = 0; off < t.size(); off += 7000) ing.add(t.data() + off, std::min<size_t>(7000, t.size() - off));
  const TableAggregate& a = ing.pending();
  const auto& h = a.stack_distances();
  EXPECT_DOUBLE_EQ(h.total(), static_cast<double>(t.size()));
  EXPECT_DOUBLE_EQ(h.cold(), static_cast<double>(a.unique_rows()));
  // Bin boundaries give exact answers (no interpolation inside a bin).
  for (size_t c : {1, 2, 3, 5, 10, 50, 100, 255, 256, 300, 512, 1000, 2000, 3000}) {
    EXPECT_DOUBLE_EQ(h.hits_below(static_cast<double>(c)), static_cast<double>(lru_sim_hits(t, c))) << c;
  }
  // Between boundaries the interpolation stays close.
  for (size_t c : {777, 1234, 2999}) {
    const double sim = static_cast<double>(lru_sim_hits(t, c)) / t.size();
    EXPECT_NEAR(lru_hit_rate(a, static_cast<double>(c)), sim, 0.002) << c;
  }
}

TEST(ExactLruTest, FullCacheHitRateIsOneMinusUniqueOverLookups) {
  for (uint64_t rows : std::initializer_list<uint64_t>{1, 7, 1000, 65536}) {
    auto t = zipf_trace(rows, 1.05, 200000, rows);
    TableIngestor ing(rows, StatsConfig{});
    ing.add(t.data(), t.size());
    TableAggregate a = ing.take_delta();
    const double expect = 1.0 - static_cast<double>(a.unique_rows()) / static_cast<double>(a.lookups());
    EXPECT_NEAR(lru_hit_rate(a, static_cast<double>(rows)), expect, 1e-12) << rows;
    TableSummary s = summarize(a);
    EXPECT_NEAR(s.lru_hit_rate_100pct, expect, 1e-12);
    EXPECT_NEAR(s.lru_curve.back().y, expect, 1e-12);
    EXPECT_EQ(s.lru_curve.back().x, static_cast<double>(rows));
  }
}

// SHARDS versus the exact algorithm on the same trace, at the summary's log-spaced points.
// `floor_rows`: only points with cache size >= floor_rows count (SHARDS resolves stack
// distances in steps of 1/R rows; see docs/stats.md).
struct MaeResult {
  double mae_resolved = 0.0, max_resolved = 0.0, mae_all = 0.0;
};

MaeResult shards_mae(uint64_t rows, double alpha, size_t refs, const StatsConfig& sampled_cfg, double floor_rows) {
  auto t = zipf_trace(rows, alpha, refs, 42 + static_cast<uint64_t>(alpha * 100));
  StatsConfig exact_cfg = sampled_cfg;
  exact_cfg.exact_lru_rows_limit = rows;
  TableIngestor exact(rows, exact_cfg), shards(rows, sampled_cfg);
  for (size_t off = 0; off < t.size(); off += 65536) {
    const size_t n = std::min<size_t>(65536, t.size() - off);
    exact.add(t.data() + off, n);
    shards.add(t.data() + off, n);
  }
  TableAggregate e = exact.take_delta(), s = shards.take_delta();
  const TableSummary se = summarize(e), ss = summarize(s);
  EXPECT_EQ(se.lru_curve.size(), ss.lru_curve.size());
  MaeResult r;
  int n_res = 0;
  for (size_t i = 0; i < se.lru_curve.size(); ++i) {
    const double err = std::fabs(se.lru_curve[i].y - ss.lru_curve[i].y);
    if (std::getenv("EDO_SHARDS_DEBUG"))
      std::printf("  c=%.0f exact %.4f shards %.4f\n", se.lru_curve[i].x, se.lru_curve[i].y, ss.lru_curve[i].y);
    r.mae_all += err;
    if (se.lru_curve[i].x >= floor_rows) {
      r.mae_resolved += err;
      r.max_resolved = std::max(r.max_resolved, err);
      ++n_res;
    }
  }
  r.mae_all /= static_cast<double>(se.lru_curve.size());
  if (n_res) r.mae_resolved /= n_res;
  return r;
}

class ShardsTest : public ::testing::TestWithParam<double> {};

TEST_P(ShardsTest, MeanAbsoluteErrorVersusExactAtMost001) {
  StatsConfig cfg;  // defaults: SHARDS above exact_lru_rows_limit
  cfg.exact_lru_distinct_limit = 0;  // from the first reference (no exact prefix)
  if (const char* r = std::getenv("EDO_SHARDS_RATE")) cfg.shards_rate = std::atof(r);
  ASSERT_LT(cfg.exact_lru_rows_limit, 1u << 20);
  const double floor_rows = 10.0 / cfg.shards_rate;
  const MaeResult r = shards_mae(1u << 20, GetParam(), 3'000'000, cfg, floor_rows);
  std::printf("SHARDS alpha %.2f rate %.4f: MAE %.5f (max %.5f) at cache >= %.0f rows; MAE over all points %.5f\n",
              GetParam(), cfg.shards_rate, r.mae_resolved, r.max_resolved, floor_rows, r.mae_all);
  EXPECT_LE(r.mae_all, 0.01);       // every point of the curve, from 1 row to all rows
  EXPECT_LE(r.mae_resolved, 0.01);  // and the part plain SHARDS resolves on its own
}

INSTANTIATE_TEST_SUITE_P(Zipf, ShardsTest, ::testing::Values(0.8, 1.05, 1.2));

}  // namespace
}  // namespace edo::stats
