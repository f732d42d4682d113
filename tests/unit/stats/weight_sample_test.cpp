// Which rows a weight snapshot keeps: the hottest rows, then a uniform sample of the rest.
#include "edo/stats/weight_sample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace edo::stats {
namespace {

TableAggregate counted(uint64_t rows, const std::vector<int64_t>& reads, uint64_t exact_limit = uint64_t{1} << 26) {
  StatsConfig cfg;
  cfg.exact_rows_limit = exact_limit;
  TableIngestor ing(rows, cfg);
  ing.add(reads.data(), reads.size());
  return ing.take_delta();
}

TEST(WeightSample, SmallTableIsKeptWhole) {
  const auto s = choose_snapshot_rows(counted(10, {1, 1, 2}), 10, 64, 1);
  EXPECT_EQ(s.hot.size(), 10u);
  EXPECT_TRUE(s.sample.empty());
  EXPECT_EQ(s.population, 0u);
  for (uint64_t r = 0; r < 10; ++r) EXPECT_EQ(s.hot[r], r);
}

TEST(WeightSample, HotRowsFirstThenAUniformSampleOfTheRest) {
  std::vector<int64_t> reads;
  for (int64_t r = 0; r < 300; ++r)
    for (int64_t k = 0; k < 300 - r; ++k) reads.push_back(r * 7 % 1000);  // rows 0,7,14,... hottest first
  const auto agg = counted(1000, reads);
  const auto s = choose_snapshot_rows(agg, 1000, 100, 42);
  ASSERT_EQ(s.hot.size(), 50u);
  for (size_t i = 0; i < s.hot.size(); ++i) EXPECT_EQ(s.hot[i], i * 7 % 1000) << i;  // most-read first
  EXPECT_EQ(s.population, 950u);
  ASSERT_EQ(s.sample.size(), 50u);
  EXPECT_TRUE(std::is_sorted(s.sample.begin(), s.sample.end()));
  std::set<uint64_t> hot(s.hot.begin(), s.hot.end()), seen;
  for (uint64_t r : s.sample) {
    EXPECT_LT(r, 1000u);
    EXPECT_FALSE(hot.count(r)) << r;
    EXPECT_TRUE(seen.insert(r).second) << "duplicate " << r;
  }
  // Same seed, same rows; another seed, other rows.
  EXPECT_EQ(choose_snapshot_rows(agg, 1000, 100, 42).sample, s.sample);
  EXPECT_NE(choose_snapshot_rows(agg, 1000, 100, 43).sample, s.sample);
}

TEST(WeightSample, SampleIsUniformOverTheRowsThatAreNotHot) {
  // 10 hot rows at the start of the table; the sample must cover the rest evenly.
  std::vector<int64_t> reads;
  for (int64_t r = 0; r < 10; ++r) reads.insert(reads.end(), 5, r);
  const auto agg = counted(100000, reads);
  std::vector<int> deciles(10, 0);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const auto s = choose_snapshot_rows(agg, 100000, 2000, seed);
    ASSERT_EQ(s.hot.size(), 10u);  // rows never read are not hot
    ASSERT_EQ(s.sample.size(), 1990u);
    for (uint64_t r : s.sample) {
      ASSERT_GE(r, 10u);
      deciles[static_cast<size_t>(r / 10000)]++;
    }
  }
  for (int d : deciles) EXPECT_NEAR(d, 3980, 300);  // 39800 draws over 10 deciles
}

TEST(WeightSample, NoLookupsMeansAllSampledAndSketchTablesUseTheirTopK) {
  const auto empty = choose_snapshot_rows(TableAggregate(5000, StatsConfig{}), 5000, 100, 3);
  EXPECT_TRUE(empty.hot.empty());
  EXPECT_EQ(empty.sample.size(), 100u);
  EXPECT_EQ(empty.population, 5000u);
  std::vector<int64_t> reads(1000, 123456);
  reads.insert(reads.end(), 10, 77);
  const auto sketch = choose_snapshot_rows(counted(1u << 20, reads, 1000), 1u << 20, 64, 3);
  ASSERT_GE(sketch.hot.size(), 2u);
  EXPECT_EQ(sketch.hot[0], 123456u);
  EXPECT_EQ(sketch.hot[1], 77u);
  EXPECT_EQ(sketch.hot.size() + sketch.sample.size(), 64u);
}

}  // namespace
}  // namespace edo::stats

namespace edo::stats {
namespace {

TEST(HotRowTracker, FindsTheHeavyRowsAcrossDeltas) {
  HotRowTracker t(64);
  StatsConfig cfg;
  for (int round = 0; round < 5; ++round) {
    TableIngestor ing(100000, cfg);
    std::vector<int64_t> reads;
    for (int64_t r = 0; r < 20; ++r) reads.insert(reads.end(), 100 - r, r * 1000);  // heavy rows
    for (int64_t r = 0; r < 2000; ++r) reads.push_back(50000 + r);                  // one-off rows
    ing.add(reads.data(), reads.size());
    t.add(ing.take_delta());
  }
  const auto top = t.top(20);
  ASSERT_EQ(top.size(), 20u);
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(top[i].first, i * 1000) << i;
    EXPECT_GE(top[i].second, 5u * (100 - i));  // space-saving overestimates, never under
  }
  const auto s = choose_snapshot_rows(top, 100000, 40, 1);
  EXPECT_EQ(s.hot.size(), 20u);
  EXPECT_EQ(s.sample.size(), 20u);
}

}  // namespace
}  // namespace edo::stats
