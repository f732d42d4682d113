// iid_aggregate(): the statistics of a long IID stream computed from drawn counts and drawn
// sequences, against the same stream drawn lookup by lookup through a TableIngestor.
#include "edo/stats/iid_workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::stats {
namespace {

// A bounded Zipf(alpha) table as `edo synth` draws it: ranks mapped through the generator's
// permutation, the likeliest first.
struct ZipfRows {
  std::vector<uint64_t> ids;
  std::vector<double> probs;
};
ZipfRows zipf_rows(uint64_t rows, double alpha, uint64_t seed) {
  ZipfGenerator gen(rows, alpha, seed);
  ZipfRows z;
  double sum = 0;
  for (uint64_t k = 1; k <= rows; ++k) sum += std::pow(static_cast<double>(k), -alpha);
  for (uint64_t k = 1; k <= rows; ++k) {
    z.ids.push_back(gen.row_of_rank(k));
    z.probs.push_back(std::pow(static_cast<double>(k), -alpha) / sum);
  }
  return z;
}

// The streamed path of `edo synth`: every lookup drawn and ingested, a window every `window`.
TableAggregate streamed(uint64_t rows, double alpha, uint64_t seed, uint64_t lookups, uint64_t window) {
  ZipfGenerator gen(rows, alpha, seed);
  TableIngestor ing(rows, StatsConfig{});
  std::vector<int64_t> buf(window);
  for (uint64_t done = 0; done < lookups;) {
    const size_t n = static_cast<size_t>(std::min(window, lookups - done));
    gen.fill(buf.data(), n);
    ing.add(buf.data(), n);
    ing.close_window();
    done += n;
  }
  return ing.take_delta();
}

TableAggregate computed(uint64_t rows, double alpha, uint64_t seed, uint64_t lookups, uint64_t window) {
  const ZipfRows z = zipf_rows(rows, alpha, seed);
  IidStream s{lookups, window, iid_drawn_lookups(rows)};
  EXPECT_TRUE(iid_aggregate_applies(rows, s, StatsConfig{}));
  return iid_aggregate(rows, StatsConfig{}, z.ids, z.probs, s, seed);
}

double hit_rate(const TableAggregate& a, double cache) { return a.stack_distances().hits_below(cache) / static_cast<double>(a.lookups()); }

TEST(IidWorkload, AliasTableDrawsEachIndexWithItsProbability) {
  const std::vector<double> p = {0.5, 0.25, 0.125, 0.0625, 0.0625, 0.0};
  AliasTable alias(p);
  std::vector<uint64_t> n(p.size(), 0);
  const uint64_t draws = 1 << 22;
  uint64_t x = 12345;
  for (uint64_t i = 0; i < draws; ++i) {
    x += 0x9e3779b97f4a7c15ULL;
    uint64_t z = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    ++n[alias.draw(z ^ (z >> 31))];
  }
  EXPECT_EQ(n[5], 0u);  // probability 0: never
  for (size_t k = 0; k + 1 < p.size(); ++k) {
    const double sd = std::sqrt(draws * p[k] * (1 - p[k]));
    EXPECT_NEAR(static_cast<double>(n[k]), draws * p[k], 5 * sd) << k;
  }
}

// Binomial draws against the exact distribution: mean and variance within 5 standard errors,
// and for small n the frequency of every value (a chi-square of the binned counts, p ~ 1e-6).
TEST(IidWorkload, BinomialDrawsFollowTheBinomialDistribution) {
  struct Case {
    uint64_t n;
    double p;
  };
  // Waiting times (n p < 10), BTRS, p > 1/2 by symmetry, and a huge n.
  for (const Case c : {Case{50, 0.1}, Case{40, 0.02}, Case{1000, 0.3}, Case{120, 0.5}, Case{200, 0.9}, Case{1'000'000'000, 0.25}}) {
    const int draws = 200000;
    uint64_t state = 77;
    std::vector<uint64_t> x(draws);
    double sum = 0, sum2 = 0;
    for (auto& v : x) {
      v = binomial_draw(c.n, c.p, state);
      ASSERT_LE(v, c.n);
      sum += static_cast<double>(v);
    }
    const double mean = sum / draws;
    for (uint64_t v : x) sum2 += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
    const double var = c.n * c.p * (1 - c.p);
    EXPECT_NEAR(mean, c.n * c.p, 5 * std::sqrt(var / draws)) << c.n << " " << c.p;
    // The sample variance's standard error is about var * sqrt(2 / draws) (near-normal counts).
    EXPECT_NEAR(sum2 / (draws - 1), var, 5 * var * std::sqrt(2.0 / draws) + 0.01) << c.n << " " << c.p;
    if (c.n > 1000) continue;
    std::vector<double> seen(c.n + 1, 0.0);
    for (uint64_t v : x) seen[v] += 1;
    double chi2 = 0;
    int cells = 0;
    for (uint64_t k = 0; k <= c.n; ++k) {
      const double logpmf = std::lgamma(c.n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(c.n - k + 1.0) +
                            k * std::log(c.p) + (c.n - k) * std::log1p(-c.p);
      const double expected = draws * std::exp(logpmf);
      if (expected < 20) continue;  // the tails: too few to test one value at a time
      chi2 += (seen[k] - expected) * (seen[k] - expected) / expected;
      ++cells;
    }
    // chi-square with `cells` degrees of freedom: mean cells, sd sqrt(2 cells); 6 sd above is p < 1e-6.
    EXPECT_LT(chi2, cells + 6 * std::sqrt(2.0 * cells)) << c.n << " " << c.p << " over " << cells << " values";
  }
}

// What holds exactly, whatever the draws: the totals the streamed path would also have.
TEST(IidWorkload, TotalsAreExactAndConsistent) {
  const uint64_t rows = 1000, lookups = 3'000'000, window = 1 << 20;
  const TableAggregate a = computed(rows, 1.1, 9, lookups, window);
  EXPECT_EQ(a.mode(), CountMode::kExact);
  EXPECT_EQ(a.lookups(), lookups);
  uint64_t sum = 0, nonzero = 0;
  std::map<uint64_t, uint64_t> counts;
  a.for_each_nonzero([&](uint64_t r, uint64_t c) {
    sum += c;
    ++nonzero;
    counts[r] = c;
  });
  EXPECT_EQ(sum, lookups);
  EXPECT_EQ(nonzero, a.unique_rows());
  // Every lookup is in the histogram: the first read of each row read cold, the rest hits.
  const auto& h = a.stack_distances();
  EXPECT_EQ(h.total(), static_cast<double>(lookups));
  EXPECT_EQ(h.cold(), static_cast<double>(nonzero));
  EXPECT_EQ(h.hits_below(static_cast<double>(h.max_distance() + 1)), static_cast<double>(lookups - nonzero));
  EXPECT_LT(h.max_distance(), rows);
  for (double b : h.bins()) EXPECT_EQ(b, std::floor(b));  // whole references
  // Drift windows: one per window of lookups, the last one shorter.
  ASSERT_EQ(a.windows().size(), 3u);
  EXPECT_EQ(a.windows()[2].lookups, lookups - 2 * window);
  for (const auto& w : a.windows()) EXPECT_TRUE(std::is_sorted(w.rows.begin(), w.rows.end()));
  // The ordered sample: the whole stream, every reference of the sampled rows (so each sampled
  // row's references in it number its count), at distinct ascending positions.
  const OrderedSample* s = a.ordered_sample();
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->valid);
  EXPECT_EQ(s->begin, 0u);
  EXPECT_EQ(s->end, lookups);
  EXPECT_LE(s->refs.size(), StatsConfig{}.ordered_sample_refs);
  EXPECT_GT(s->refs.size(), StatsConfig{}.ordered_sample_refs / 2);  // the threshold halves at most once too far
  std::map<uint64_t, uint64_t> in_sample;
  for (size_t i = 0; i < s->refs.size(); ++i) {
    if (i) {
      EXPECT_LT(s->refs[i - 1].position, s->refs[i].position);
    }
    EXPECT_LT(s->refs[i].position, lookups);
    ++in_sample[s->refs[i].row];
  }
  for (const auto& [r, c] : counts)
    EXPECT_EQ(in_sample.count(r) ? in_sample[r] : 0, OrderedSample::keeps(r, s->threshold) ? c : 0) << r;
  // The sampler would end at this threshold: the sampled references fit, twice the threshold's do not.
  uint64_t at_double = 0;
  for (const auto& [r, c] : counts) at_double += OrderedSample::keeps(r, s->threshold * 2) ? c : 0;
  if (s->threshold < OrderedSample::kFullThreshold) {
    EXPECT_GT(at_double, StatsConfig{}.ordered_sample_refs);
  }
  const TableAggregate again = computed(rows, 1.1, 9, lookups, window);
  EXPECT_EQ(again.serialize(), a.serialize());  // one seed, one result
  EXPECT_NE(computed(rows, 1.1, 10, lookups, window).serialize(), a.serialize());
}

// The computed statistics against the streamed ones, on the same workload, within sampling
// error bounds: per-row counts (binomial), and the LRU hit-rate curve (the spread of its
// values over independent seeds of both paths).
TEST(IidWorkload, AgreesWithTheStreamedPathInDistribution) {
  const uint64_t rows = 500, lookups = 1'000'000, window = 1 << 18;
  const double alpha = 1.05;
  const int reps = 12;
  const std::vector<double> caches = {1, 5, 25, 50, 100, 250, 400, 499};
  std::vector<std::vector<double>> hs(caches.size()), hc(caches.size());
  for (int rep = 0; rep < reps; ++rep) {
    const uint64_t seed = 100 + static_cast<uint64_t>(rep);
    const TableAggregate s = streamed(rows, alpha, seed, lookups, window);
    const TableAggregate c = computed(rows, alpha, seed, lookups, window);
    ASSERT_EQ(s.lookups(), c.lookups());
    EXPECT_EQ(s.stack_distances().total(), c.stack_distances().total());
    EXPECT_EQ(s.windows().size(), c.windows().size());
    EXPECT_EQ(s.unique_rows(), c.unique_rows());  // every row is read (at least ~120 times each)
    if (rep == 0) {
      // Per row: the difference of two independent Binomial(lookups, p) counts has standard
      // deviation sqrt(2 lookups p (1 - p)); 5.5 of them, for 500 rows, fail by chance with
      // probability 500 x 3.8e-8.
      const ZipfRows z = zipf_rows(rows, alpha, seed);
      for (size_t k = 0; k < z.ids.size(); ++k) {
        const double p = z.probs[k];
        const double sd = std::sqrt(2.0 * lookups * p * (1 - p));
        EXPECT_NEAR(static_cast<double>(s.count(z.ids[k])), static_cast<double>(c.count(z.ids[k])), 5.5 * sd + 1)
            << "rank " << k + 1;
      }
    }
    for (size_t i = 0; i < caches.size(); ++i) {
      hs[i].push_back(hit_rate(s, caches[i]));
      hc[i].push_back(hit_rate(c, caches[i]));
    }
  }
  // Welch's t on the means over the seeds: 4.5 standard errors (two-sided p ~ 2e-4 at 22
  // degrees of freedom, 8 cache sizes) bound the difference of two estimates of one curve.
  auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); };
  auto var = [&](const std::vector<double>& v) {
    const double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return s / static_cast<double>(v.size() - 1);
  };
  for (size_t i = 0; i < caches.size(); ++i) {
    const double se = std::sqrt(var(hs[i]) / reps + var(hc[i]) / reps);
    EXPECT_NEAR(mean(hc[i]), mean(hs[i]), 4.5 * se + 1e-9) << "cache of " << caches[i] << " rows; streamed sd "
                                                           << std::sqrt(var(hs[i])) << ", computed sd " << std::sqrt(var(hc[i]));
    std::printf("cache %4.0f rows: streamed %.5f (sd %.5f), computed %.5f (sd %.5f)\n", caches[i], mean(hs[i]),
                std::sqrt(var(hs[i])), mean(hc[i]), std::sqrt(var(hc[i])));
  }
}

TEST(IidWorkload, AppliesOnlyToLongStreamsOverSmallExactTables) {
  const StatsConfig c;
  auto applies = [&](uint64_t rows, uint64_t lookups, uint64_t window) {
    return iid_aggregate_applies(rows, IidStream{lookups, window, iid_drawn_lookups(rows)}, c);
  };
  EXPECT_TRUE(applies(2000, 4'000'000, 1 << 20));
  EXPECT_FALSE(applies(2000, 100'000, 1 << 20));       // under 64 lookups a row: streamed
  EXPECT_FALSE(applies(100, 10'000, 1 << 20));         // shorter than 4x the drawn sequence
  EXPECT_FALSE(applies(1 << 20, 1ull << 30, 1 << 20));  // above the exact stack's rows
  EXPECT_FALSE(applies(2000, 4'000'000, 64));          // a window every 64 lookups: counting is cheaper
  StatsConfig sketch;
  sketch.exact_rows_limit = 1000;
  EXPECT_FALSE(iid_aggregate_applies(2000, IidStream{4'000'000, 1 << 20, iid_drawn_lookups(2000)}, sketch));
}

}  // namespace
}  // namespace edo::stats
