// edo statistics engine: the definitions of docs/stats.md, used identically by the
// tracer inside the job (libedo_trace.so), by `edo synth`, by the collector and by analysis.
//
// Pure C++20 on the standard library only: this code is linked into libedo_trace.so, which
// lives inside someone else's process and may depend on libc and libstdc++ alone.
//
// Two halves:
//  * TableAggregate: everything that is *mergeable* about one table's accesses (counts or
//    sketches, unique-row estimator, stack-distance histogram, per-window hot sets).
//    Two aggregates of the same table add up with merge(); they serialize to a compact,
//    versioned byte string (used on the wire and as the database blob).
//  * TableIngestor: the stateful front end that consumes index batches in order. It owns the
//    LRU state (Mattson stack / SHARDS sample) that cannot be merged, and hands out deltas
//    (TableAggregate holding only what arrived since the last take_delta()).
//  * summarize(): derived statistics (coverage curve, Zipf fit, LRU hit-rate curve, drift)
//    computed from a (merged) aggregate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edo/stats/ordered_sample.h"

namespace edo::stats {

// Tunables. Defaults as in docs/stats.md; the tracer fills them from EDO_* variables.
struct StatsConfig {
  // Tables with at most this many rows get exact per-row counts (EDO_EXACT_ROWS).
  uint64_t exact_rows_limit = uint64_t{1} << 26;
  // Space-saving top-K size for sketched tables (EDO_TOPK).
  uint32_t top_k = uint32_t{1} << 16;
  // Count-min sketch shape for sketched tables.
  uint32_t cms_width = uint32_t{1} << 20;
  uint32_t cms_depth = 4;
  // HyperLogLog precision (2^p registers) for sketched tables.
  uint32_t hll_precision = 14;
  // Tables with at most this many rows get exact Mattson stack distances; above it SHARDS
  // fixed-rate spatial sampling (hash(row) mod 2^24 < rate * 2^24) with the rate below, plus
  // post-stratification by row frequency and exact reuse times for hot rows (docs/stats.md,
  // "LRU hit-rate curve"): mean absolute error of the curve <= 0.01 on Zipf traces from 1 row
  // to all rows (tests/unit/stats ShardsTest). 1 % keeps the sampled stack at ~1 % of the
  // distinct rows (670 K entries for 2^26 rows).
  uint64_t exact_lru_rows_limit = uint64_t{1} << 16;
  // Larger tables still get exact stack distances while the stream has read at most this many
  // distinct rows (a row -> id map in front of the same Mattson stack, ~120 bytes per distinct
  // row at worst: 127 MiB for 2^20). When the stream reads one more, the stack's LRU order
  // seeds the SHARDS sampler and the rest of the stream is sampled; references counted before
  // the switch keep their exact distances. 0: SHARDS from the first reference.
  uint64_t exact_lru_distinct_limit = uint64_t{1} << 20;
  double shards_rate = 0.01;
  // Whether the ingestor computes stack distances at all (false: counts only; used by the
  // benchmark to time the counting path alone, and by callers that do not want the curve).
  bool track_lru = true;
  // References of the ordered sample (ordered_sample.h, docs/stats.md "Ordered sample"): at
  // most this many of the whole stream are kept (16 bytes each while held); 0: none is taken.
  // Taken only with track_lru (it serves the same purpose: cache hit rates).
  uint64_t ordered_sample_refs = uint64_t{1} << 16;
  // Rows kept per drift window (the window's hot set).
  uint32_t drift_top_k = 1024;
  // At most this many drift windows are kept; when full, the oldest windows are dropped
  // (window_index keeps counting, so gaps are visible to readers).
  uint32_t max_windows = 512;
};

// Stack-distance histogram with log-linear bins (HDR style): distances below 256 are exact,
// above that each power of two is split into 128 sub-bins (relative bin width < 0.8 %).
// Distances are in *rows* (already scaled by 1/rate for SHARDS samples).
class StackDistanceHistogram {
 public:
  static constexpr uint32_t kExactBelow = 256;
  static constexpr uint32_t kSubBinsPerOctave = 128;

