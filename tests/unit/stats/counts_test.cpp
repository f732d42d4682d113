#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>

#include "internal.h"
#include "test_util.h"

namespace edo::stats {
namespace {

using testing::map_counts;
using testing::zipf_trace;

TEST(ExactCountsTest, MatchesMapAndSkipsOutOfRange) {
  const uint64_t rows = 10000;
  auto t = zipf_trace(rows, 1.0, 200000, 1);
  t.push_back(-1);
  t.push_back(static_cast<int64_t>(rows));
  t.push_back(INT64_MIN);
  t.push_back(INT64_MAX);
  TableIngestor ing(rows, StatsConfig{});
  ing.add(t.data(), t.size());
  const TableAggregate& a = ing.pending();
  EXPECT_EQ(a.mode(), CountMode::kExact);
  EXPECT_EQ(a.out_of_range(), 4u);
  EXPECT_EQ(a.lookups(), t.size() - 4);
  auto m = map_counts(t, rows);
  EXPECT_EQ(a.unique_rows(), m.size());
  for (uint64_t r = 0; r < rows; ++r) {
    auto it = m.find(static_cast<int64_t>(r));
    ASSERT_EQ(a.count(r), it == m.end() ? 0u : it->second) << r;
  }
  uint64_t seen = 0;
  a.for_each_nonzero([&](uint64_t r, uint64_t c) {
    EXPECT_EQ(m.at(static_cast<int64_t>(r)), c);
    ++seen;
  });
  EXPECT_EQ(seen, m.size());
  auto desc = a.counts_descending();
  std::vector<uint64_t> ref;
  for (auto& [r, c] : m) ref.push_back(c);
  std::sort(ref.rbegin(), ref.rend());
  EXPECT_EQ(desc, ref);
  auto top = a.top_rows(5);
  ASSERT_EQ(top.size(), 5u);
  EXPECT_EQ(top[0].second, ref[0]);
  EXPECT_EQ(a.count(top[0].first), ref[0]);
}

TEST(ExactCountsTest, Int32IndicesAndNegatives) {
  std::vector<int32_t> t = {0, 1, 1, 2, -5, 7, 8, 2, 2};
  TableIngestor ing(8, StatsConfig{});
  ing.add(t.data(), t.size());
  const TableAggregate& a = ing.pending();
  EXPECT_EQ(a.out_of_range(), 2u);
  EXPECT_EQ(a.lookups(), 7u);
  EXPECT_EQ(a.count(2), 3u);
  EXPECT_EQ(a.count(7), 1u);
  EXPECT_EQ(a.unique_rows(), 4u);
}

TEST(ExactCountsTest, Uint32OverflowCarriesTo64Bit) {
  detail::ExactCounts c;
  c.reset(100);
  c.sparse().emplace_back(5, 0xFFFFFFFFull);
  detail::ExactCounts d;
  d.reset(100);
  d.make_dense();
  d.merge(c);
  EXPECT_EQ(d.get(5), 0xFFFFFFFFull);
  int64_t idx[3] = {5, 5, 6};
  EXPECT_EQ(d.add_batch(idx, 3), 0u);
  EXPECT_EQ(d.get(5), 0x100000001ull);
  EXPECT_EQ(d.get(6), 1u);
  uint64_t total = 0;
  d.for_each_nonzero([&](uint64_t, uint64_t v) { total += v; });
  EXPECT_EQ(total, 0x100000002ull);
  detail::ExactCounts e;
  d.extract(e);
  EXPECT_EQ(e.get(5), 0x100000001ull);
  EXPECT_EQ(d.get(5), 0u);
  EXPECT_EQ(d.nonzero(), 0u);
}

TEST(ExactCountsTest, FoldKeepsCountsPastTwoTo31) {
  detail::ExactCounts c;
  c.reset(10);
  c.sparse().emplace_back(2, (uint64_t{1} << 31) - 3);
  detail::ExactCounts d;
  d.reset(10);
  d.make_dense();
  d.merge(c);
  std::vector<int64_t> idx(10, 2);
  idx.push_back(4);
  d.add_batch(idx.data(), idx.size());  // lo_[2] is now >= 2^31
  EXPECT_EQ(d.get(2), (uint64_t{1} << 31) + 7);
  d.fold();
  EXPECT_EQ(d.get(2), (uint64_t{1} << 31) + 7);
  d.set_headroom_for_test(3);  // forces folds inside the next batch
  d.add_batch(idx.data(), idx.size());
  EXPECT_EQ(d.get(2), (uint64_t{1} << 31) + 17);
  EXPECT_EQ(d.get(4), 2u);
  EXPECT_EQ(d.nonzero(), 2u);
  EXPECT_EQ(d.total(), (uint64_t{1} << 31) + 19);
  detail::ExactCounts e;
  d.extract(e);
  EXPECT_EQ(e.get(2), (uint64_t{1} << 31) + 17);
}

TEST(SketchTest, HeavyHittersUniqueAndCountBounds) {
  StatsConfig cfg;
  cfg.exact_rows_limit = 1000;
  cfg.top_k = 256;
  cfg.cms_width = 1 << 14;
  cfg.hll_precision = 14;
  const uint64_t rows = 1 << 20;
  auto t = zipf_trace(rows, 1.1, 300000, 3);
  TableIngestor ing(rows, cfg);
  ing.add(t.data(), t.size());
  const TableAggregate& a = ing.pending();
  ASSERT_EQ(a.mode(), CountMode::kSketch);
  auto m = map_counts(t, rows);
  EXPECT_NEAR(static_cast<double>(a.unique_rows()), static_cast<double>(m.size()), 0.03 * m.size());
  for (auto& [r, c] : m) ASSERT_GE(a.count(static_cast<uint64_t>(r)), c);
  // True top 20 rows are all in the top-K summary.
  std::vector<std::pair<uint64_t, int64_t>> ref;
  for (auto& [r, c] : m) ref.emplace_back(c, r);
  std::sort(ref.rbegin(), ref.rend());
  auto top = a.top_rows(256);
  for (int i = 0; i < 20; ++i) {
    bool found = std::any_of(top.begin(), top.end(), [&](auto& p) { return p.first == static_cast<uint64_t>(ref[i].second); });
    EXPECT_TRUE(found) << "rank " << i;
  }
  EXPECT_EQ(a.counts_descending().size(), 256u);
  EXPECT_GT(coverage_of_top(a, 256), 0.3);
}

TEST(SketchTest, OutOfRangeIndicesAreCountedNotSketched) {
  StatsConfig cfg;
  cfg.exact_rows_limit = 100;
  const uint64_t rows = 5000;
  std::vector<int64_t> t64{1, 7, -1, 5000, 7, 4999, -5, 1, 1};
  std::vector<int32_t> t32{2, -3, 6000, 2};
  TableIngestor ing(rows, cfg);
  ing.add(t64.data(), t64.size());
  ing.add(t32.data(), t32.size());
  const TableAggregate& a = ing.pending();
  ASSERT_EQ(a.mode(), CountMode::kSketch);
  EXPECT_EQ(a.out_of_range(), 5u);
  EXPECT_EQ(a.lookups(), 8u);
  EXPECT_GE(a.count(1), 3u);
  EXPECT_GE(a.count(7), 2u);
  EXPECT_GE(a.count(2), 2u);
  EXPECT_EQ(a.top_rows(1)[0].first, 1u);
}

TEST(SketchTest, BatchedCountMinAddEqualsOneByOne) {
  auto t = zipf_trace(1 << 16, 1.05, 20000, 9);
  std::vector<uint64_t> rows(t.begin(), t.end()), est(rows.size());
  detail::CountMinSketch one, batch;
  one.reset(1 << 10, 4);
  batch.reset(1 << 10, 4);
  batch.add_batch(rows.data(), rows.size(), est.data());
  for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(one.add(rows[i]), est[i]) << i;
  EXPECT_EQ(one.cells(), batch.cells());
}

TEST(SketchTest, DeltasMergeLikeOneIngest) {
  StatsConfig cfg;
  cfg.exact_rows_limit = 1000;
  cfg.top_k = 128;
  cfg.cms_width = 1 << 12;
  const uint64_t rows = 1 << 18;
  auto t = zipf_trace(rows, 1.2, 100000, 4);
  TableIngestor one(rows, cfg), parts(rows, cfg);
  one.add(t.data(), t.size());
  TableAggregate whole = one.take_delta();
  TableAggregate merged(rows, cfg);
  for (size_t off = 0; off < t.size(); off += 25000) {
    parts.add(t.data() + off, 25000);
    std::string blob = parts.take_delta().serialize();
    TableAggregate d;
    ASSERT_TRUE(TableAggregate::deserialize(blob, d));
    ASSERT_TRUE(merged.merge(d));
  }
  EXPECT_EQ(merged.lookups(), whole.lookups());
  EXPECT_EQ(merged.unique_rows(), whole.unique_rows());  // HLL registers merge by max: identical
  for (uint64_t r = 0; r < 1000; ++r) ASSERT_EQ(merged.count(r), whole.count(r));  // CMS adds up exactly
  EXPECT_EQ(merged.top_rows(1)[0].first, whole.top_rows(1)[0].first);
}

}  // namespace
}  // namespace edo::stats

