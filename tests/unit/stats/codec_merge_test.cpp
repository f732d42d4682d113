#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "test_util.h"

namespace edo::stats {
namespace {

using testing::zipf_trace;

void expect_same(const TableAggregate& a, const TableAggregate& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.mode(), b.mode());
  EXPECT_EQ(a.lookups(), b.lookups());
  EXPECT_EQ(a.out_of_range(), b.out_of_range());
  EXPECT_EQ(a.unique_rows(), b.unique_rows());
  EXPECT_EQ(a.counts_descending(), b.counts_descending());
  EXPECT_EQ(a.top_rows(50), b.top_rows(50));
  EXPECT_EQ(a.stack_distances().bins(), b.stack_distances().bins());
  EXPECT_EQ(a.stack_distances().cold(), b.stack_distances().cold());
  EXPECT_EQ(a.stack_distances().max_distance(), b.stack_distances().max_distance());
  ASSERT_EQ(a.windows().size(), b.windows().size());
  for (size_t i = 0; i < a.windows().size(); ++i) {
    EXPECT_EQ(a.windows()[i].window_index, b.windows()[i].window_index);
    EXPECT_EQ(a.windows()[i].lookups, b.windows()[i].lookups);
    EXPECT_EQ(a.windows()[i].rows, b.windows()[i].rows);
  }
}

TableAggregate sample_aggregate(uint64_t rows, size_t n, const StatsConfig& cfg) {
  auto t = zipf_trace(rows, 1.1, n, 9);
  t.push_back(-3);
  TableIngestor ing(rows, cfg);
  ing.add(t.data(), t.size() / 2);
  ing.close_window();
  ing.add(t.data() + t.size() / 2, t.size() - t.size() / 2);
  ing.close_window();
  return ing.take_delta();
}

TEST(CodecTest, RoundTripSparseDenseAndSketch) {
  StatsConfig sk;
  sk.exact_rows_limit = 100;
  sk.cms_width = 256;
  sk.top_k = 32;
  sk.hll_precision = 8;
  sk.drift_top_k = 16;
  for (auto [rows, n, cfg] : {std::tuple{uint64_t{100000}, size_t{2000}, StatsConfig{}},   // sparse
                              std::tuple{uint64_t{500}, size_t{50000}, StatsConfig{}},     // dense
                              std::tuple{uint64_t{1} << 30, size_t{20000}, sk}}) {         // sketch
    TableAggregate a = sample_aggregate(rows, n, cfg);
    std::string blob = a.serialize();
    ASSERT_FALSE(blob.empty());
    // Format version first: 2 with the ordered sample an ingestor takes (1 without one).
    ASSERT_NE(a.ordered_sample(), nullptr);
    EXPECT_EQ(static_cast<uint8_t>(blob[0]), 2u);
    TableAggregate b;
    ASSERT_TRUE(TableAggregate::deserialize(blob, b)) << rows;
    expect_same(a, b);
    EXPECT_EQ(b.serialize(), blob);
  }
}

TEST(CodecTest, SparseDeltaIsCompact) {
  TableIngestor ing(uint64_t{1} << 26, StatsConfig{});
  std::vector<int64_t> idx = {5, 1000, 1000, 70000000 % (1 << 26), 12345678};
  ing.add(idx.data(), idx.size());
  std::string blob = ing.take_delta().serialize();
  EXPECT_LT(blob.size(), 200u);  // not 2^26 anything
  TableAggregate d;
  ASSERT_TRUE(TableAggregate::deserialize(blob, d));
  EXPECT_EQ(d.count(1000), 2u);
  EXPECT_EQ(d.unique_rows(), 4u);
}

TEST(CodecTest, TruncatedAndCorruptInputNeverCrashes) {
  StatsConfig sk;
  sk.exact_rows_limit = 100;
  sk.cms_width = 64;
  sk.top_k = 8;
  sk.hll_precision = 4;
  sk.drift_top_k = 4;
  for (auto [rows, cfg] : {std::pair{uint64_t{300}, StatsConfig{}}, std::pair{uint64_t{5000}, sk}}) {
    TableAggregate a = sample_aggregate(rows, 400, cfg);
    const std::string blob = a.serialize();
    TableAggregate out;
    for (size_t len = 0; len < blob.size(); ++len)
      EXPECT_FALSE(TableAggregate::deserialize(std::string_view(blob).substr(0, len), out)) << len;
    EXPECT_FALSE(TableAggregate::deserialize(blob + "x", out));
    for (size_t i = 0; i < blob.size(); ++i) {
      for (uint8_t v : {0x00, 0xff, 0x80, 0x7f}) {
        std::string bad = blob;
        bad[i] = static_cast<char>(v);
        TableAggregate o;
        if (TableAggregate::deserialize(bad, o)) {  // may be valid; must be usable
          (void)o.serialize();
          (void)summarize(o);
        }
      }
    }
    uint64_t x = 1;
    for (int k = 0; k < 2000; ++k) {
      std::string junk(1 + k % 97, '\0');
      for (auto& ch : junk) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        ch = static_cast<char>(x >> 56);
      }
      junk[0] = 1;
      TableAggregate o;
      (void)TableAggregate::deserialize(junk, o);
    }
  }
}