  void add(uint64_t distance, double weight = 1.0);
  void add_cold(double weight = 1.0);  // first reference of a row (infinite distance)
  void merge(const StackDistanceHistogram& other);
  // Weighted number of references with stack distance < cache_rows (linear interpolation
  // inside a bin), i.e. the LRU hits of a fully associative cache of `cache_rows` rows.
  // The bin that holds the largest recorded distance is treated as ending right after it, so
  // hits_below(cache >= max_distance()+1) is exactly total() - cold().
  double hits_below(double cache_rows) const;
  // Largest distance added (0 when none).
  uint64_t max_distance() const { return max_distance_; }
  double total() const;  // all references, cold included
  double cold() const { return cold_; }
  bool empty() const { return total() == 0.0; }

  // Below kExactBelow the distance itself; above, kExactBelow + (o - 8) kSubBinsPerOctave + the
  // 7 bits after the leading one, o = floor(log2 d). Without a branch (the stacks' loops meet
  // distances on both sides at random): with o = max(7, floor(log2 d)) both cases are
  // 128 o - 896 + (d >> (o - 7)).
  static uint32_t bin_of(uint64_t distance) {
    static_assert(kExactBelow == 256 && kSubBinsPerOctave == 128, "the formula below");
    const uint32_t z = static_cast<uint32_t>(__builtin_clzll(distance | 128));  // 63 - o
    return ((63u - z) << 7) - 896u + static_cast<uint32_t>(distance >> (56u - z));
  }
  static uint64_t bin_lower(uint32_t bin);  // smallest distance in bin
  static uint64_t bin_upper(uint32_t bin);  // one past the largest distance in bin

  const std::vector<double>& bins() const { return bins_; }
  // max_distance defaults to "unknown" (the upper end of the last nonempty bin).
  void set(std::vector<double> bins, double cold, uint64_t max_distance = UINT64_MAX);
  void clear() { bins_.clear(); cold_ = 0.0; max_distance_ = 0; }

 private:
  std::vector<double> bins_;  // grows on demand
  double cold_ = 0.0;
  uint64_t max_distance_ = 0;
};

// One window's hot set: the `drift_top_k` most-read rows of that window.
struct HotSetWindow {
  uint64_t window_index = 0;   // monotonically increasing per table
  uint64_t lookups = 0;        // lookups inside the window
  std::vector<uint64_t> rows;  // sorted ascending
};

enum class CountMode : uint8_t { kExact = 0, kSketch = 1 };

// Mergeable aggregate of one table's accesses.
class TableAggregate {
 public:
  TableAggregate();
  TableAggregate(uint64_t rows, const StatsConfig& config);
  ~TableAggregate();
  TableAggregate(const TableAggregate&);
  TableAggregate& operator=(const TableAggregate&);
  TableAggregate(TableAggregate&&) noexcept;
  TableAggregate& operator=(TableAggregate&&) noexcept;

  uint64_t rows() const;
  CountMode mode() const;
  uint64_t lookups() const;
  // Indices outside [0, rows) seen (not counted anywhere else).
  uint64_t out_of_range() const;

  // Exact count (exact mode) or count-min estimate (sketch mode) of one row.
  uint64_t count(uint64_t row) const;
  // Rows read at least once: exact, or HyperLogLog estimate in sketch mode.
  uint64_t unique_rows() const;
  // Nonzero row counts sorted descending (exact mode: all of them; sketch mode: the top-K
  // summary's counts). The basis of coverage and the Zipf fit.
  std::vector<uint64_t> counts_descending() const;
  // The most-read rows, (row, count) pairs, descending by count, at most k of them.
  std::vector<std::pair<uint64_t, uint64_t>> top_rows(size_t k) const;
  // Exact mode: calls f(row, count) for every row with a nonzero count, rows ascending
  // (replaces exact_counts(), a dense vector<uint64_t>: 512 MiB for 2^26 rows). Sketch
  // mode: the top-K summary's (row, estimated count) pairs, rows ascending.
  void for_each_nonzero(const std::function<void(uint64_t row, uint64_t count)>& f) const;

  const StackDistanceHistogram& stack_distances() const;
  const std::vector<HotSetWindow>& windows() const;
  // The ordered sample of the stream (ordered_sample.h); nullptr when none was taken (older
  // recordings, track_lru off). Deltas of one ingestor merge in order into the whole stream's;
  // a merge of stretches that do not join (two processes) leaves it marked invalid.
  const OrderedSample* ordered_sample() const;
  // Frees the ordered sample (decoded or still encoded) for a reader done with it (the tuner
  // after a table's held-out replay: 1.6 GB of tune's memory at 10,000 tables, issue 31); from
  // then on there is none (nullptr, and serialize() writes none). Only when no copy shares this
  // aggregate's state (nothing would be freed): returns whether it was freed.
  bool release_ordered_sample();