namespace edo::stats {
namespace {

TEST(FlatMapTest, MatchesUnorderedMapUnderInsertEraseChurn) {
  detail::FlatMap m;
  m.reset(300);
  std::unordered_map<uint64_t, uint32_t> ref;
  uint64_t x = 7;
  for (int i = 0; i < 200000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t k = (x >> 33) % 1000;
    if ((x >> 20) & 1) {
      if (ref.size() < 300 || ref.count(k)) {
        m.set(k, static_cast<uint32_t>(i));
        ref[k] = static_cast<uint32_t>(i);
      }
    } else {
      m.erase(k);
      ref.erase(k);
    }
    ASSERT_EQ(m.size(), ref.size());
  }
  for (uint64_t k = 0; k < 1000; ++k) {
    const uint32_t* p = m.find(k);
    auto it = ref.find(k);
    ASSERT_EQ(p != nullptr, it != ref.end()) << k;
    if (p) {
      EXPECT_EQ(*p, it->second);
    }
  }
}

}  // namespace
}  // namespace edo::stats

namespace edo::stats {
namespace {

// Issue 31: hashed counting (start_counting(): a tracer's segment) gives the counts dense
// counting gives, on random streams that stay sparse, cross rows/8 mid-batch (the rest of the
// batch goes to the dense loop), run out of range, and are cut (extract) between batches, with
// the same deltas; and it holds slots only for the rows read until it turns dense.
TEST(ExactCountsTest, HashedCountingMatchesDenseFromTheStart) {
  std::mt19937_64 rng(11);
  for (const uint64_t rows : {uint64_t{5000}, uint64_t{100'000}, uint64_t{1'000'000}}) {
    for (const uint64_t distinct : {uint64_t{50}, rows / 16, rows / 4, rows}) {
      detail::ExactCounts hashed, dense;
      hashed.reset(rows);
      hashed.start_counting();
      dense.reset(rows);
      dense.make_dense();
      ASSERT_TRUE(hashed.hashed());
      std::set<int64_t> seen;  // the rows read
      std::vector<int64_t> pick(distinct);
      for (auto& r : pick) r = int64_t(rng() % rows);
      std::vector<int64_t> batch(3000);
      for (int b = 0; b < 40; ++b) {
        for (auto& x : batch) x = (rng() % 97 == 0) ? int64_t(rows + rng() % 5) - int64_t(rng() % 2 * (rows + 10)) : pick[rng() % distinct];
        EXPECT_EQ(hashed.add_batch(batch.data(), batch.size()), dense.add_batch(batch.data(), batch.size()));
        for (int64_t x : batch)
          if (x >= 0 && uint64_t(x) < rows) seen.insert(x);
        if (b % 7 == 6) {  // a flush: both cut, the deltas equal
          detail::ExactCounts dh, dd;
          hashed.extract(dh);
          dense.extract(dd);
          std::vector<std::pair<uint64_t, uint64_t>> vh, vd;
          dh.for_each_nonzero([&](uint64_t r, uint64_t c) { vh.emplace_back(r, c); });
          dd.for_each_nonzero([&](uint64_t r, uint64_t c) { vd.emplace_back(r, c); });
          ASSERT_EQ(vh, vd) << rows << " " << distinct << " batch " << b;
          std::string eh, ed;
          dh.encode(eh);
          dd.encode(ed);
          EXPECT_EQ(eh, ed);
        }
      }
      EXPECT_EQ(hashed.nonzero(), dense.nonzero());
      EXPECT_EQ(hashed.total(), dense.total());
      for (int k = 0; k < 2000; ++k) {
        const uint64_t r = pick[rng() % distinct];
        ASSERT_EQ(hashed.get(r), dense.get(r)) << r;
      }
      // Sparse while at most rows/8 rows were read, dense after: memory follows the rows read.
      EXPECT_EQ(hashed.dense(), seen.size() * detail::ExactCounts::kDenseShare > rows) << rows << " " << distinct;
      if (hashed.hashed()) {
        EXPECT_LE(hashed.hash_slots() * 12, seen.size() * 32 + 64 * 12);
      }
    }
  }
}

// Counts past 2^32 in the hashed form carry into 64 bits, and a merge into it adds.
TEST(ExactCountsTest, HashedCountsCarryPast32BitsAndMerge) {
  detail::ExactCounts h;
  h.reset(1 << 20);
  h.start_counting();
  detail::ExactCounts o;
  o.reset(1 << 20);
  o.sparse().emplace_back(7, 3);
  o.sparse().emplace_back(12345, UINT32_MAX - 5);
  h.merge(o);
  std::vector<int64_t> same(16, 12345);
  h.add_batch(same.data(), same.size());  // wraps the row's uint32 slot
  EXPECT_TRUE(h.hashed());
  EXPECT_EQ(h.get(7), 3u);
  EXPECT_EQ(h.get(12345), uint64_t{UINT32_MAX} + 11);
  h.merge(o);  // adds past 2^32 again
  EXPECT_EQ(h.get(12345), 2 * uint64_t{UINT32_MAX} + 6);
  EXPECT_EQ(h.total(), 2 * uint64_t{UINT32_MAX} + 12);
  detail::ExactCounts cut;
  h.extract(cut);
  EXPECT_EQ(cut.get(12345), 2 * uint64_t{UINT32_MAX} + 6);
  EXPECT_EQ(h.total(), 0u);
}

}  // namespace
}  // namespace edo::stats

namespace edo::stats {
namespace {

// A table that gives up its LRU curve mid-stream (the tracer's shed_lru under
// EDO_MAX_MEMORY_MB) must not leave a curve of the stream's first deltas only: that prefix is
// mostly cold misses and would read as a hit rate near 0 for the whole run. The collector
// merges the deltas in order: the result has no curve (as a table that never tracked one) and
// its counts stay exact.
TEST(ShedLru, ACurveOfPartOfTheStreamIsNotKept) {
  StatsConfig cfg;
  const uint64_t rows = 1000;
  TableIngestor ing(rows, cfg);
  std::mt19937_64 rng(5);
  std::vector<int64_t> batch(5000);
  TableAggregate collected;
  uint64_t expected_row7 = 0;
  for (int delta = 0; delta < 4; ++delta) {
    if (delta == 2) ing.shed_lru(16);
    for (auto& x : batch) {
      x = int64_t(rng() % 50);  // a hot set of 50 rows: an LRU cache of 100 rows hits ~all
      expected_row7 += x == 7;
    }
    ing.add(batch.data(), batch.size());
    ing.close_window();
    TableAggregate d = ing.take_delta();
    if (delta == 0) {
      collected = d;
      // Before the shed the curve is whole and says what it should.
      EXPECT_GT(lru_hit_rate(collected, 100), 0.9);
    } else {
      ASSERT_TRUE(collected.merge(d));
    }
  }
  EXPECT_EQ(collected.lookups(), 4 * batch.size());
  EXPECT_EQ(collected.count(7), expected_row7);
  EXPECT_TRUE(collected.stack_distances().empty());
  EXPECT_TRUE(summarize(collected).lru_curve.empty());
  // Merging the other way round (an untracked aggregate first) keeps no curve either.
  TableIngestor tracked(rows, cfg);
  tracked.add(batch.data(), batch.size());
  TableAggregate whole = tracked.take_delta();
  TableAggregate reversed = collected;
  ASSERT_TRUE(reversed.merge(whole));
  EXPECT_TRUE(reversed.stack_distances().empty());
}

}  // namespace
}  // namespace edo::stats

namespace edo::stats {
namespace {

// sort_by_row() (the radix sort of a hashed segment's rows) gives std::sort's order for
// distinct rows below any table size: one digit, a digit and one bit, several digits, rows
// past 2^32; and on both sides of the size where it stops comparison sorting.
TEST(ExactCountsTest, SortByRowMatchesAComparisonSort) {
  std::mt19937_64 rng(5);
  for (const uint64_t rows : {uint64_t{1}, uint64_t{2}, uint64_t{2048}, uint64_t{2049}, uint64_t{1'000'000},
                              (uint64_t{1} << 22) + 3, uint64_t{1} << 40}) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{50'000}}) {
      std::set<uint64_t> picked;
      while (picked.size() < std::min<uint64_t>(n, rows)) picked.insert(rng() % rows);
      std::vector<std::pair<uint64_t, uint64_t>> v;
      for (uint64_t r : picked) v.emplace_back(r, rng());
      std::shuffle(v.begin(), v.end(), rng);
      std::vector<std::pair<uint64_t, uint64_t>> want = v;
      std::sort(want.begin(), want.end());
      detail::sort_by_row(v, rows);
      ASSERT_EQ(v, want) << rows << " rows, " << n << " pairs";
    }
  }
}

}  // namespace
}  // namespace edo::stats
