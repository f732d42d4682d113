// The ordered sample (edo/stats/ordered_sample.h, issue 19 point 6): every reference of the
// sampled rows in stream order with its position, whatever the delta cuts; bounded by lowering
// the threshold; carried in the aggregate's bytes (version 2); marked invalid where it is not
// one stream's order.
#include "edo/stats/ordered_sample.h"

#include <gtest/gtest.h>

#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::stats {
namespace {

// Takes deltas every `every` indices and merges them in order, as the collector does.
TableAggregate ingest(const std::vector<int64_t>& stream, uint64_t rows, const StatsConfig& cfg, size_t every) {
  TableIngestor ing(rows, cfg);
  TableAggregate total;
  bool first = true;
  for (size_t off = 0; off < stream.size(); off += every) {
    const size_t n = std::min(every, stream.size() - off);
    ing.add(stream.data() + off, n);
    TableAggregate d = ing.take_delta();
    if (first) total = std::move(d);
    else EXPECT_TRUE(total.merge(d));
    first = false;
  }
  return total;
}

TEST(OrderedSample, KeepsASmallStreamWholeInOrderAcrossDeltas) {
  // Out-of-range indices are no references (no position either).
  const std::vector<int64_t> stream{5, 7, 5, -1, 9, 100000, 7, 5};
  const TableAggregate a = ingest(stream, 16, StatsConfig{}, 3);
  const OrderedSample* s = a.ordered_sample();
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->valid);
  EXPECT_EQ(s->threshold, OrderedSample::kFullThreshold);
  EXPECT_EQ(s->begin, 0u);
  EXPECT_EQ(s->end, 6u);
  const std::vector<uint64_t> rows{5, 7, 5, 9, 7, 5};
  ASSERT_EQ(s->refs.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(s->refs[i].position, i);
    EXPECT_EQ(s->refs[i].row, rows[i]);
  }
}

TEST(OrderedSample, IsBoundedAndHoldsEveryReferenceOfTheRowsBelowItsThreshold) {
  StatsConfig cfg;
  cfg.ordered_sample_refs = 5000;
  const uint64_t rows = 1 << 20;
  ZipfGenerator gen(rows, 0.8, 7);
  std::vector<int64_t> stream(200000);
  gen.fill(stream.data(), stream.size());
  for (size_t every : {size_t{200000}, size_t{7919}}) {
    const TableAggregate a = ingest(stream, rows, cfg, every);
    const OrderedSample* s = a.ordered_sample();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->valid);
    EXPECT_LE(s->refs.size(), cfg.ordered_sample_refs);
    EXPECT_GT(s->refs.size(), cfg.ordered_sample_refs / 4) << "halving stops once the stream's references fit";
    EXPECT_LT(s->threshold, OrderedSample::kFullThreshold);
    std::vector<OrderedRef> expect;
    for (size_t i = 0; i < stream.size(); ++i)
      if (OrderedSample::keeps(static_cast<uint64_t>(stream[i]), s->threshold)) expect.push_back({i, static_cast<uint64_t>(stream[i])});
    ASSERT_EQ(s->refs.size(), expect.size()) << "deltas every " << every;
    for (size_t i = 0; i < expect.size(); ++i) {
      EXPECT_EQ(s->refs[i].position, expect[i].position);
      EXPECT_EQ(s->refs[i].row, expect[i].row);
    }
  }
}

TEST(OrderedSample, TravelsInTheAggregatesBytesAndOlderBytesHaveNone) {
  const std::vector<int64_t> stream{1, 2, 3, 1, 2, 3};
  const TableAggregate a = ingest(stream, 8, StatsConfig{}, 6);
  const std::string bytes = a.serialize();
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 2) << "version 2: with an ordered sample";
  TableAggregate b;
  ASSERT_TRUE(TableAggregate::deserialize(bytes, b));
  ASSERT_NE(b.ordered_sample(), nullptr);
  EXPECT_EQ(b.ordered_sample()->refs.size(), 6u);
  EXPECT_EQ(b.serialize(), bytes);
  // Without a sample (ordered_sample_refs 0, or a recording made before it): version 1.
  StatsConfig none;
  none.ordered_sample_refs = 0;
  const TableAggregate c = ingest(stream, 8, none, 6);
  EXPECT_EQ(c.ordered_sample(), nullptr);
  const std::string old = c.serialize();
  EXPECT_EQ(static_cast<uint8_t>(old[0]), 1);
  TableAggregate d;
  ASSERT_TRUE(TableAggregate::deserialize(old, d));
  EXPECT_EQ(d.ordered_sample(), nullptr);
  // Damage inside the sample is refused, never read past.
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    TableAggregate e;
    EXPECT_FALSE(TableAggregate::deserialize(std::string_view(bytes).substr(0, bytes.size() - cut), e)) << cut;
  }
}