  // Adds `other` (same table shape and mode) into this aggregate. Returns false (and
  // changes nothing) if shapes or modes disagree.
  bool merge(const TableAggregate& other);
  bool empty() const;  // nothing recorded
  void clear();        // back to empty, same shape

  // Versioned, checksum-free byte encoding (the wire frame adds its own checksum).
  // Exact counts are stored sparsely (varint row gaps) when that is smaller.
  std::string serialize() const;
  // Returns false on malformed input (never throws, never reads out of bounds).
  static bool deserialize(std::string_view bytes, TableAggregate& out);
  // The same checks and the same values, but the counts and the ordered sample stay in their
  // encoded form (2-5 bytes per row or reference instead of 16) until first needed: count()
  // and ordered_sample() decode their part and keep it; counts_descending(), top_rows() and
  // for_each_nonzero() decode the counts for the call only; merge(), clear() and impl()
  // decode everything. For readers of many tables (edo report, the dashboard: issue 31).
  // keep_sample false: the ordered sample is dropped unread (ordered_sample() is nullptr and
  // serialize() writes none; only its header is checked), for a reader that will not ask for it.
  static bool deserialize_lazily(std::string_view bytes, TableAggregate& out, bool keep_sample = true);

  // Heap bytes this aggregate's state holds (decoded parts, encoded parts, bookkeeping): what
  // a table costs a reader that keeps it.
  size_t memory_bytes() const;

  // Used by TableIngestor; not for general callers. The non-const one gives this object its
  // own copy first when the state is shared with another copy.
  struct Impl;
  Impl& impl();
  const Impl& impl() const;

 private:
  // Copy-on-write: a copy shares the state until either side changes it (merge, clear,
  // impl()). Readers that keep a table's aggregate beside the profile's (table_views, the
  // report, the dashboard) then hold one copy, not two: at 10,000 tables the copies were
  // most of the report's memory and half its time (issue 31).
  Impl& own();
  std::shared_ptr<Impl> impl_;
};

// ---- Accesses counted elsewhere (a GPU) -----------------------------------------------------
// The tracer counts device indices on the device (profiler/capture/src/device/): per-row
// counters (exact mode) or count-min cells and HyperLogLog registers (sketch mode), plus a
// SHARDS sample of the references, so that the host's work follows the sample, not the
// batches. The rules the device follows and the host relies on:
//  * a reference is sampled iff its row's sampling hash is below the threshold of
//    counted_sample_rate() (row_hash.h: the same test as the CPU path's SHARDS);
//  * `count` of a sampled reference is the row's count including it (exact: the cumulative
//    counter; sketch: the count-min estimate);
//  * of a sampled row's references beyond the kCountedHot-th, only every kCountedThin-th is
//    sampled (the row is hot: its references are estimated from its count, see
//    docs/stats.md "GPU-counted tables"), so one hot sampled row cannot flood the sample.
constexpr uint32_t kCountedHot = 64;
constexpr uint32_t kCountedThin = 16;
constexpr uint32_t kCountedWindow = 2048;  // footprint window length, references

struct SampledRef {
  uint64_t row = 0;
  uint64_t position = 0;  // of the reference among all the table's references (any order here)
  uint32_t count = 0;     // see above
};

// One flush interval of a table counted elsewhere.
struct CountedSegment {
  uint64_t out_of_range = 0;
  // Exact mode: the cumulative per-row counters before and after the segment (rows entries
  // each; after - before, modulo 2^32, is the segment's count of a row).
  const uint32_t* before = nullptr;
  const uint32_t* after = nullptr;
  // Sketch mode: the cumulative count-min cells before and after (cms_depth x cms_width),
  // the HyperLogLog registers (2^hll_precision; a register is the largest rank seen), and
  // rows that may be among the most read in this segment.
  const uint32_t* cms_before = nullptr;
  const uint32_t* cms_after = nullptr;
  const uint32_t* hll = nullptr;
  std::vector<uint64_t> candidates;
  // The segment's SHARDS sample and footprint windows (each kCountedWindow consecutive
  // in-range references, oldest first).
  std::vector<SampledRef> sample;
  std::vector<std::vector<uint64_t>> windows;
};

// The SHARDS rate of a table counted elsewhere: the configured rate, raised for small tables
// so that about 4096 distinct rows are sampled (at most 1).
double counted_sample_rate(uint64_t rows, const StatsConfig& config);
// The device's sampling threshold for that rate: sampled iff (sample_hash & mask) < it.
uint64_t counted_sample_threshold(uint64_t rows, const StatsConfig& config);

// Stateful front end: feed index batches in order, take mergeable deltas.
class TableIngestor {
 public:
  TableIngestor(uint64_t rows, const StatsConfig& config);
  ~TableIngestor();
  TableIngestor(TableIngestor&&) noexcept;
  TableIngestor& operator=(TableIngestor&&) noexcept;

