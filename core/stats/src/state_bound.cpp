// The memory bound of one table's statistics and the config that fits a budget (the
// tracer's EDO_MAX_MEMORY_MB). The counts follow the data structures in internal.h; the
// tracer's memory test (tests/integration/tracer) checks them against a real job's RSS.
#include <algorithm>

#include "internal.h"

namespace edo::stats {
namespace {

constexpr uint64_t kMaxVarint = 10;  // bytes of the widest varint (a 64-bit count)
constexpr uint32_t kMinCmsWidth = 1u << 10, kMinTopK = 16, kMinHll = 10, kMinWindows = 8, kMinDriftTopK = 16;
constexpr double kMinShardsRate = 1.0 / (1u << 16);
constexpr uint64_t kMinOrderedRefs = 4096;

uint64_t pow2_at_least(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

uint64_t hist_bytes(uint64_t rows) { return uint64_t{8} * (StackDistanceHistogram::bin_of(std::max<uint64_t>(rows, 1)) + 1); }

struct Parts {
  uint64_t counts = 0, topk = 0, hll = 0, windows = 0, lru = 0, order = 0, fixed = 0;
  // Of these, what a table holds only while it counts a batch or is flushed (a tracer does
  // one table at a time: it holds the largest scratch once, state_scratch_bytes()).
  uint64_t scratch = 0;
  uint64_t total() const { return counts + topk + hll + windows + lru + order + fixed; }
};

// Hashed exact counts of d rows read (ExactCounts::start_counting): the table (12-byte slots,
// at least 3/4 ... 3/8 full: 32 bytes per row, 48 while it doubles), the (row, count) list a cut
// makes (16), a staged merge's list and its inputs (64), the serialized delta at its widest
// varints and the string's growth (40): 112 bytes per row read, more than the 42 a dense row
// costs at its worst but only up to rows/8 of them (then dense).
uint64_t hashed_counts_bytes(uint64_t d) { return d * 112 + 64 * 12 * 2; }
// Of those, held between flushes: the table (32) and the serialized delta waiting to be sent
// (20); the rest (the table's growth, the cut's list, the merge) only while it works.
uint64_t hashed_counts_scratch(uint64_t d) { return d * 60; }
// The serialized delta's part (StateNeed::idle: a table whose delta was taken and written holds
// none until it counts again).
uint64_t hashed_counts_delta(uint64_t d) { return d * 20; }

Parts parts_of(uint64_t rows, const StateNeed& need, const StatsConfig& c) {
  Parts p;
  const bool exact = rows <= c.exact_rows_limit;
  const uint64_t d = std::min(rows, need.distinct);
  if (exact) {
    // Dense uint32 counts in the segment, the cut's copy and the staged delta, the (row,
    // count) list a drift window's top rows are picked from (16 bytes per row read), the
    // serialized delta and the string's growth. Measured at its worst (every row read in
    // every flush): 42 bytes per row (tests/unit/stats_memory); a third more is kept.
    const uint64_t dense = rows * 56 + 3 * (rows / detail::ExactCounts::kBlockRows + 1);
    using E = detail::ExactCounts;
    if (rows <= E::kAlwaysDenseRows) p.counts = dense;
    else if (d * E::kDenseShare <= rows)
      p.counts = hashed_counts_bytes(d) - (need.idle ? hashed_counts_delta(d) : 0), p.scratch = hashed_counts_scratch(d);
    else p.counts = dense + hashed_counts_bytes(rows / E::kDenseShare + 1);  // the hash while it turns dense
  } else {
    const uint64_t w = pow2_at_least(std::max<uint32_t>(c.cms_width, 1)), d = std::clamp<uint32_t>(c.cms_depth, 1, 16);
    p.counts = w * d * (3 * 8 + kMaxVarint);
    // Space-saving: (row, count) heap plus an open-addressing map of 2..4 slots per entry
    // (8 + 4 bytes each), three aggregates, and the serialized list.
    const uint64_t k = std::max<uint32_t>(c.top_k, 1);
    p.topk = 3 * (16 * k + 12 * pow2_at_least(std::max<uint64_t>(16, 2 * k))) + 2 * kMaxVarint * k;
    p.hll = 4 * (uint64_t{1} << std::min<uint32_t>(c.hll_precision, 30));
  }
  // Drift: the windows held by the staged delta (each one's rows, the window itself and its
  // place in the doubling vector) and its serialized copy, and the open window's candidates.
  // A window's hot set holds at most drift_top_k rows, and never more than the table has.
  // The open window's candidates (TableIngestor's window_acc): up to 2 x 4 x drift_top_k
  // (row, count) pairs kept and a segment's 4 x drift_top_k top rows appended, each no more
  // than the rows read, in a doubling vector.
  const uint64_t hot = std::min<uint64_t>(c.drift_top_k, std::max<uint64_t>(d, 1));
  const uint64_t cand = 4 * uint64_t{std::max<uint32_t>(c.drift_top_k, 1)};
  p.windows = uint64_t(c.max_windows) * (hot * (8 + kMaxVarint) + 3 * sizeof(HotSetWindow) + 32) +
              2 * 16 * (std::min(2 * cand, std::max<uint64_t>(d, 1)) + std::min(cand, std::max<uint64_t>(d, 1)));
  // The SHARDS sampler exists once an exact prefix can hand over (or there is none).
  const bool sampler = c.track_lru && rows > c.exact_lru_rows_limit &&
                       (c.exact_lru_distinct_limit == 0 || d > c.exact_lru_distinct_limit ||
                        need.refs > detail::exact_lru_max_lookups);
  // Histograms: an exact stack's distances are below the rows it has seen, and its tally's bins
  // reach the stack's capacity (4x its live rows, at least 4096: MattsonStack::compact); a
  // sampler's estimates reach the table's rows. A table that read 2,000 of its million rows
  // holds 4 x 7 KiB of bins, not 4 x 14 KiB. Only for exact tables, whose rows read the tracer
  // knows (a sketched table is held to all its rows after its first batch: a bound that grew
  // then would refuse its second batch after placing it at the first).
  const uint64_t hist_rows = sampler || !exact ? rows : std::min(rows, std::max<uint64_t>(4096, 4 * d + 128));
  // The ingestor's chunk buffers serve the LRU curve and a sketch's counting: an exact table
  // without a curve (fitted down to none, or shed by the tracer) has none.
  const uint64_t chunk_bufs = c.track_lru || !exact ? 2 * 8 * detail::ingest_chunk(rows, c) : 0;
  // The aggregates' small parts and allocator slack: 256 KiB, less for a small table, whose
  // parts are all small (measured: tests/unit/stats_memory, StateBound.CoversWhatASmallTableAllocates).
  p.fixed += 4 * hist_bytes(hist_rows) + chunk_bufs +
             std::min<uint64_t>(256 << 10, (24 << 10) + (c.track_lru ? 64 * d : 16 * d));
  if (c.track_lru) {
    // The ordered sample: at most ordered_sample_refs references pending (16 bytes each, and
    // the vector's doubling), the staged delta's copy, and the serialized delta (two varints).
    p.order = c.ordered_sample_refs * (2 * 16 + 16 + 2 * kMaxVarint);
    if (rows <= c.exact_lru_rows_limit) {
      // Mattson stack: last timestamp per row, owner per timestamp (twice the live rows, and
      // the copy compaction makes), live-marker bits.
      p.lru = rows * 2 * 4 + d * (3 * 2 * 4 + 1);
      // The stack's smallest capacity (1024 timestamps: owners and their copy, live markers).
      p.lru += 2 * 4 * 1024 + 1024;
    } else {
      // The exact stack in front of the sampler (exact_lru_distinct_limit): per distinct row
      // the row -> id map (2..4 slots of 12 bytes, and the old table while it grows), the
      // id -> row list (doubling), the Mattson stack entries, and the LRU order handed to the
      // sampler at the switch, when both exist; once it read rows/16 rows the stack's ids are
      // the rows (an array of 4 bytes per row, and its growth).
      const uint64_t prefix = std::min(d, c.exact_lru_distinct_limit);
      p.lru = prefix * (72 + 16 + 2 * 4 + 3 * 2 * 4 + 1 + 8);
      if (prefix > 0 && prefix * 16 > rows) p.lru += rows * 2 * 4;
      if (!sampler) return p;
      using S = detail::ShardsSampler;
      p.fixed += S::kHotSlots * (16 + 8 + 4 + 2) + 8 * ((S::kReuseCopies - 1) * StackDistanceHistogram::kExactBelow +
                                                          StackDistanceHistogram::bin_of(UINT64_MAX) + 1) +
                 S::kWindow * (8 + 8) + 4 * S::kWindow * (8 + 4) + S::kClasses * (hist_bytes(rows) + 16) + 1024 * 12;
      // The sampler's own counts (classes and hot rows; exact mode) and the estimate it
      // handed out last (see ShardsSampler::flush_segment()).
      if (rows <= c.exact_rows_limit) p.fixed += 4 * std::min(rows, S::kCountSlots);
      p.fixed += hist_bytes(rows);
      // Per sampled row: the row -> id map (2..4 slots of 12 bytes, and the old table while it
      // grows), its last time (doubling vector), and its Mattson stack entries (as above).
      // Rows are sampled by a hash below rate: expected rate x rows of them, 1/8 margin.
      // Only rows read can be sampled.
      const double sampled = std::min<double>(double(d), c.shards_rate * double(d) * 1.125 + 64);
      p.lru += uint64_t(sampled * (72 + 16 + 2 * 4 + 3 * 2 * 4 + 1));
    }
  }
  return p;
}

}  // namespace

uint64_t state_bound_bytes(uint64_t rows, const StateNeed& need, const StatsConfig& config) {
  return parts_of(rows, need, config).total();
}

uint64_t state_bound_bytes(uint64_t rows, const StatsConfig& config) { return state_bound_bytes(rows, StateNeed{}, config); }

uint64_t state_scratch_bytes(uint64_t rows, const StateNeed& need, const StatsConfig& config) {
  return parts_of(rows, need, config).scratch;
}

namespace {
StatsConfig shrink_parts(uint64_t rows, const StateNeed& need, StatsConfig c, uint64_t budget);
}

StatsConfig fit_state_to(uint64_t rows, const StatsConfig& config, uint64_t budget) {
  return fit_state_to(rows, StateNeed{}, config, budget);
}

StatsConfig fit_state_to(uint64_t rows, const StateNeed& need, const StatsConfig& config, uint64_t budget) {
  auto state_bound_bytes = [&](uint64_t r, const StatsConfig& k) { return stats::state_bound_bytes(r, need, k); };
  auto parts_of = [&](uint64_t r, const StatsConfig& k) { return stats::parts_of(r, need, k); };
  auto shrink = [&](const StatsConfig& k) { return shrink_parts(rows, need, k, budget); };
  StatsConfig c = config;
  if (state_bound_bytes(rows, c) <= budget) return c;
  if (rows <= c.exact_rows_limit && rows > 0) {
    // A table is sketched only where that saves memory: its exact counts are larger than a
    // sketch at its smallest (count-min, top-K, HyperLogLog). A small table stays exact and
    // gives up other parts instead: its counts are the cheapest part it has.
    StatsConfig sketched = c;
    sketched.exact_rows_limit = rows - 1;
    StatsConfig smallest = sketched;
    smallest.cms_width = kMinCmsWidth;
    smallest.top_k = kMinTopK;
    smallest.hll_precision = kMinHll;
    const Parts s = parts_of(rows, smallest);
    // Held to what it read (a tracer's table, need.distinct given), its counts follow the rows
    // read and are never sketched: the other parts (the ordered sample, drift windows, the LRU
    // curve) shrink instead, and the tracer makes room by taking other tables' LRU curves.
    const bool may_sketch = need.distinct == UINT64_MAX && parts_of(rows, c).counts > s.counts + s.topk + s.hll;
    if (may_sketch) {
      c = sketched;
      if (state_bound_bytes(rows, c) <= budget) return c;
    }
  }
  return shrink(c);
}

namespace {
// Halves the largest part of c's bound that can still shrink, in turn, until it fits `budget`
// or nothing can shrink (the LRU curve goes last).
StatsConfig shrink_parts(uint64_t rows, const StateNeed& need, StatsConfig c, uint64_t budget) {
  auto state_bound_bytes = [&](uint64_t r, const StatsConfig& k) { return stats::state_bound_bytes(r, need, k); };
  auto parts_of = [&](uint64_t r, const StatsConfig& k) { return stats::parts_of(r, need, k); };
  while (state_bound_bytes(rows, c) > budget) {
    const Parts p = parts_of(rows, c);
    const bool sketch = rows > c.exact_rows_limit;
    const bool shards = c.track_lru && rows > c.exact_lru_rows_limit;
    // Halve the largest part that can still shrink.
    struct Cand {
      uint64_t bytes;
      bool can;
      int which;
    };
    Cand cands[] = {
        {sketch ? p.counts : 0, sketch && c.cms_width > kMinCmsWidth, 0},
        {p.topk, sketch && c.top_k > kMinTopK, 1},
        {p.hll, sketch && c.hll_precision > kMinHll, 2},
        {p.windows, c.max_windows > kMinWindows || c.drift_top_k > kMinDriftTopK, 3},
        // the exact stack's bound before the sampling rate (equal bytes: the first wins)
        {shards ? p.lru : 0, shards && c.exact_lru_distinct_limit > 0, 5},
        {shards ? p.lru : 0, shards && c.shards_rate > kMinShardsRate, 4},
        {p.order, c.track_lru && c.ordered_sample_refs > kMinOrderedRefs, 6},
    };
    const Cand* best = nullptr;
    for (const auto& k : cands)
      if (k.can && (!best || k.bytes > best->bytes)) best = &k;
    if (!best) {
      if (!c.track_lru) break;
      c.track_lru = false;  // the LRU curve goes last
      continue;
    }
    switch (best->which) {
      case 0: c.cms_width = std::max(kMinCmsWidth, c.cms_width / 2); break;
      case 1: c.top_k = std::max(kMinTopK, c.top_k / 2); break;
      case 2: c.hll_precision -= 1; break;
      case 3:
        if (c.max_windows > kMinWindows) c.max_windows = std::max(kMinWindows, c.max_windows / 2);
        else c.drift_top_k = std::max(kMinDriftTopK, c.drift_top_k / 2);
        break;
      case 4: c.shards_rate = std::max(kMinShardsRate, c.shards_rate / 2); break;
      case 6: c.ordered_sample_refs = std::max(kMinOrderedRefs, c.ordered_sample_refs / 2); break;
      default:  // the exact prefix of the stream goes first: the sampled curve stays
        c.exact_lru_distinct_limit = c.exact_lru_distinct_limit < 2048 ? 0 : c.exact_lru_distinct_limit / 2;
        break;
    }
  }
  return c;
}

}  // namespace

}  // namespace edo::stats
