// TableAggregate::deserialize_lazily() (issue 31): the same values as deserialize() whichever
// part is asked for first, the same inputs accepted, and a loaded table that costs what its
// content needs (a 16-row table: kilobytes).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "test_util.h"

namespace edo::stats {
namespace {

using testing::zipf_trace;

TableAggregate ingest(uint64_t rows, size_t n, const StatsConfig& cfg, double alpha = 1.1) {
  auto t = zipf_trace(rows, alpha, n, 7);
  t.push_back(-1);  // one out of range
  TableIngestor ing(rows, cfg);
  ing.add(t.data(), t.size() / 2);
  ing.close_window();
  ing.add(t.data() + t.size() / 2, t.size() - t.size() / 2);
  ing.close_window();
  return ing.take_delta();
}

StatsConfig sketch_config() {
  StatsConfig sk;
  sk.exact_rows_limit = 100;
  sk.cms_width = 256;
  sk.top_k = 32;
  sk.hll_precision = 8;
  sk.drift_top_k = 16;
  return sk;
}

// The three encodings of the counts: sparse exact, dense exact, sketches.
std::vector<std::tuple<uint64_t, size_t, StatsConfig>> shapes() {
  return {{uint64_t{100000}, size_t{3000}, StatsConfig{}},
          {uint64_t{500}, size_t{40000}, StatsConfig{}},
          {uint64_t{1} << 30, size_t{20000}, sketch_config()}};
}

std::vector<std::pair<uint64_t, uint64_t>> nonzero(const TableAggregate& a) {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  a.for_each_nonzero([&](uint64_t r, uint64_t c) { v.emplace_back(r, c); });
  return v;
}

void expect_same_summary(const TableSummary& a, const TableSummary& b) {
  EXPECT_EQ(a.unique_rows, b.unique_rows);
  EXPECT_EQ(a.coverage_top_0_1pct, b.coverage_top_0_1pct);
  EXPECT_EQ(a.coverage_top_1pct, b.coverage_top_1pct);
  EXPECT_EQ(a.coverage_top_10pct, b.coverage_top_10pct);
  EXPECT_EQ(a.zipf.alpha, b.zipf.alpha);
  EXPECT_EQ(a.zipf.fit_error, b.zipf.fit_error);
  ASSERT_EQ(a.lru_curve.size(), b.lru_curve.size());
  for (size_t i = 0; i < a.lru_curve.size(); ++i) {
    EXPECT_EQ(a.lru_curve[i].x, b.lru_curve[i].x);
    EXPECT_EQ(a.lru_curve[i].y, b.lru_curve[i].y);
  }
  ASSERT_EQ(a.coverage_curve.size(), b.coverage_curve.size());
  for (size_t i = 0; i < a.coverage_curve.size(); ++i) EXPECT_EQ(a.coverage_curve[i].y, b.coverage_curve[i].y);
  EXPECT_EQ(a.lru_hit_rate_1pct, b.lru_hit_rate_1pct);
  EXPECT_EQ(a.lru_hit_rate_50pct, b.lru_hit_rate_50pct);
  EXPECT_EQ(a.mean_drift_jaccard, b.mean_drift_jaccard);
}

TEST(LazyDecodeTest, GivesTheValuesOfEagerDecodingWhateverIsAskedFirst) {
  for (const auto& [rows, n, cfg] : shapes()) {
    SCOPED_TRACE(rows);
    const std::string blob = ingest(rows, n, cfg).serialize();
    TableAggregate eager;
    ASSERT_TRUE(TableAggregate::deserialize(blob, eager));
    // Readers of a few numbers first (counts decoded per call, never kept).
    TableAggregate lazy;
    ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, lazy));
    EXPECT_EQ(lazy.rows(), eager.rows());
    EXPECT_EQ(lazy.mode(), eager.mode());
    EXPECT_EQ(lazy.lookups(), eager.lookups());
    EXPECT_EQ(lazy.out_of_range(), eager.out_of_range());
    EXPECT_EQ(lazy.unique_rows(), eager.unique_rows());
    EXPECT_EQ(lazy.counts_descending(), eager.counts_descending());
    EXPECT_EQ(lazy.top_rows(10), eager.top_rows(10));
    EXPECT_EQ(lazy.top_rows(1u << 20), eager.top_rows(1u << 20));
    EXPECT_EQ(nonzero(lazy), nonzero(eager));
    {  // a reader's callback may ask the same aggregate for more (no lock held around it)
      TableAggregate again;
      ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, again));
      uint64_t agree = 0, seen = 0;
      again.for_each_nonzero([&](uint64_t row, uint64_t) { agree += again.count(row) == eager.count(row); ++seen; });
      EXPECT_EQ(agree, seen);
    }
    expect_same_summary(summarize(lazy), summarize(eager));
    EXPECT_EQ(lazy.serialize(), blob);  // still encoded: its bytes as stored
    // Then the parts that are kept once decoded.
    for (const auto& [row, c] : eager.top_rows(20)) EXPECT_EQ(lazy.count(row), eager.count(row));
    EXPECT_EQ(lazy.count(rows - 1), eager.count(rows - 1));
    ASSERT_NE(lazy.ordered_sample(), nullptr);
    ASSERT_NE(eager.ordered_sample(), nullptr);
    EXPECT_EQ(lazy.ordered_sample()->threshold, eager.ordered_sample()->threshold);
    ASSERT_EQ(lazy.ordered_sample()->refs.size(), eager.ordered_sample()->refs.size());
    for (size_t i = 0; i < lazy.ordered_sample()->refs.size(); ++i) {
      EXPECT_EQ(lazy.ordered_sample()->refs[i].row, eager.ordered_sample()->refs[i].row);
      EXPECT_EQ(lazy.ordered_sample()->refs[i].position, eager.ordered_sample()->refs[i].position);
    }
    EXPECT_EQ(lazy.counts_descending(), eager.counts_descending());  // now from the decoded counts
    EXPECT_EQ(lazy.serialize(), eager.serialize());

    // A writer first: merge() decodes both sides; the results agree byte for byte.
    TableAggregate lazy2, lazy_other, eager2 = eager;
    ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, lazy2));
    ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, lazy_other));
    ASSERT_TRUE(lazy2.merge(lazy_other));
    ASSERT_TRUE(eager2.merge(eager));
    EXPECT_EQ(lazy2.serialize(), eager2.serialize());
    EXPECT_EQ(lazy2.counts_descending(), eager2.counts_descending());
    // The other side of the merge is unchanged, and a copy shares what it decoded.
    const TableAggregate copy = lazy_other;
    EXPECT_EQ(copy.serialize(), blob);
    EXPECT_EQ(copy.unique_rows(), eager.unique_rows());
  }
}