  void add(const int64_t* indices, size_t n);
  void add(const int32_t* indices, size_t n);
  // A segment counted elsewhere (see CountedSegment); the LRU state it needs across segments
  // (the sampled rows' stack, footprint windows) is kept here. Ends the current segment.
  void add_counted(const CountedSegment& segment);
  // Closes the current drift window (the caller decides the cadence: a flush, N steps).
  void close_window();
  // Everything recorded since the previous take_delta(); the ingestor's LRU state is kept.
  TableAggregate take_delta();
  // The references of the whole stream the ordered sample keeps against its bound
  // (StatsConfig::ordered_sample_refs at first; 0 without a sample). raise_...() raises the
  // bound (never lowers it): the tracer starts a table's sample small and raises the bound
  // before the references that need it, as the memory budget allows; the sample is then the
  // one the higher bound would have given from the start.
  uint64_t ordered_sample_kept() const;
  void raise_ordered_sample_limit(uint64_t refs);
  // An upper bound on the distinct rows read so far (what the counts and the exact LRU stack
  // hold a slot for; its rows when nothing tracks them): the `distinct` of StateNeed.
  uint64_t distinct_rows() const;
  // Gives up the LRU curve from here on (its stack or sampler and the ordered sample are
  // freed; distances recorded so far stay) and keeps `drift_top_k` rows per drift window:
  // what a memory budget sheds so that the counts stay exact.
  void shed_lru(uint32_t drift_top_k);
  // Read access to the not-yet-taken delta. Logically const, but it ends the current
  // counting segment (O(rows touched)); not thread-safe, like every other member.
  const TableAggregate& pending() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Memory of one table's statistics, for the tracer's bound (EDO_MAX_MEMORY_MB, docs/memory.md).
// state_bound_bytes(): an upper bound on what a TableIngestor of `rows` rows holds at its
// peak, a flush included: the counting segment, the staged delta, the aggregate a cut makes,
// the serialized delta (at the codec's widest varints), top-K maps, HyperLogLog registers,
// drift windows, and the LRU state (the Mattson stack, or the SHARDS sampler at its expected
// sample size, rate x rows).
uint64_t state_bound_bytes(uint64_t rows, const StatsConfig& config);
// What a table has read, for a bound that follows it (the tracer raises it before each batch:
// distinct read so far + the batch's indices). Defaults: the worst case, every row read and
// an endless stream.
struct StateNeed {
  uint64_t distinct = UINT64_MAX;  // distinct rows read (at most the table's rows)
  uint64_t refs = UINT64_MAX;      // in-range references read
  // Nothing counted since its last delta was taken: hashed counts then hold no serialized delta
  // (it exists from a flush's cut until the flush has written it, for the tables the flush takes).
  bool idle = false;
};
// The bound of a table that has read no more than `need`: exact counts are hashed, ~112 bytes
// per row read (the table, its growth, a cut's (row, count) list, a merge and the serialized
// delta), until rows/8 are read, then dense (56 bytes per row); the exact LRU stack holds 4
// bytes per row plus 25 per row read (8 + 25 per row read); a large table's exact prefix
// ~129 bytes per row read (a row map until rows/16 are read); the SHARDS sampler only
// once the prefix can hand over (more distinct rows than exact_lru_distinct_limit or more
// references than its lookup limit), its sample at rate x the rows read.
uint64_t state_bound_bytes(uint64_t rows, const StateNeed& need, const StatsConfig& config);
// The part of that bound a table holds only while it counts a batch or is flushed (hashed
// counts' growth, a cut's list, a merge): a caller that works on one table at a time holds
// the largest of these once, not one per table.
uint64_t state_scratch_bytes(uint64_t rows, const StateNeed& need, const StatsConfig& config);
// A config whose state_bound_bytes() is at most `budget` when one exists: an exact table that
// does not fit is sketched where that saves memory (its exact counts are larger than the
// smallest sketch; a small table stays exact); then the largest part is halved, in turn (count-min width, top-K
// size, HyperLogLog precision, drift windows, SHARDS rate) down to its minimum, and last the
// LRU curve is given up. The result's bound may still exceed `budget` (all at their minimum):
// the caller checks.
StatsConfig fit_state_to(uint64_t rows, const StatsConfig& config, uint64_t budget);
// The same for a table that has read no more than `need` (the bound it is held to).
StatsConfig fit_state_to(uint64_t rows, const StateNeed& need, const StatsConfig& config, uint64_t budget);

// Derived statistics of one table (docs/stats.md "Summary").
struct CurvePoint {
  double x;  // rows (k or cache size)
  double y;  // share of lookups (coverage) or hit rate
};

struct ZipfFit {
  double alpha = 0.0;      // maximum-likelihood exponent of the rank-frequency curve
  double fit_error = 0.0;  // RMS error of log10(frequency) of the fitted vs observed curve
  bool valid = false;      // false when too few distinct rows to fit
};

struct TableSummary {
  uint64_t rows = 0;
  uint64_t lookups = 0;
  uint64_t unique_rows = 0;
  CountMode mode = CountMode::kExact;
  // Coverage of the top floor(x% * rows) rows, for x = 0.1, 1, 10.
  double coverage_top_0_1pct = 0.0;
  double coverage_top_1pct = 0.0;
  double coverage_top_10pct = 0.0;
  std::vector<CurvePoint> coverage_curve;   // log-spaced k
  ZipfFit zipf;
  // LRU hit rate vs cache size in rows; log-spaced, always including 1, 10, 50, 100 % rows.
  std::vector<CurvePoint> lru_curve;
  double lru_hit_rate_1pct = 0.0;
  double lru_hit_rate_10pct = 0.0;
  double lru_hit_rate_50pct = 0.0;
  double lru_hit_rate_100pct = 0.0;
  // Jaccard overlap of consecutive windows' hot sets: (window_index, jaccard).
  std::vector<CurvePoint> drift;
  double mean_drift_jaccard = 0.0;
};

// Coverage of the top k rows: share of all lookups that go to the k most-read rows.
double coverage_of_top(const TableAggregate& agg, uint64_t k);
// LRU hit rate of a fully associative cache holding cache_rows rows.
double lru_hit_rate(const TableAggregate& agg, double cache_rows);
ZipfFit fit_zipf(const std::vector<uint64_t>& counts_descending);
// The share of lookups that the fitted model (bounded Zipf over ranks 1..ranks, ranks = the
// number of nonzero counts the fit saw) gives rank k: k^-alpha / H(ranks, alpha). Drawing
// lookups * zipf_share(...) over the observed counts shows the fit on a rank-frequency plot.
double zipf_share(double alpha, uint64_t ranks, uint64_t k);
TableSummary summarize(const TableAggregate& agg);
// summarize()'s headline numbers alone, bit for bit the same: rows, lookups, unique_rows, mode,
// coverage_top_* and lru_hit_rate_* (curves, Zipf fit and drift are left empty). For a reader
// of many tables that shows only those (edo diff at 200,000 tables: the fit and the curves
// were most of its time).
TableSummary summarize_headline(const TableAggregate& agg);

// Synthetic Zipf(A) generator (docs/stats.md "Synthetic Zipf(A)"): bounded Zipf over ranks 1..R with
// P(rank k) ~ k^-A, ranks mapped to rows through a seeded random permutation.
// A == 0 gives uniform. Deterministic for a given (rows, alpha, seed).
class ZipfGenerator {
 public:
  ZipfGenerator(uint64_t rows, double alpha, uint64_t seed);
  ~ZipfGenerator();
  ZipfGenerator(ZipfGenerator&&) noexcept;
  void fill(int64_t* out, size_t n);
  uint64_t row_of_rank(uint64_t rank) const;  // rank is 1-based

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edo::stats
