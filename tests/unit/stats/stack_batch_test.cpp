// The exact stack's batched loop (MattsonStack::reference_batch, issue 32 point 2) against a
// brute-force move-to-front list on random streams: every distance, the distinct-id cut-off,
// the LRU order it hands to SHARDS, and the ingestor's histograms (exact tables, a large
// table's prefix with rows as ids and with the row map) bin for bin.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "internal.h"
#include "test_util.h"

namespace edo::stats {
namespace {

// Brute force: the distance of a reference is its id's position in a most-recent-first list.
class MoveToFront {
 public:
  uint64_t reference(uint64_t id) {
    const auto it = std::find(list_.begin(), list_.end(), static_cast<uint32_t>(id));
    if (it == list_.end()) {
      list_.insert(list_.begin(), static_cast<uint32_t>(id));
      return detail::MattsonStack::kCold;
    }
    const uint64_t d = static_cast<uint64_t>(it - list_.begin());
    std::rotate(list_.begin(), it, it + 1);
    return d;
  }
  bool seen(uint64_t id) const { return std::find(list_.begin(), list_.end(), static_cast<uint32_t>(id)) != list_.end(); }
  size_t size() const { return list_.size(); }
  const std::vector<uint32_t>& most_recent_first() const { return list_; }

 private:
  std::vector<uint32_t> list_;
};

// A stream mixing uniform references over all ids (gaps across several 32768-timestamp super
// blocks once ids > 16384), a small hot set (gaps of a few words) and runs of one id.
std::vector<uint64_t> mixed_stream(uint64_t ids, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> s(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = rng() % 8;
    s[i] = k < 4 ? rng() % ids : k < 7 ? rng() % std::min<uint64_t>(ids, 24) : (i ? s[i - 1] : 0);
  }
  return s;
}

// The references through the move-to-front list, their distances into `want`.
void feed_list(MoveToFront& mtf, StackDistanceHistogram& want, const uint64_t* refs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t d = mtf.reference(refs[i]);
    if (d == detail::MattsonStack::kCold)
      want.add_cold();
    else
      want.add(d);
  }
}

// The stack after a stream against the move-to-front list fed the same references: the
// tallied histogram (bins, cold references, largest distance) and the LRU order handed to SHARDS
// (oldest first: the list read backwards).
void expect_stack_matches(const detail::MattsonStack& stack, detail::DistanceTally& tally,
                          const StackDistanceHistogram& want, const MoveToFront& mtf, uint64_t ids) {
  StackDistanceHistogram got;
  tally.add_to(got);
  EXPECT_EQ(got.bins(), want.bins()) << "ids " << ids;
  EXPECT_EQ(got.cold(), want.cold()) << "ids " << ids;
  EXPECT_EQ(got.max_distance(), want.max_distance()) << "ids " << ids;
  std::vector<uint64_t> order;
  stack.for_each_oldest_first([&](uint64_t id) { order.push_back(id); });
  std::vector<uint64_t> expect(mtf.most_recent_first().rbegin(), mtf.most_recent_first().rend());
  EXPECT_EQ(order, expect) << "ids " << ids;
}

void distances_match_move_to_front() {
  for (const uint64_t ids : {uint64_t{1}, uint64_t{5}, uint64_t{700}, uint64_t{9000}, uint64_t{70000}}) {
    const size_t n = ids >= 70000 ? 160000 : 60000;
    const auto s = mixed_stream(ids, n, ids * 31 + 7);
    std::mt19937_64 rng(ids);
    detail::MattsonStack stack;
    detail::DistanceTally tally;
    MoveToFront mtf;
    StackDistanceHistogram want;
    for (size_t off = 0; off < n;) {
      // batches of random length, from 1 reference to several compactions' worth
      const size_t len = std::min<size_t>(n - off, 1 + rng() % (rng() % 4 ? 300 : 20000));
      ASSERT_EQ(stack.reference_batch(s.data() + off, len, tally), len);
      feed_list(mtf, want, s.data() + off, len);
      off += len;
      // now and then one reference through the single-reference path (checked here, in
      // neither histogram)
      if (off < n && rng() % 3 == 0) {
        ASSERT_EQ(stack.reference(s[off]), mtf.reference(s[off])) << "ids " << ids << " at " << off;
        ++off;
      }
    }
    EXPECT_EQ(stack.distinct(), mtf.size());
    expect_stack_matches(stack, tally, want, mtf, ids);
  }
}

TEST(MattsonBatchTest, DistancesMatchMoveToFrontOnRandomBatches) { distances_match_move_to_front(); }

// The loop built for the baseline target (software popcount, no vectors), which machines
// without popcnt or AVX2 run: the same distances.
TEST(MattsonBatchTest, BaselineLoopMatchesMoveToFront) {
  detail::MattsonStack::use_baseline_loop_for_test(true);
  distances_match_move_to_front();
  detail::MattsonStack::use_baseline_loop_for_test(false);
}

// Whole chunks of 2048 references on a few thousand ids, old markers and references within the
// chunk interleaved at random: the chunk loop's pass 1 then tells them apart without a branch
// (MattsonStack::chunk_mixed_). On 200 ids every distance is below 256, a bin of its own, so
// the tally is the exact multiset of distances.
void whole_chunks_match_move_to_front() {
  for (const uint64_t ids : {uint64_t{200}, uint64_t{3000}, uint64_t{20000}}) {
    const size_t n = 60000;
    const auto s = mixed_stream(ids, n, ids * 17 + 1);
    std::mt19937_64 rng(ids + 1);
    detail::MattsonStack stack;
    detail::DistanceTally tally;
    MoveToFront mtf;
    StackDistanceHistogram want;
    for (size_t off = 0; off < n;) {
      const size_t len = std::min<size_t>(n - off, 2048 + rng() % 6000);
      ASSERT_EQ(stack.reference_batch(s.data() + off, len, tally), len);
      feed_list(mtf, want, s.data() + off, len);
      off += len;
    }
    expect_stack_matches(stack, tally, want, mtf, ids);
  }
}

TEST(MattsonBatchTest, WholeChunksOfInterleavedReferencesMatchMoveToFront) { whole_chunks_match_move_to_front(); }

TEST(MattsonBatchTest, BaselineLoopOnWholeChunksMatchesMoveToFront) {
  detail::MattsonStack::use_baseline_loop_for_test(true);
  whole_chunks_match_move_to_front();
  detail::MattsonStack::use_baseline_loop_for_test(false);
}

TEST(MattsonBatchTest, StopsAtTheFirstNewIdBeyondMaxDistinct) {
  const auto s = mixed_stream(5000, 40000, 3);
  for (const uint64_t limit : {uint64_t{1}, uint64_t{24}, uint64_t{1000}, uint64_t{4999}}) {
    detail::MattsonStack stack;
    detail::DistanceTally tally;
    MoveToFront mtf;
    size_t want = 0;  // the brute force's stopping point
    while (want < s.size() && (mtf.size() < limit || mtf.seen(s[want]))) mtf.reference(s[want++]);
    size_t done = 0;
    for (size_t off = 0; off < s.size(); off += 777) {
      const size_t len = std::min<size_t>(777, s.size() - off);
      const size_t k = stack.reference_batch(s.data() + off, len, tally, limit);
      done += k;
      if (k < len) break;
    }
    EXPECT_EQ(done, want) << limit;
    EXPECT_EQ(stack.distinct(), std::min<uint64_t>(limit, mtf.size())) << limit;
    EXPECT_EQ(tally.cold, mtf.size()) << limit;
    EXPECT_EQ(tally.hits + tally.cold, want) << limit;
  }
}

// The ingestor's histogram, bin for bin, against the brute force over the in-range rows.
StackDistanceHistogram brute_histogram(const std::vector<int64_t>& t, uint64_t rows) {
  MoveToFront mtf;
  StackDistanceHistogram h;
  for (int64_t x : t) {
    if (x < 0 || static_cast<uint64_t>(x) >= rows) continue;
    const uint64_t d = mtf.reference(static_cast<uint64_t>(x));
    if (d == detail::MattsonStack::kCold)
      h.add_cold();
    else
      h.add(d);
  }
  return h;
}

TEST(MattsonBatchTest, IngestorHistogramsMatchBruteForce) {
  struct Case {
    uint64_t rows;
    uint64_t distinct_limit;  // large tables: the exact prefix's bound (not reached here)
    const char* what;
  };
  // 3000 rows: an exact table; 2^18 rows with a 2^14 limit: rows as the stack's ids; 2^18 + 16
  // rows with the same limit: the row map (2^18 / 16 is exactly the limit, see ingestor.cpp).
  for (const Case c : {Case{3000, 0, "exact table"}, Case{uint64_t{1} << 18, uint64_t{1} << 14, "rows as ids"},
                       Case{(uint64_t{1} << 18) + 16, uint64_t{1} << 14, "row map"}}) {
    auto t = testing::zipf_trace(std::min<uint64_t>(c.rows, 20000), 0.9, 120000, c.rows);
    for (size_t i = 0; i < t.size(); i += 53) t[i] = i % 2 ? -3 : static_cast<int64_t>(c.rows + i);  // out of range
    StatsConfig cfg;
    if (c.distinct_limit) cfg.exact_lru_distinct_limit = c.distinct_limit;
    TableIngestor ing(c.rows, cfg);
    StackDistanceHistogram got;
    std::mt19937_64 rng(c.rows);
    for (size_t off = 0; off < t.size();) {
      const size_t len = std::min<size_t>(t.size() - off, 1 + rng() % 9000);
      ing.add(t.data() + off, len);
      off += len;
      if (rng() % 4 == 0) got.merge(ing.take_delta().stack_distances());
    }
    got.merge(ing.take_delta().stack_distances());
    const StackDistanceHistogram want = brute_histogram(t, c.rows);
    EXPECT_EQ(got.bins(), want.bins()) << c.what;
    EXPECT_EQ(got.cold(), want.cold()) << c.what;
    EXPECT_EQ(got.max_distance(), want.max_distance()) << c.what;
  }
}

// Past the distinct limit the large table's sampler takes over from the stack's LRU order:
// rows as ids and the row map hand over the same order, so the whole curve is the same.
TEST(MattsonBatchTest, RowsAsIdsAndRowMapHandOverAlike) {
  const auto t = testing::zipf_trace(100000, 0.8, 300000, 9);
  StatsConfig cfg;
  cfg.exact_lru_distinct_limit = uint64_t{1} << 14;
  TableIngestor direct(uint64_t{1} << 18, cfg), mapped((uint64_t{1} << 18) + 16, cfg);
  for (size_t off = 0; off < t.size(); off += 4099) {
    const size_t len = std::min<size_t>(4099, t.size() - off);
    direct.add(t.data() + off, len);
    mapped.add(t.data() + off, len);
  }
  const TableAggregate a = direct.take_delta(), b = mapped.take_delta();
  EXPECT_EQ(a.stack_distances().bins(), b.stack_distances().bins());
  EXPECT_EQ(a.stack_distances().cold(), b.stack_distances().cold());
  EXPECT_EQ(a.stack_distances().max_distance(), b.stack_distances().max_distance());
  EXPECT_GT(a.unique_rows(), cfg.exact_lru_distinct_limit);  // the hand-over happened
}

}  // namespace
}  // namespace edo::stats