TEST(MergeTest, DeltasMergeToTheSameAsOneIngest) {
  for (uint64_t rows : {uint64_t{5000}, uint64_t{1} << 20}) {  // exact LRU, SHARDS
    auto t = zipf_trace(rows, 1.05, 400000, 21);
    TableIngestor one(rows, StatsConfig{}), parts(rows, StatsConfig{});
    one.add(t.data(), t.size());
    one.close_window();
    TableAggregate whole = one.take_delta();
    TableAggregate merged(rows, StatsConfig{});
    size_t off = 0, step = 1;
    int deltas = 0;
    while (off < t.size()) {
      const size_t n = std::min(step, t.size() - off);
      parts.add(t.data() + off, n);
      off += n;
      step = step * 3 + 7;
      TableAggregate d;
      ASSERT_TRUE(TableAggregate::deserialize(parts.take_delta().serialize(), d));
      ASSERT_TRUE(merged.merge(d));
      ++deltas;
    }
    parts.close_window();
    ASSERT_TRUE(merged.merge(parts.take_delta()));
    EXPECT_GT(deltas, 5);
    EXPECT_EQ(merged.lookups(), whole.lookups());
    EXPECT_EQ(merged.unique_rows(), whole.unique_rows());
    EXPECT_EQ(merged.counts_descending(), whole.counts_descending());
    for (uint64_t r = 0; r < std::min<uint64_t>(rows, 5000); ++r) ASSERT_EQ(merged.count(r), whole.count(r));
    const TableSummary a = summarize(merged), b = summarize(whole);
    ASSERT_EQ(a.lru_curve.size(), b.lru_curve.size());
    // Exact LRU: identical. SHARDS: the per-segment scaling differs slightly with the cuts.
    const double tol = rows <= StatsConfig{}.exact_lru_rows_limit ? 1e-9 : 0.01;
    for (size_t i = 0; i < a.lru_curve.size(); ++i) EXPECT_NEAR(a.lru_curve[i].y, b.lru_curve[i].y, tol) << i;
    EXPECT_NEAR(merged.stack_distances().total(), static_cast<double>(merged.lookups()), 1e-6 * merged.lookups());
    EXPECT_EQ(a.coverage_top_1pct, b.coverage_top_1pct);
    // The window's hot set is built from each segment's top rows (bounded memory), so with
    // many small deltas it is close to, not always equal to, the one-go hot set.
    ASSERT_EQ(merged.windows().size(), 1u);
    const auto& x = merged.windows()[0].rows;
    const auto& y = whole.windows()[0].rows;
    std::vector<uint64_t> inter;
    std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(inter));
    EXPECT_GE(static_cast<double>(inter.size()) / static_cast<double>(x.size() + y.size() - inter.size()), 0.9);
    EXPECT_EQ(merged.windows()[0].lookups, whole.windows()[0].lookups);
  }
}

TEST(MergeTest, ShapeMismatchIsRefused) {
  TableAggregate a(100, StatsConfig{}), b(101, StatsConfig{});
  int64_t i = 3;
  TableIngestor ing(100, StatsConfig{});
  ing.add(&i, 1);
  TableAggregate c = ing.take_delta();
  EXPECT_FALSE(a.merge(b));
  EXPECT_TRUE(a.merge(c));
  EXPECT_EQ(a.count(3), 1u);
  EXPECT_FALSE(a.empty());
  a.clear();
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.count(3), 0u);
}

TEST(MergeTest, TakeDeltaOnlyCarriesWhatArrivedSince) {
  TableIngestor ing(1000, StatsConfig{});
  std::vector<int64_t> a = {1, 2, 2}, b = {2, 7};
  ing.add(a.data(), a.size());
  EXPECT_EQ(ing.pending().lookups(), 3u);
  TableAggregate d1 = ing.take_delta();
  ing.add(b.data(), b.size());
  TableAggregate d2 = ing.take_delta();
  EXPECT_EQ(d1.count(2), 2u);
  EXPECT_EQ(d2.count(2), 1u);
  EXPECT_EQ(d2.count(1), 0u);
  EXPECT_EQ(d2.lookups(), 2u);
  EXPECT_DOUBLE_EQ(d2.stack_distances().cold(), 1.0);  // row 7 only: the LRU state is kept
  EXPECT_TRUE(ing.take_delta().empty());
}

}  // namespace
}  // namespace edo::stats

namespace edo::stats {
namespace {

// TableAggregate copies share their state until one side changes (copy-on-write): a change to
// a copy (merge, clear, an ingestor writing into it) never shows in the other, whichever side
// changes and however many copies there are.
TEST(AggregateCopies, AChangeToOneCopyNeverShowsInAnother) {
  StatsConfig cfg;
  TableIngestor ing(1000, cfg);
  std::vector<int64_t> ids;
  for (int i = 0; i < 5000; ++i) ids.push_back((i * 7) % 300);
  ing.add(ids.data(), ids.size());
  const TableAggregate original = ing.take_delta();
  const std::string bytes = original.serialize();
  TableAggregate a = original, b = original;
  ASSERT_TRUE(a.merge(original));
  EXPECT_EQ(a.lookups(), 2 * original.lookups());
  EXPECT_EQ(b.lookups(), original.lookups());
  EXPECT_EQ(original.serialize(), bytes) << "the shared state was changed in place";
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_FALSE(original.empty());
  EXPECT_EQ(a.lookups(), 2 * original.lookups());
  TableAggregate c = a;
  ASSERT_TRUE(c.merge(c));  // with itself, shared
  EXPECT_EQ(c.lookups(), 4 * original.lookups());
  EXPECT_EQ(a.lookups(), 2 * original.lookups());
  EXPECT_EQ(original.serialize(), bytes);
}

}  // namespace
}  // namespace edo::stats
