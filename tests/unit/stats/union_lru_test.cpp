// The union (model-parallel) LRU curve of a table read on several ranks (edo/stats/union_lru.h,
// issue 22): answers known in advance, interleaving by progress, SHARDS estimates against an
// exact simulation of the lock-step union, and the cases where it is unavailable.
#include "edo/stats/union_lru.h"

#include <gtest/gtest.h>

#include <map>
#include <unordered_map>
#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::stats {
namespace {

// One rank's whole stream ingested as the tracer does (deltas taken every `every` references)
// and merged in order, as the collector does.
TableAggregate ingest(const std::vector<int64_t>& stream, uint64_t rows, const StatsConfig& cfg, size_t every = 4096) {
  TableIngestor ing(rows, cfg);
  TableAggregate total;
  bool first = true;
  for (size_t off = 0; off < stream.size(); off += every) {
    ing.add(stream.data() + off, std::min(every, stream.size() - off));
    TableAggregate d = ing.take_delta();
    if (first) total = std::move(d);
    else EXPECT_TRUE(total.merge(d));
    first = false;
  }
  return total;
}

TableAggregate merged_of(const std::vector<const TableAggregate*>& parts) {
  TableAggregate m = *parts[0];
  for (size_t i = 1; i < parts.size(); ++i) EXPECT_TRUE(m.merge(*parts[i]));
  return m;
}

// The lock-step union of whole streams: ascending i / n_k, ties by rank (what the tests assume
// independently of the code under test: a merge of the streams by cross products).
std::vector<int64_t> lockstep_union(const std::vector<std::vector<int64_t>>& streams) {
  std::vector<size_t> at(streams.size(), 0);
  std::vector<int64_t> out;
  for (;;) {
    int best = -1;
    for (size_t k = 0; k < streams.size(); ++k) {
      if (at[k] == streams[k].size()) continue;
      if (best < 0) {
        best = static_cast<int>(k);
        continue;
      }
      const auto& b = streams[size_t(best)];
      // at[k] / n_k < at[best] / n_best
      if (static_cast<double>(at[k]) * static_cast<double>(b.size()) <
          static_cast<double>(at[size_t(best)]) * static_cast<double>(streams[k].size()))
        best = static_cast<int>(k);
    }
    if (best < 0) break;
    out.push_back(streams[size_t(best)][at[size_t(best)]++]);
  }
  return out;
}

// Exact LRU hit rate of `stream` for a cache of k rows: a reference hits iff fewer than k
// distinct other rows were read since the row's previous reference (list simulation).
double exact_lru(const std::vector<int64_t>& stream, uint64_t k) {
  uint64_t hits = 0;
  std::map<uint64_t, int64_t> by_time;  // the cache, least recently read first
  std::unordered_map<int64_t, uint64_t> time_of;
  uint64_t t = 0;
  for (int64_t r : stream) {
    auto it = time_of.find(r);
    if (it != time_of.end()) {
      ++hits;
      by_time.erase(it->second);
    } else if (by_time.size() == k) {
      time_of.erase(by_time.begin()->second);
      by_time.erase(by_time.begin());
    }
    by_time[t] = r;
    time_of[r] = t;
    ++t;
  }
  return stream.empty() ? 0.0 : static_cast<double>(hits) / static_cast<double>(stream.size());
}

double at(const std::vector<CurvePoint>& curve, double x) {
  for (const auto& p : curve)
    if (p.x == x) return p.y;
  ADD_FAILURE() << "no point at " << x;
  return -1;
}
double at(const UnionLru& u, uint64_t k) { return u.hit_rate(k); }

TEST(UnionLru, InterleavesByProgressTiesToTheLowerRank) {
  OrderedSample a, b;
  a.begin = 0;
  a.end = 4;
  b.begin = 10;  // a stretch that starts later: progress is relative to its own begin
  b.end = 12;
  for (uint64_t p = 0; p < 4; ++p) a.refs.push_back({p, 100 + p});
  for (uint64_t p = 10; p < 12; ++p) b.refs.push_back({p, 200 + p});
  // a at 0, 1/4, 2/4, 3/4; b at 0, 1/2: a0 b0 (tie: a first) a1 a2 b1 (tie) a3.
  const auto order = interleave_by_progress({a, b});
  const std::vector<uint64_t> rows{100, 210, 101, 102, 211, 103};
  ASSERT_EQ(order.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(order[i].ref.row, rows[i]) << i;
  EXPECT_EQ(order[1].stream, 1u);
}

// (a) Rank 0 reads the even rows of 0..999 cyclically, rank 1 the odd ones. Each rank's cache of
// 500 rows holds its whole cycle: every non-compulsory reference hits. The union in lock-step is
// 0, 1, 2, ..., 999 cyclically: an LRU of 500 rows never hits, one of 1000 rows always does.
TEST(UnionLru, EvenAndOddRowsPerRankHitAloneAndMissTogether) {
  const uint64_t rows = 1000;
  std::vector<int64_t> even, odd;
  for (int cycle = 0; cycle < 10; ++cycle)
    for (int64_t r = 0; r < 1000; r += 2) {
      even.push_back(r);
      odd.push_back(r + 1);
    }
  const StatsConfig cfg;
  const TableAggregate a = ingest(even, rows, cfg, 777), b = ingest(odd, rows, cfg, 1000);
  const TableAggregate m = merged_of({&a, &b});
  // The data-parallel (merged histograms) curve: 4500 of 5000 references per rank hit at 500.
  const TableSummary dp = summarize(m);
  EXPECT_NEAR(at(dp.lru_curve, 500), 0.9, 1e-12);
  EXPECT_NEAR(dp.lru_hit_rate_50pct, 0.9, 1e-12);
  const UnionLru u = union_lru({{0, a.ordered_sample()}, {1, b.ordered_sample()}}, m);
  ASSERT_TRUE(u.available) << u.why_not;
  EXPECT_EQ(u.ranks, 2u);
  EXPECT_EQ(u.rate, 1.0);
  EXPECT_EQ(u.sampled_refs, 10000u);
  EXPECT_EQ(u.lookups, 10000u);
  EXPECT_NEAR(u.ceiling, 0.9, 1e-12);
  EXPECT_EQ(at(u.curve, 500), 0.0);
  EXPECT_EQ(u.hit_rate_50pct, 0.0);
  EXPECT_EQ(u.hit_rate_10pct, 0.0);
  EXPECT_EQ(at(u, 999), 0.0) << "the cyclic union's distance is 999 rows";
  EXPECT_NEAR(u.hit_rate_100pct, 0.9, 1e-12);
  ASSERT_EQ(u.curve.size(), dp.lru_curve.size()) << "the same cache sizes as the per-rank curve";
  for (size_t i = 0; i < u.curve.size(); ++i) EXPECT_EQ(u.curve[i].x, dp.lru_curve[i].x);
  // And it is the exact LRU of the lock-step union.
  const std::vector<int64_t> both = lockstep_union({even, odd});
  for (uint64_t k : {1u, 10u, 500u, 999u, 1000u}) EXPECT_NEAR(at(u, k), exact_lru(both, k), 1e-12) << k;
}

// (b) Both ranks read rows 0..99 in the same order, 1000 references each. In lock-step rank 1
// reads each row right after rank 0 did (distance 0: an LRU of 1 row hits) and rank 0 reads it
// again 99 other rows later. So the union hits 1000 of 2000 references (50 %) for 1..99 rows
// and 2000 - 100 cold = 95 % from 100 rows on; each rank alone: 0 below 100 rows, then 90 %.
TEST(UnionLru, SameRowsInTheSameOrderHitBackToBackInTheUnion) {
  const uint64_t rows = 100;
  std::vector<int64_t> s;
  for (int i = 0; i < 1000; ++i) s.push_back(i % 100);
  const StatsConfig cfg;
  const TableAggregate a = ingest(s, rows, cfg, 300), b = ingest(s, rows, cfg, 64);
  const TableAggregate m = merged_of({&a, &b});
  const TableSummary dp = summarize(m);
  EXPECT_EQ(dp.lru_hit_rate_1pct, 0.0);
  EXPECT_EQ(dp.lru_hit_rate_50pct, 0.0);
  EXPECT_NEAR(dp.lru_hit_rate_100pct, 0.9, 1e-12);
  const UnionLru u = union_lru({{0, a.ordered_sample()}, {1, b.ordered_sample()}}, m);
  ASSERT_TRUE(u.available) << u.why_not;
  for (const auto& p : u.curve) EXPECT_NEAR(p.y, p.x < 100 ? 0.5 : 0.95, 1e-12) << p.x << " rows";
  EXPECT_NEAR(u.hit_rate_1pct, 0.5, 1e-12);
  EXPECT_NEAR(u.hit_rate_10pct, 0.5, 1e-12);
  EXPECT_NEAR(u.hit_rate_50pct, 0.5, 1e-12);
  EXPECT_NEAR(u.hit_rate_100pct, 0.95, 1e-12);
}

// Streams too long for the sample's bound: each rank's sample is lowered to its own threshold
// (the longer stream's lower), the union at the lowest one. The SHARDS estimate of the union
// of a long and a short stream (two references of rank 0 per one of rank 1) against the exact
// LRU of the lock-step union, within the SHARDS tolerance of the held-out replay (0.02).
TEST(UnionLru, SampledStreamsOfUnequalLengthsMatchTheExactLockStepUnion) {
  const uint64_t rows = 20000;
  StatsConfig cfg;
  cfg.ordered_sample_refs = 1 << 14;
  ZipfGenerator g0(rows, 0.9, 11), g1(rows, 0.9, 12);  // different permutations: other hot rows
  std::vector<int64_t> s0(200000), s1(100000);
  g0.fill(s0.data(), s0.size());
  g1.fill(s1.data(), s1.size());
  const TableAggregate a = ingest(s0, rows, cfg), b = ingest(s1, rows, cfg);
  ASSERT_LT(a.ordered_sample()->threshold, b.ordered_sample()->threshold) << "the test needs different thresholds";
  const TableAggregate m = merged_of({&a, &b});
  const UnionLru u = union_lru({{0, a.ordered_sample()}, {1, b.ordered_sample()}}, m);
  ASSERT_TRUE(u.available) << u.why_not;
  EXPECT_LT(u.rate, 0.25);
  EXPECT_EQ(u.lookups, 300000u);
  const std::vector<int64_t> both = lockstep_union({s0, s1});
  for (uint64_t k : {200u, 1000u, 2000u, 5000u, 10000u}) {
    const double sim = exact_lru(both, k);
    EXPECT_NEAR(at(u, k), sim, 0.02) << k << " rows, rate " << u.rate;
  }
  // The union of two streams over different hot rows needs a larger cache than each alone.
  const TableSummary dp = summarize(m);
  EXPECT_LT(u.hit_rate_1pct, dp.lru_hit_rate_1pct - 0.03);
}

TEST(UnionLru, IsUnavailableWhenARankHasNoOrderedSampleOrAnInvalidOne) {
  const uint64_t rows = 100;
  std::vector<int64_t> s{1, 2, 3, 1, 2, 3};
  const TableAggregate a = ingest(s, rows, StatsConfig{}), b = ingest(s, rows, StatsConfig{});
  const TableAggregate m = merged_of({&a, &b});
  UnionLru u = union_lru({{0, a.ordered_sample()}, {3, nullptr}}, m);
  EXPECT_FALSE(u.available);
  EXPECT_NE(u.why_not.find("rank 3's recording has no ordered sample"), std::string::npos) << u.why_not;
  EXPECT_TRUE(u.curve.empty());
  // Two processes' streams merged are not one order (their sample is marked invalid).
  ASSERT_FALSE(m.ordered_sample()->valid);
  u = union_lru({{0, a.ordered_sample()}, {5, m.ordered_sample()}}, m);
  EXPECT_FALSE(u.available);
  EXPECT_NE(u.why_not.find("rank 5's ordered sample is not one stream's order"), std::string::npos) << u.why_not;
}

}  // namespace
}  // namespace edo::stats