TEST(LazyDecodeTest, AcceptsExactlyWhatEagerDecodingAccepts) {
  for (const auto& [rows, n, cfg] : shapes()) {
    SCOPED_TRACE(rows);
    const std::string blob = ingest(rows, n / 10, cfg).serialize();
    auto both = [&](const std::string& bytes) {
      TableAggregate e, l, d;
      const bool eager_ok = TableAggregate::deserialize(bytes, e);
      EXPECT_EQ(TableAggregate::deserialize_lazily(bytes, l), eager_ok);
      // Without the sample: never refuses what eager decoding takes (its references unread).
      const bool dropped_ok = TableAggregate::deserialize_lazily(bytes, d, false);
      if (eager_ok) {
        EXPECT_TRUE(dropped_ok);
        EXPECT_EQ(l.counts_descending(), e.counts_descending());
        // A damaged varint can still decode (a redundant continuation byte): the part kept
        // encoded is written back as read, eager decoding re-encodes it; the values agree.
        TableAggregate back;
        ASSERT_TRUE(TableAggregate::deserialize(l.serialize(), back));
        EXPECT_EQ(back.serialize(), e.serialize());
      }
      if (dropped_ok) (void)summarize(d);  // whatever it took reads without harm
    };
    for (size_t cut = 0; cut < blob.size(); cut += 1 + cut / 8) both(blob.substr(0, cut));
    for (size_t i = 0; i < blob.size(); i += 1 + i / 16) {
      for (uint8_t x : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
        std::string bad = blob;
        bad[i] = static_cast<char>(static_cast<uint8_t>(bad[i]) ^ x);
        both(bad);
      }
    }
  }
}

TEST(LazyDecodeTest, ADroppedSampleLeavesEveryOtherValue) {
  const std::string blob = ingest(100000, 3000, StatsConfig{}).serialize();
  TableAggregate eager, dropped;
  ASSERT_TRUE(TableAggregate::deserialize(blob, eager));
  ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, dropped, false));
  EXPECT_EQ(dropped.ordered_sample(), nullptr);
  EXPECT_EQ(dropped.counts_descending(), eager.counts_descending());
  expect_same_summary(summarize(dropped), summarize(eager));
  const std::string again = dropped.serialize();
  EXPECT_EQ(static_cast<uint8_t>(again[0]), 1u);  // the format without a sample
  TableAggregate back;
  ASSERT_TRUE(TableAggregate::deserialize(again, back));
  EXPECT_EQ(back.counts_descending(), eager.counts_descending());
}

// What a reader holds per table grows with the table's content, not with a fixed block: a
// 16-row table read 1,000 times costs a few kilobytes, and a million-row table read as often
// costs no more than its reads' worth (no per-row array, no sketch-sized allocation).
TEST(LazyDecodeTest, ALoadedSixteenRowTableCostsKilobytes) {
  const std::string small = ingest(16, 1000, StatsConfig{}).serialize();
  TableAggregate a;
  ASSERT_TRUE(TableAggregate::deserialize_lazily(small, a, false));
  EXPECT_LT(a.memory_bytes(), 2u * 1024) << "16 rows, 1,000 lookups, sample dropped";
  ASSERT_TRUE(TableAggregate::deserialize_lazily(small, a));
  // The ordered sample kept encoded: every one of the 1,000 references, ~2 bytes each.
  EXPECT_LT(a.memory_bytes(), 2u * 1024 + 3 * 1000);
  const size_t encoded = a.memory_bytes();
  ASSERT_NE(a.ordered_sample(), nullptr);
  EXPECT_EQ(a.ordered_sample()->refs.size(), 1000u);
  EXPECT_GT(a.memory_bytes(), encoded + 1000 * sizeof(OrderedRef) / 2) << "decoded: 16 bytes per reference";

  const std::string big = ingest(uint64_t{1} << 20, 1000, StatsConfig{}).serialize();
  TableAggregate b;
  ASSERT_TRUE(TableAggregate::deserialize_lazily(big, b, false));
  EXPECT_LT(b.memory_bytes(), 24u * 1024) << "2^20 rows, 1,000 lookups";
  TableAggregate eager;
  ASSERT_TRUE(TableAggregate::deserialize(big, eager));
  EXPECT_LT(b.memory_bytes() * 2, eager.memory_bytes()) << "eager decoding holds 16 bytes per read row and reference";
}

}  // namespace
}  // namespace edo::stats
