// summarize_headline() (edo diff at 200,000 tables, issue 31): summarize()'s headline numbers
// bit for bit, for every encoding of the counts, loaded eagerly or lazily, and coverages that
// are the hand-computed shares of a table whose counts are known.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace edo::stats {
namespace {

void expect_headline_of(const TableAggregate& a) {
  const TableSummary full = summarize(a), head = summarize_headline(a);
  EXPECT_EQ(head.rows, full.rows);
  EXPECT_EQ(head.lookups, full.lookups);
  EXPECT_EQ(head.unique_rows, full.unique_rows);
  EXPECT_EQ(head.mode, full.mode);
  // EXPECT_EQ on doubles: the same bits, not nearly the same value.
  EXPECT_EQ(head.coverage_top_0_1pct, full.coverage_top_0_1pct);
  EXPECT_EQ(head.coverage_top_1pct, full.coverage_top_1pct);
  EXPECT_EQ(head.coverage_top_10pct, full.coverage_top_10pct);
  EXPECT_EQ(head.lru_hit_rate_1pct, full.lru_hit_rate_1pct);
  EXPECT_EQ(head.lru_hit_rate_10pct, full.lru_hit_rate_10pct);
  EXPECT_EQ(head.lru_hit_rate_50pct, full.lru_hit_rate_50pct);
  EXPECT_EQ(head.lru_hit_rate_100pct, full.lru_hit_rate_100pct);
  // What it leaves out.
  EXPECT_TRUE(head.coverage_curve.empty());
  EXPECT_TRUE(head.lru_curve.empty());
  EXPECT_TRUE(head.drift.empty());
  EXPECT_FALSE(head.zipf.valid);
}

TableAggregate ingest_trace(uint64_t rows, const std::vector<int64_t>& t, const StatsConfig& cfg) {
  TableIngestor ing(rows, cfg);
  ing.add(t.data(), t.size() / 2);
  ing.close_window();
  ing.add(t.data() + t.size() / 2, t.size() - t.size() / 2);
  ing.close_window();
  return ing.take_delta();
}

TEST(SummaryHeadline, IsSummarizesHeadlineBitForBit) {
  StatsConfig sketch;
  sketch.exact_rows_limit = 100;
  sketch.cms_width = 256;
  sketch.top_k = 32;
  sketch.hll_precision = 8;
  struct Shape {
    uint64_t rows;
    size_t n;
    double alpha;
    StatsConfig cfg;
  };
  // Sparse exact, dense exact (counts far above the tallied 256), skewed and flat, sketches.
  const std::vector<Shape> shapes = {{100000, 3000, 1.1, StatsConfig{}},
                                     {500, 400000, 1.2, StatsConfig{}},
                                     {20000, 50000, 0.0, StatsConfig{}},
                                     {3, 10, 0.5, StatsConfig{}},
                                     {uint64_t{1} << 30, 20000, 1.05, sketch}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(s.rows);
    auto t = testing::zipf_trace(s.rows, s.alpha, s.n, 11);
    t.push_back(-1);  // out of range: counted in lookups, not in any row
    const TableAggregate a = ingest_trace(s.rows, t, s.cfg);
    expect_headline_of(a);
    const std::string blob = a.serialize();
    TableAggregate lazy, without_sample;
    ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, lazy));
    ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, without_sample, false));
    expect_headline_of(lazy);
    expect_headline_of(without_sample);
    TableAggregate merged = a;
    ASSERT_TRUE(merged.merge(lazy));
    expect_headline_of(merged);
  }
  expect_headline_of(TableAggregate());                          // no shape
  expect_headline_of(TableAggregate(1000, StatsConfig{}));       // nothing read
}

TEST(SummaryHeadline, CoverageIsTheShareOfTheMostReadRows) {
  // 1,000 rows: row 0 read 1,000 times, rows 1..19 (20 - i) x 10 times, rows 20..519 once.
  std::vector<int64_t> t;
  for (int i = 0; i < 1000; ++i) t.push_back(0);
  for (int64_t r = 1; r < 20; ++r)
    for (int64_t k = 0; k < (20 - r) * 10; ++k) t.push_back(r);
  for (int64_t r = 20; r < 520; ++r) t.push_back(r);
  const TableAggregate a = ingest_trace(1000, t, StatsConfig{});
  const TableSummary s = summarize_headline(a);
  ASSERT_EQ(s.lookups, 3400u);  // 1000 + 10 x (19 + ... + 1) + 500
  EXPECT_EQ(s.unique_rows, 520u);
  EXPECT_EQ(s.coverage_top_0_1pct, 1000.0 / 3400.0);               // the hottest row
  EXPECT_EQ(s.coverage_top_1pct, (1000.0 + 10 * 135) / 3400.0);    // 10 rows: 1000 + 190 + ... + 110
  EXPECT_EQ(s.coverage_top_10pct, (2900.0 + 80) / 3400.0);         // 100 rows: the 20 hot ones and 80 read once
}

}  // namespace
}  // namespace edo::stats