TEST(OrderedSample, TwoStreamsMergedAreNoOneOrder) {
  const std::vector<int64_t> stream{1, 2, 3, 1};
  TableAggregate a = ingest(stream, 8, StatsConfig{}, 4);
  const TableAggregate b = ingest(stream, 8, StatsConfig{}, 4);
  ASSERT_TRUE(a.merge(b));  // another process's stream: positions start at 0 again
  ASSERT_NE(a.ordered_sample(), nullptr);
  EXPECT_FALSE(a.ordered_sample()->valid);
  EXPECT_TRUE(a.ordered_sample()->refs.empty());
  // Counts without a sample (an older tracer's delta) after a sampled one: not one order either.
  StatsConfig none;
  none.ordered_sample_refs = 0;
  TableAggregate c = ingest(stream, 8, StatsConfig{}, 4);
  ASSERT_TRUE(c.merge(ingest(stream, 8, none, 4)));
  EXPECT_FALSE(c.ordered_sample()->valid);
}

TEST(OrderedSample, ReferencesCountedOnADeviceEndTheOrder) {
  StatsConfig cfg;
  TableIngestor ing(4, cfg);
  const int64_t host[] = {0, 1};
  ing.add(host, 2);
  const std::vector<uint32_t> before(4, 0), after{1, 0, 2, 0};
  CountedSegment seg;
  seg.before = before.data();
  seg.after = after.data();
  ing.add_counted(seg);
  const TableAggregate a = ing.take_delta();
  ASSERT_NE(a.ordered_sample(), nullptr);
  EXPECT_FALSE(a.ordered_sample()->valid);
  EXPECT_EQ(a.ordered_sample()->end, 5u);
}


// The sampler's batched loop against its definition, one reference at a time: a reference is
// kept iff its row's hash is below the threshold; one reference too many halves the threshold
// until the whole stream's kept references fit, and drops the pending ones above it. Small
// bounds so that the threshold falls many times, in the middle of batches of every size.
TEST(OrderedSample, TheBatchedLoopKeepsWhatOneReferenceAtATimeKeeps) {
  for (uint64_t bound : {1u, 7u, 64u, 1000u}) {
    std::vector<uint64_t> stream(20000);
    uint64_t x = 0x243f6a8885a308d3ull + bound;
    for (auto& r : stream) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      r = x % 3000;
    }
    // the definition
    uint64_t t = OrderedSample::kFullThreshold;
    std::vector<OrderedRef> want;
    std::vector<uint64_t> t_after(stream.size());  // the threshold once reference p is in
    for (uint64_t p = 0; p < stream.size(); ++p) {
      t_after[p] = t;
      if (!OrderedSample::keeps(stream[p], t)) continue;
      want.push_back({p, stream[p]});
      while (t > 0) {
        uint64_t whole = 0;  // the whole stream's references so far at threshold t
        for (uint64_t q = 0; q <= p; ++q) whole += OrderedSample::keeps(stream[q], t);
        if (whole <= bound) break;
        t >>= 1;
      }
      std::erase_if(want, [&](const OrderedRef& r) { return !OrderedSample::keeps(r.row, t); });
      t_after[p] = t;
    }
    OrderedSampler s(bound);
    std::vector<OrderedRef> got;
    for (size_t off = 0, k = 1; off < stream.size(); off += k, k = k * 3 % 1009 + 1) {
      const size_t n = std::min(k, stream.size() - off);
      s.add(stream.data() + off, n);
      EXPECT_EQ(s.threshold(), t_after[off + n - 1]) << "bound " << bound << " after " << off + n;
      EXPECT_LE(s.kept(), bound);
      if (k % 5 == 0) {
        OrderedSample part = s.take();
        got.insert(got.end(), part.refs.begin(), part.refs.end());
      }
    }
    const OrderedSample last = s.take();
    got.insert(got.end(), last.refs.begin(), last.refs.end());
    // references handed out before a later halving are dropped by the collector's merge
    std::erase_if(got, [&](const OrderedRef& r) { return !OrderedSample::keeps(r.row, s.threshold()); });
    EXPECT_EQ(s.threshold(), t) << "bound " << bound;
    ASSERT_EQ(got.size(), want.size()) << "bound " << bound;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].position, want[i].position);
      EXPECT_EQ(got[i].row, want[i].row);
    }
    EXPECT_EQ(s.kept(), want.size()) << "bound " << bound;
  }
}

}  // namespace
}  // namespace edo::stats
