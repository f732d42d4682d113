// Private building blocks of the statistics engine (not installed, not part of the contract).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <map>
#include <vector>

#include "edo/stats/row_hash.h"
#include "edo/stats/table_stats.h"

namespace edo::stats::detail {

// The row hashes are shared with the GPU counting path (edo/stats/row_hash.h).
using hash::mix64;

// References the ingestor counts at a time (its scratch buffers hold one chunk: 8 bytes per
// reference, twice in sketch mode). A small table with an exact LRU stack takes shorter chunks,
// so that its buffers cost 4 KiB, not 64: its results do not depend on the chunks (the counts,
// the stack and the ordered sample take the references in order).
inline size_t ingest_chunk(uint64_t rows, const StatsConfig& c) {
  return rows < 4096 && rows <= c.exact_lru_rows_limit ? 512 : 4096;
}

// ---- exact per-row counts -----------------------------------------------------------------
// Dense form: uint32 per row; a row's count is lo_[row] + carry_[row] (a map, almost always
// empty). The hot loop has no overflow test: headroom_ bounds how many more increments any
// lo_ can take, and when it runs out fold() moves every lo_ >= 2^31 into carry_ (a scan of
// the dirty blocks at most once per 2^31 indices). Plus one "dirty" byte per block of 2^kBlockShift rows so that extracting what changed
// costs O(rows touched), not O(rows). Sparse form: (row, count) pairs sorted by row, used by
// deltas and by collector-side aggregates until they get dense enough to switch.
// Hashed form (a tracer's counting segment, start_counting()): row -> uint32 count in an
// open-addressing table whose keys stay when a cut takes the counts, so its size is the rows
// read since the start; it turns dense once those exceed rows/8 (kDenseShare), where the
// dense array is no larger and its loop faster. Memory then follows the rows a table read,
// not the rows it registered (issue 31: 10,000 tables, most of their rows never read).
// Sorts (row, count) pairs of distinct rows, every row below `rows`, by row (row_sort.cpp).
void sort_by_row(std::vector<std::pair<uint64_t, uint64_t>>& v, uint64_t rows);

class ExactCounts {
 public:
  static constexpr unsigned kBlockShift = 12;
  static constexpr uint64_t kBlockRows = uint64_t{1} << kBlockShift;
  // Hashed counting turns dense when more than rows / kDenseShare rows were read.
  static constexpr uint64_t kDenseShare = 8;
  // Tables of at most this many rows count dense from the start (16 KiB of counts).
  static constexpr uint64_t kAlwaysDenseRows = 4096;

  void reset(uint64_t rows) { *this = ExactCounts(); rows_ = rows; }
  void make_dense();  // allocates rows_ * 4 bytes (zeroed) if not dense yet
  // Empty counts ready for add_batch(): hashed, or dense for a small table.
  void start_counting();
  bool dense() const { return dense_; }
  bool hashed() const { return hashed_; }
  // Rows the counting form holds a slot for: every row when dense, else the rows read since
  // start_counting() (hashed) or held now (sparse).
  uint64_t rows_held() const { return dense_ ? rows_ : hashed_ ? hsize_ : sparse_.size(); }
  // Slots of the hashed form's table (0 unless hashed).
  uint64_t hash_slots() const { return hkeys_.size(); }
  uint64_t rows() const { return rows_; }
  // The low 32 bits of the dense counts (nullptr when sparse).
  const uint32_t* dense_data() const { return dense_ ? lo_.data() : nullptr; }

  // Counts indices in [0, rows); returns how many were out of range. Dense only.
  uint64_t add_batch(const int64_t* idx, size_t n);
  uint64_t add_batch(const int32_t* idx, size_t n);

  uint64_t get(uint64_t row) const;
  uint64_t nonzero() const;
  uint64_t total() const;
  template <class F>
  void for_each_nonzero(F&& f) const {
    if (dense_) {
      for (size_t b = 0; b < dirty_.size(); ++b) {
        if (!dirty_[b]) continue;
        uint64_t lo = uint64_t{b} << kBlockShift, hi = std::min(rows_, lo + kBlockRows);
        for (uint64_t r = lo; r < hi; ++r)
          if (lo_[r] != 0 || (!carry_.empty() && carry_.count(r))) f(r, get(r));
      }
    } else if (hashed_) {
      for (const auto& [r, c] : hashed_sorted()) f(r, c);
    } else {
      for (const auto& [r, c] : sparse_) f(r, c);
    }
  }
  // Moves all counts out (leaving zeros) into `out` (reset to the same rows), sparse unless
  // dense is smaller. Cost O(touched blocks) unless the result is dense.
  void extract(ExactCounts& out);
  // Adds `o` (same rows). Switches to dense when the sparse form gets larger than dense.
  void merge(const ExactCounts& o);
  void clear();

  // Codec (see aggregate_codec.cpp).
  void encode(std::string& out) const;
  bool decode(std::string_view& in, uint64_t rows);

  // Sparse building (rows must be strictly ascending).
  std::vector<std::pair<uint64_t, uint64_t>>& sparse() { return sparse_; }

 private:
  template <class I>
  uint64_t add_impl(const I* idx, size_t n);
  template <class I>
  uint64_t add_hashed(const I* idx, size_t n);
  // The hashed form's slot of `row`, inserted when absent (growing the table at 3/4 load).
  size_t hash_slot(uint64_t row);
  void hash_grow();
  // The hashed form's nonzero (row, count) pairs in row order.
  std::vector<std::pair<uint64_t, uint64_t>> hashed_sorted() const;
  void densify_from_hashed();
  void densify_from_sparse();
  void set_dense(uint64_t row, uint64_t v);  // dense only; keeps lo_ < 2^31

 public:
  // Moves every lo_ >= 2^31 into carry_ and recomputes headroom_ (public for tests).
  void fold();
  void set_headroom_for_test(uint64_t h) { headroom_ = h; }

  uint64_t rows_ = 0;
  bool dense_ = false;
  std::vector<uint32_t> lo_;
  std::vector<uint8_t> dirty_;
  std::unordered_map<uint64_t, uint64_t> carry_;  // row -> count beyond lo_[row]
  uint64_t headroom_ = UINT32_MAX;                 // increments every lo_ can still take
  std::vector<std::pair<uint64_t, uint64_t>> sparse_;
  // Hashed form: key row + 1 (0 = empty slot), count modulo 2^32 (wraps add 2^32 to carry_).
  bool hashed_ = false;
  std::vector<uint64_t> hkeys_;
  std::vector<uint32_t> hvals_;
  uint64_t hsize_ = 0;
};

// ---- sketches ---------------------------------------------------------------------------
class CountMinSketch {
 public:
  void reset(uint32_t width_pow2, uint32_t depth);
  // Adds c to the row's cells and returns its new estimate (the minimum of them).
  uint64_t add(uint64_t row, uint64_t c = 1);
  // add(rows[i]) for i in order, estimates[i] = its return value. The same results as the
  // loop, with the cells of rows a few positions ahead prefetched: a sketch of a huge table
  // is far larger than the caches, and each add() would otherwise wait on `depth` misses.
  void add_batch(const uint64_t* rows, size_t n, uint64_t* estimates);
  uint64_t estimate(uint64_t row) const;
  bool merge(const CountMinSketch& o);  // false on shape mismatch
  void clear();
  bool empty() const;
  uint32_t width() const { return width_; }
  uint32_t depth() const { return depth_; }
  std::vector<uint64_t>& cells() { return cells_; }
  const std::vector<uint64_t>& cells() const { return cells_; }

 private:
  uint32_t width_ = 0, depth_ = 0;
  std::vector<uint64_t> cells_;  // depth_ * width_
};

// Open-addressing uint64 -> uint32 map (linear probing, backward-shift deletion); a fixed
// capacity of at least twice the number of keys it will hold.
class FlatMap {
 public:
  void reset(size_t max_keys) {
    size_t c = 16;
    while (c < 2 * max_keys) c <<= 1;
    keys_.assign(c, 0);
    vals_.assign(c, 0);
    size_ = 0;
  }
  void clear() { std::fill(keys_.begin(), keys_.end(), 0); size_ = 0; }
  size_t size() const { return size_; }
  size_t heap_bytes() const { return keys_.capacity() * sizeof(uint64_t) + vals_.capacity() * sizeof(uint32_t); }
  // Pointer to the value, or nullptr.
  uint32_t* find(uint64_t k) {
    if (keys_.empty()) return nullptr;
    const uint64_t mask = keys_.size() - 1;
    for (uint64_t s = slot(k);; s = (s + 1) & mask) {
      if (keys_[s] == k + 1) return &vals_[s];
      if (keys_[s] == 0) return nullptr;
    }
  }
  const uint32_t* find(uint64_t k) const { return const_cast<FlatMap*>(this)->find(k); }
  bool contains(uint64_t k) const { return find(k) != nullptr; }
  void set(uint64_t k, uint32_t v) {
    if (keys_.empty()) reset(8);
    const uint64_t mask = keys_.size() - 1;
    uint64_t s = slot(k);
    while (keys_[s] != 0 && keys_[s] != k + 1) s = (s + 1) & mask;
    if (keys_[s] == 0) ++size_;
    keys_[s] = k + 1;
    vals_[s] = v;
  }
  void erase(uint64_t k) {
    if (keys_.empty()) return;
    const uint64_t mask = keys_.size() - 1;
    uint64_t s = slot(k);
    while (keys_[s] != k + 1) {
      if (keys_[s] == 0) return;
      s = (s + 1) & mask;
    }
    // Backward-shift: move later entries of the run into the hole when allowed.
    uint64_t hole = s;
    for (uint64_t j = (s + 1) & mask; keys_[j] != 0; j = (j + 1) & mask) {
      const uint64_t home = slot(keys_[j] - 1);
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        keys_[hole] = keys_[j];
        vals_[hole] = vals_[j];
        hole = j;
      }
    }
    keys_[hole] = 0;
    --size_;
  }

 private:
  uint64_t slot(uint64_t k) const { return mix64(k ^ 0x7f4a7c159e3779b9ULL) & (keys_.size() - 1); }
  std::vector<uint64_t> keys_;  // key + 1, 0 = empty
  std::vector<uint32_t> vals_;
  size_t size_ = 0;
};

// Space-saving top-K (Metwally et al.), min-heap over counters; mergeable as in Agarwal et
// al. "Mergeable summaries": counts of both sides are added (an item missing from a full
// side is credited with that side's minimum, its maximum possible count), then the K
// largest are kept.
class SpaceSaving {
 public:
  void reset(uint32_t k);
  void add(uint64_t row, uint64_t c = 1);
  // Ingest path: one reference of `row` whose count-min estimate (after counting it) is
  // `est`. A row already in the summary is incremented; a new row enters only if `est`
  // beats the minimum (it then replaces it with count `est`, still an overestimate). Most
  // references of cold rows thus cost one hash lookup, not a heap update.
  void offer(uint64_t row, uint64_t est);
  void merge(const SpaceSaving& o);
  void clear();
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  uint32_t capacity() const { return k_; }
  size_t heap_bytes() const { return items_.capacity() * sizeof(items_[0]) + pos_.heap_bytes(); }
  uint64_t min_count() const;  // 0 when not full
  // (row, count) descending by count.
  std::vector<std::pair<uint64_t, uint64_t>> sorted() const;
  // Rebuild from pairs (any order); truncates to capacity.
  void assign(const std::vector<std::pair<uint64_t, uint64_t>>& items);

 private:
  void sift_down(size_t i);
  void sift_up(size_t i);
  void swap_nodes(size_t a, size_t b);
  uint32_t k_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> items_;  // heap by count: (row, count)
  FlatMap pos_;
};

class HyperLogLog {
 public:
  void reset(uint32_t precision);
  void add(uint64_t row) {
    const uint32_t idx = hash::hll_index(row, p_);
    const uint8_t rho = static_cast<uint8_t>(hash::hll_rank(row, p_));
    if (reg_[idx] < rho) reg_[idx] = rho;
  }
  double estimate() const;
  bool merge(const HyperLogLog& o);
  void clear();
  bool empty() const;
  uint32_t precision() const { return p_; }
  std::vector<uint8_t>& registers() { return reg_; }
  const std::vector<uint8_t>& registers() const { return reg_; }

 private:
  uint32_t p_ = 0;
  std::vector<uint8_t> reg_;
};

// ---- Mattson stack distances ------------------------------------------------------------
// Population count without the popcnt instruction (the library is built for baseline x86-64;
// the stack's loops are also compiled with popcnt and picked at load).
// Whether the stack's loops take their popcnt + AVX2 builds (the CPU has them, and no test asked
// for the baseline ones: MattsonStack::use_baseline_loop_for_test).
bool stack_fast_loops();
inline uint64_t popcount_swar(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (x * 0x0101010101010101ull) >> 56;
}

// Integer tally of exact stack distances in StackDistanceHistogram's bins: the exact stack's
// loop does one increment per reference, and add_to() hands the tally to a histogram at a
// segment's cut. The histogram's bins are the same sums (whole numbers below 2^53 add up
// exactly in a double, in any order).
struct DistanceTally {
  std::vector<uint64_t> bins;
  uint64_t cold = 0, hits = 0, max_distance = 0;
  // Makes room for every distance below `bound` (the stack's capacity), so add() need not check.
  void reserve_below(uint64_t bound) {
    const size_t need = size_t{StackDistanceHistogram::bin_of(bound)} + 1;
    if (bins.size() < need) bins.resize(need, 0);
  }
  void add(uint64_t d) {
    ++bins[StackDistanceHistogram::bin_of(d)];
    ++hits;
    max_distance = d > max_distance ? d : max_distance;
  }
  // Adds everything to `h` and clears the tally.
  void add_to(StackDistanceHistogram& h);
};

// Exact LRU stack distances (Mattson), by timestamps: each id's latest reference holds a
// "live" marker at its timestamp; the distance of a reference is the number of live markers
// after the id's previous one (none is at or after the current time). Markers are a bitmap
// with two levels of counts above it (per 512 and per 32768 timestamps). A short gap (under
// 16 words of markers, the common case on skewed traces) is 16 popcounts, no branch; a long
// one is the rest of its word and block (8 popcounts), the rest of its super block (64
// counts, summed whole under a mask: vector adds, no loop exit to mispredict) and the super
// counts after it. Moving a marker is O(1). (A Fenwick tree, three O(log n) walks per
// reference, measured 10-20 % slower on Zipf tables of 1K-64K rows; both are bound by
// mispredicted loop exits.) Timestamps are compacted in place when they run out, keeping the
// capacity at about four times the live ids. reference_batch() takes 2048 references at a time
// offline (stack_chunk.cpp: one sweep of the block counts per chunk instead of a walk per
// reference).
class MattsonStack {
 public:
  static constexpr uint64_t kCold = UINT64_MAX;
  // Returns the stack distance (distinct other ids since the previous reference) or kCold.
  uint64_t reference(uint64_t id);
  // reference() of ids[0], ids[1], ... in order, the distances tallied into `out`, up to the
  // first id never referenced while max_distinct ids are (that one is not referenced).
  // Returns how many ids were referenced.
  size_t reference_batch(const uint64_t* ids, size_t n, DistanceTally& out, uint64_t max_distinct = UINT64_MAX);
  uint64_t distinct() const { return live_; }
  bool seen(uint64_t id) const { return id < last_.size() && last_[id] != 0; }
  // Ids are below this bound (the per-id array then never grows past it).
  void set_id_bound(uint64_t bound) { id_bound_ = bound; }
  // Every stack runs the baseline loop (no popcnt/AVX2) while on: tests of that build.
  static void use_baseline_loop_for_test(bool on);
  // Calls f(id) for every id referenced so far, least recently referenced first (the LRU
  // order that seeds a SHARDS sampler when an exact stack hands over).
  template <class F>
  void for_each_oldest_first(F&& f) const {
    for (uint64_t ts = 0; ts < now_; ++ts)
      if (bits_[ts >> 6] >> (ts & 63) & 1) f(uint64_t{owner_[ts]} - 1);
  }

 private:
  static constexpr uint32_t kBlockShift = 9;   // timestamps per block count: 512 (8 words)
  static constexpr uint32_t kSuperShift = 15;  // timestamps per super count: 32768 (64 blocks)
  void compact();
  void grow_ids(uint64_t max_id);
  // reference_batch()'s chunk (stack_chunk.cpp), compiled with popcnt + AVX2 and for the baseline.
  template <bool kPop>
  size_t chunk_loop(const uint64_t* ids, size_t n, DistanceTally& out, uint64_t max_distinct);
  struct ChunkPass1 {
    size_t n;        // references taken (a new id beyond max_distinct ends the chunk)
    uint64_t fresh;  // first references ever among them
    size_t olds;     // old markers flagged for the sweep
  };
  template <bool kBranchFree>
  ChunkPass1 chunk_pass1(const uint64_t* ids, size_t n, uint64_t max_distinct, uint32_t* code, uint32_t* old_after);
  template <bool kPop>
  void join_chunk_markers(const uint64_t* words, size_t n, uint64_t t0);
  template <bool kPop>
  void sweep_old_markers(size_t olds, uint32_t* old_after, uint32_t* code);
  size_t chunk_fast(const uint64_t* ids, size_t n, DistanceTally& out, uint64_t max_distinct);
  size_t chunk_base(const uint64_t* ids, size_t n, DistanceTally& out, uint64_t max_distinct);
  std::vector<uint32_t> last_;   // id -> timestamp + 1 (0 = never)
  std::vector<uint32_t> owner_;  // timestamp -> id + 1 (meaningful where the marker is live)
  std::vector<uint64_t> bits_;   // live markers, one bit per timestamp
  std::vector<uint32_t> block_;  // live markers per 512 timestamps
  std::vector<uint32_t> super_;  // live markers per 32768 timestamps
  // The batched loop's flags of old markers (as bits_) and of their blocks (as block_): all
  // clear between chunks.
  std::vector<uint64_t> qbits_;
  std::vector<uint8_t> qblock_;
  uint64_t cap_ = 0, now_ = 0, live_ = 0;
  uint64_t id_bound_ = UINT64_MAX;
  // The last chunk's references switched often between old markers and previous references in
  // the chunk: the next chunk's pass 1 tells them apart without a branch.
  bool chunk_mixed_ = false;
};

// The exact stack of a large table (StatsConfig::exact_lru_distinct_limit) also hands over to
// SHARDS after this many in-range references: it bounds the extra work a long stream costs the
// tracer's background thread. The exact prefix (rows as the stack's ids, every statistic) ran
// at 25-31 M references/s against SHARDS's 47-58 M/s (bench_stats, 1 M-row Zipf trace, 2-core
// machine at load average ~12; 7.6 M/s with the row map and one reference at a time): 2^22
// references are ~0.15 s once per table.
// Tests lower it to reach the hand-over quickly.
inline uint64_t exact_lru_max_lookups = uint64_t{1} << 22;

// Dense ids for the rows of a table too large to index by row (the exact stack of a table of
// more than 16x StatsConfig::exact_lru_distinct_limit rows while its distinct rows stay within
// that limit): an open-addressing row -> id map that doubles at half load, and the id -> row
// list.
class RowIds {
 public:
  uint64_t id_of(uint64_t row) {
    if ((rows_.size() + 1) * 2 > keys_.size()) grow();
    const uint64_t mask = keys_.size() - 1;
    uint64_t s = mix64(row ^ 0x3c6ef372fe94f82bULL) & mask;
    while (keys_[s]) {
      if (keys_[s] == row + 1) return ids_[s];
      s = (s + 1) & mask;
    }
    keys_[s] = row + 1;
    ids_[s] = static_cast<uint32_t>(rows_.size());
    rows_.push_back(row);
    return rows_.size() - 1;
  }
  // Whether the row has an id (no insertion).
  bool contains(uint64_t row) const {
    if (keys_.empty()) return false;
    const uint64_t mask = keys_.size() - 1;
    for (uint64_t s = mix64(row ^ 0x3c6ef372fe94f82bULL) & mask; keys_[s]; s = (s + 1) & mask)
      if (keys_[s] == row + 1) return true;
    return false;
  }
  uint64_t size() const { return rows_.size(); }
  uint64_t row_of(uint64_t id) const { return rows_[id]; }

 private:
  void grow() {
    std::vector<uint64_t> ok(std::max<size_t>(1024, keys_.size() * 2), 0);
    std::vector<uint32_t> oi(ok.size(), 0);
    const uint64_t mask = ok.size() - 1;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (!keys_[i]) continue;
      uint64_t s = mix64((keys_[i] - 1) ^ 0x3c6ef372fe94f82bULL) & mask;
      while (ok[s]) s = (s + 1) & mask;
      ok[s] = keys_[i];
      oi[s] = ids_[i];
    }
    keys_ = std::move(ok);
    ids_ = std::move(oi);
  }
  std::vector<uint64_t> keys_;  // row + 1, 0 = empty
  std::vector<uint32_t> ids_;
  std::vector<uint64_t> rows_;  // id -> row
};

// Footprint (Xiang et al.): fp(w), the mean number of distinct rows in a window of w
// consecutive references, measured exactly on sample windows of up to kWindow references and
// extrapolated linearly beyond.
class Footprint {
 public:
  static constexpr uint32_t kWindow = 2048;
  Footprint();
  // One window: `newest(w)` is the w-th most recent reference of the window, w = 1..kWindow.
  template <class Newest>
  void add_window(Newest newest) {
    if (++gen_ == 0) {
      std::fill(seen_gen_.begin(), seen_gen_.end(), 0);
      gen_ = 1;
    }
    const uint64_t mask = seen_.size() - 1;
    uint64_t distinct = 0;
    for (uint32_t w = 1; w <= kWindow; ++w) {
      const uint64_t r = newest(w);
      uint64_t s = mix64(r ^ 0x2545f4914f6cdd1dULL) & mask;
      for (;;) {
        if (seen_gen_[s] != gen_) {
          seen_gen_[s] = gen_;
          seen_[s] = r;
          ++distinct;
          break;
        }
        if (seen_[s] == r) break;
        s = (s + 1) & mask;
      }
      sum_[w] += static_cast<double>(distinct);
    }
    n_ += 1.0;
  }
  double windows() const { return n_; }
  double at(double w) const;

 private:
  std::vector<double> sum_;
  double n_ = 0.0;
  std::vector<uint64_t> seen_;  // scratch set (row)
  std::vector<uint32_t> seen_gen_;
  uint32_t gen_ = 0;
};

// Adds `w` references at distance `dist` (split between the two integer distances around it)
// to a histogram's bins.
void put_distance(std::vector<double>& bins, uint64_t& max_distance, double dist, double w);

// Post-stratified SHARDS estimate: each class's sampled histogram, scaled to the class's exact
// number of references (`total`); a class without samples lends its references to the nearest
// class with samples; nothing sampled at all: the references go to distance 0.
void add_stratified(std::vector<double>& bins, double& cold, uint64_t& max_distance,
                    const std::vector<StackDistanceHistogram>& cls, const std::vector<double>& samples,
                    const std::vector<double>& total);

// SHARDS (Waldspurger et al., FAST'15) fixed-rate spatial sampling in front of a Mattson
// stack: a row is sampled iff hash(row) mod 2^24 < T, T = rate * 2^24 (rate R; hash: one
// multiply, see sample_hash() in shards.cpp).
// A sampled reference's distance is estimated as d_s / R (d_s: distance in the sampled
// stack), capped by its reuse time (the exact number of references since the row's
// previous one, an upper bound on the distance); d_s = 0 is read as 0.5 / R.
//
// Two additions reduce the variance that plain SHARDS has on Zipf-skewed tables, where a
// handful of hot rows carry most references and are either all in or all out of a 1 %
// sample (see docs/stats.md):
//  * post-stratification: sampled references are recorded per frequency class
//    (floor(log2 of the row's count since the sampler started, the sampler's own counts),
//    and each class is scaled to the exact number of references of its class;
//  * hot rows: up to kHotSlots rows whose count reached kHotThreshold are tracked in a
//    direct-mapped table with their last reference time, so every one of their references
//    gets an exact reuse time t; its stack distance is estimated as the footprint fp(t), the
//    mean number of distinct rows in a window of t references, measured on sampled windows
//    of the recent trace (Xiang et al.'s footprint, exact windows, no model fitting).
class ShardsSampler {
 public:
  static constexpr uint32_t kModBits = 24;
  static constexpr uint32_t kClasses = 40;
  static constexpr uint32_t kHotSlots = 4096;
  static constexpr uint32_t kWindow = Footprint::kWindow;  // footprint window length (references)
  static constexpr uint32_t kWindowEvery = 8192;  // one footprint window per this many refs
  // A hot row that is also sampled refreshes its SHARDS-stack position at most once per this
  // many references (its own distances come from the hot path; for other rows' distances a
  // mark up to this many references stale changes nothing but windows shorter than it).
  static constexpr uint64_t kHotRefresh = 256;
  static constexpr uint32_t kReuseCopies = 4;
  // Rows that reach this many references (the sampler's own counts) enter the hot table.
  static constexpr uint32_t kHotThreshold = 64;
  // The sampler's own reference counts, for the frequency classes and hot-row promotion:
  // one uint32 per row up to this many rows, above it per hash bucket (rows sharing a bucket
  // share a class; classes are still consistent between the sample and the totals).
  static constexpr uint64_t kCountSlots = uint64_t{1} << 20;
  // Sub-chunks of process() end at multiples of this many references of the stream (not of
  // the batch): classes and promotions then do not depend on how the stream was split.
  static constexpr uint32_t kStep = 512;
  // The count pass prefetches the count of the row this many references ahead.
  static constexpr size_t kPrefetchCount = 16;
  // The estimate is quantized to multiples of 2^-kQuantBits references, so that adding and
  // subtracting its successive values is exact (see flush_segment()).
  static constexpr int kQuantBits = 12;
  // rate: sampling rate; rows: the table's rows; stratify: frequency classes and hot rows
  // (exact mode; in sketch mode one class and no hot table, as before).
  ShardsSampler(double rate, uint64_t rows, bool stratify);
  double rate() const { return rate_; }
  // References per frequency class by running count since the sampler started (tests).
  const std::vector<uint64_t>& class_refs() const { return class_refs_; }
  // Processes the next in-range references of the stream. The result depends only on the
  // sequence of rows, not on how it is split into calls.
  void process(const uint64_t* rows, size_t n);
  // Takes over from an exact stack after `refs` in-range references: `rows_oldest_first` is
  // its LRU order. The sampled ones enter the sampled stack in that order, so that their next
  // references get distances, not cold misses (their reuse times are unknown: the cap is the
  // whole prefix); the reference clock continues at `refs`.
  void seed(const std::vector<uint64_t>& rows_oldest_first, uint64_t refs);
  // Filter only: writes an entry per selected (hot or sampled) row into sel (capacity n,
  // n <= 2^16), returns how many. Entry: batch position | hot slot << 16 | flags below.
  static constexpr uint32_t kSelHot = 1u << 28, kSelSampled = 1u << 29, kSelRecorded = 1u << 30;
  size_t filter(const uint64_t* rows, size_t n, uint32_t* sel) const;
  // Adds to `out` what the estimate of the whole stream so far gained since the last call:
  // the estimate is a function of the stream seen so far (cumulative classes, hot reuse times
  // and footprint), quantized, so the sum of all calls' additions is exactly the estimate of
  // the whole stream, wherever the calls (flushes) fell. Bins of one addition may be negative.
  void flush_segment(StackDistanceHistogram& out);

 private:
  uint64_t id_of(uint64_t row);
  void sample_window();
  void step(const uint64_t* rows, size_t n);  // one sub-chunk within a kStep-aligned slot
  void promote(uint64_t row);
  uint64_t count_slot(uint64_t row) const {
    return rows_ <= kCountSlots ? row : (hash::sample_hash(row) >> 24) & (kCountSlots - 1);
  }
  void piece(const uint64_t* rows, size_t n, const uint8_t* cls);  // n <= kStep; cls: class per reference
  uint64_t threshold_;
  double rate_;
  // Open-addressing row -> dense id map (key stored +1, 0 = empty).
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> ids_;
  std::vector<uint64_t> last_time_;  // id -> global time of the previous reference + 1
  uint64_t used_ = 0;
  uint64_t now_ = 0;  // global reference clock (all in-range references)
  uint64_t refs_ = 0;  // references processed (after the seed)
  uint64_t rows_ = 0;
  bool stratify_ = false;
  std::vector<uint32_t> counts_;  // per row (or hash bucket), saturating; empty unless stratify_
  // References per class by running count (the class totals), tallied as the counts grow:
  // the same whole numbers as summing every count's classes at each flush, which cost
  // O(rows) per flush (a third of the sampler's time on a 10^6-row table cut every 10^6 refs).
  std::vector<uint64_t> class_refs_;
  MattsonStack stack_;
  // The estimate handed out so far (quantized), and the largest distance it can hold.
  std::vector<double> given_bins_;
  double given_cold_ = 0.0;
  // Cumulative state since the sampler started (never reset: see flush_segment()).
  std::vector<StackDistanceHistogram> cls_;  // sampled (non-hot) references per class
  std::vector<double> samples_;              // their number per class
  std::vector<uint64_t> hot_refs_;           // hot references recorded per class
  // Hot references' reuse times (refs between), binned: kReuseCopies copies of the exact bins
  // [0, 256) (summed in flush_segment), then the bins >= 256; see reuse_slot() in shards.cpp.
  std::vector<uint64_t> hot_reuse_;
  std::vector<uint64_t> hot_stack_t_;        // per hot slot: time of its last SHARDS-stack update
  // Hot table.
  // Tag and last time side by side: the filter's tag probe brings in the line that the hot
  // pass then updates (one cache miss per hot reference instead of two).
  struct HotSlot {
    uint64_t tag = 0;   // row + 1, 0 = empty
    uint64_t last = 0;  // global time + 1 of the row's last reference, 0 = none
  };
  std::vector<HotSlot> hot_;
  // Footprint: ring of the last kWindow rows and the windows measured on it.
  std::vector<uint64_t> ring_;
  Footprint fp_;
};

// SHARDS for tables counted elsewhere (CountedSegment, table_stats.h): the device hands over
// the sampled references (thinned for hot rows) instead of every reference. Sampled
// references go through a Mattson stack as in ShardsSampler (distance d_s / R, capped by the
// reuse time) and are post-stratified by their row's count (classes of counts 1, 2-3, ...,
// 64); the references of hot rows (count above kCountedHot) are not sampled but known from
// the exact counts: a hot row read k times among the segment's T references has reuse times
// of mean mu = T/k - 1 (references in between). Its reuse times are measured where they can
// be: in the footprint windows (contiguous slices of the trace), the reuse times shorter than
// half a window, pooled over hot rows of similar mu; the rest (and groups seen too little in
// windows) follow the independent-reference model (exponential, mean mu). Each reference's
// distance is the footprint of its reuse time.
class CountedShards {
 public:
  static constexpr uint32_t kClasses = 7;
  static constexpr uint32_t kQuantiles = 16;
  explicit CountedShards(double rate) : rate_(rate) {}
  double rate() const { return rate_; }
  void add_window(const std::vector<uint64_t>& rows);  // kCountedWindow references, oldest first
  // Whether a row is hot, and its mu (exact mode only).
  using HotRow = std::function<bool(uint64_t row, double& mu)>;
  // One segment of `refs` in-range references into `out`. class_refs: exact references of
  // each class that are not hot (nullptr in sketch mode: one class, and a thinned reference
  // stands for kCountedThin). hot: (mu, number of hot references in the segment) of the hot
  // rows; hot_row: see above (nullptr in sketch mode).
  void add_segment(std::vector<SampledRef>& sample, const std::vector<double>* class_refs,
                   const std::vector<std::pair<double, double>>& hot, const HotRow* hot_row, uint64_t refs,
                   StackDistanceHistogram& out);

 private:
  // Reuse times of hot rows seen in the windows, by bucket of their mean reuse time.
  struct HotReuse {
    std::map<uint32_t, double> reuse;  // reuse time -> references
    double observed = 0.0, censored = 0.0;
  };
  // add_segment's steps (counted_shards.cpp).
  void sampled_into_classes(std::vector<SampledRef>& sample, bool classed, std::vector<StackDistanceHistogram>& cls,
                            std::vector<double>& samples);
  std::map<int, HotReuse> hot_reuse_in_windows(const HotRow& hot_row) const;
  double add_hot_references(const std::vector<std::pair<double, double>>& hot, const std::map<int, HotReuse>& seen,
                            std::vector<double>& bins, uint64_t& maxd) const;
  static int bucket_of(double mu);
  uint64_t id_of(uint64_t row);
  double rate_;
  std::vector<std::vector<uint64_t>> windows_;  // of this segment, measured at add_segment
  std::unordered_map<uint64_t, uint32_t> ids_;
  std::vector<uint64_t> last_;  // id -> position + 1 of its previous sampled reference
  MattsonStack stack_;
  Footprint fp_;
};

// ---- the aggregate ----------------------------------------------------------------------
// Varint helpers (LEB128).
void put_varint(std::string& out, uint64_t v);
bool get_varint(std::string_view& in, uint64_t& v);
void put_double(std::string& out, double v);
bool get_double(std::string_view& in, double& v);


// get_varint() inline, for scans of many varints (the same checks, the same results).
inline bool get_varint_inline(std::string_view& in, uint64_t& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  const size_t n = in.size();
  v = 0;
  for (size_t i = 0; i < n && i < 10; ++i) {
    const uint8_t b = p[i];
    if (i == 9 && b > 1) return false;
    v |= uint64_t{b & 0x7fu} << (7 * i);
    if (!(b & 0x80)) {
      in.remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

// Walks an encoded ExactCounts (ExactCounts::encode()) with every check of decode(), calling
// f(row, count) for each nonzero count, rows ascending, without building the counts: the
// reader of a lazily decoded aggregate (deserialize_lazily()) needs them once per table.
// Returns false where decode() would.
template <class F>
bool scan_exact_counts(std::string_view& in, uint64_t rows, F&& f) {
  if (in.empty()) return false;
  const uint8_t kind = static_cast<uint8_t>(in.front());
  in.remove_prefix(1);
  uint64_t v;
  auto get = [&](uint64_t& x) { return get_varint_inline(in, x); };
  if (kind == 1) {
    if (in.size() < rows) return false;
    for (uint64_t r = 0; r < rows; ++r) {
      if (!get(v)) return false;
      if (v) f(r, v);
    }
    return true;
  }
  if (kind != 0) return false;
  uint64_t nnz, gap, row = 0;
  if (!get(nnz) || nnz > rows || nnz * 2 > in.size()) return false;
  for (uint64_t k = 0; k < nnz; ++k) {
    if (!get(gap) || !get(v) || v == 0) return false;
    if (k > 0 && gap == 0) return false;
    if (gap >= rows - row) return false;
    row += gap;
    if (row >= rows) return false;
    f(row, v);
  }
  return true;
}

}  // namespace edo::stats::detail

namespace edo::stats {

namespace detail {

// The parts of an aggregate that deserialize_lazily() leaves in their encoded form until first
// needed: the counts (exact, or the sketches) and the ordered sample are most of a decoded
// aggregate's memory (issue 31: 16 bytes per sampled reference and per counted row, where the
// bytes take 2-5), and a report needs a few numbers of them per table. The flags say whether
// the bytes still stand for the part (the decoded members are then empty); once a part is
// decoded its bytes are freed and its flag cleared, with release order, so that a reader that
// sees the flag clear may read the decoded members without the lock.
struct EncodedParts {
  EncodedParts() = default;
  EncodedParts(const EncodedParts& o) { *this = o; }
  EncodedParts& operator=(const EncodedParts& o) {
    if (this == &o) return *this;
    std::scoped_lock lock(mu, o.mu);
    counts = o.counts;
    sample = o.sample;
    unique_rows = o.unique_rows;
    counts_pending.store(o.counts_pending.load());
    sample_pending.store(o.sample_pending.load());
    return *this;
  }
  std::string counts;        // the counts' section of the aggregate's bytes, while pending
  std::string sample;        // the ordered sample's section, while pending
  uint64_t unique_rows = 0;  // of the encoded counts (what unique_rows() answers for them)
  std::atomic<bool> counts_pending{false};
  std::atomic<bool> sample_pending{false};
  mutable std::mutex mu;  // guards the bytes and the decoding of a pending part
};

}  // namespace detail

struct TableAggregate::Impl {
  uint64_t rows = 0;
  StatsConfig config;
  CountMode mode = CountMode::kExact;
  uint64_t lookups = 0;
  uint64_t out_of_range = 0;
  detail::ExactCounts exact;
  detail::CountMinSketch cms;
  detail::SpaceSaving topk;
  detail::HyperLogLog hll;
  StackDistanceHistogram hist;
  std::vector<HotSetWindow> windows;
  bool has_sample = false;
  OrderedSample sample;
  detail::EncodedParts encoded;  // parts not decoded yet (deserialize_lazily())

  void init(uint64_t r, const StatsConfig& c);
  void append_windows(const std::vector<HotSetWindow>& w);
  // Rows read at least once, from the decoded counts.
  uint64_t unique_rows_decoded() const;

  // Lazily decoded parts (aggregate_codec.cpp). Logically const: decoding a part changes
  // its form, not its value, and is thread-safe.
  bool counts_pending() const { return encoded.counts_pending.load(std::memory_order_acquire); }
  bool sample_pending() const { return encoded.sample_pending.load(std::memory_order_acquire); }
  void decode_counts() const;  // the counts into this Impl, if still pending
  void decode_sample() const;  // the ordered sample into this Impl, if still pending
  void decode_all() const { decode_counts(); decode_sample(); }
  // The decoded counts without keeping them: *this when decoded, else `scratch` (rows, mode and
  // config as here) with the counts decoded into it.
  const Impl& counts_in(Impl& scratch) const;
  // Exact counts still encoded: calls f(row, count) for each nonzero count, rows ascending,
  // straight from the bytes, and returns true; false (f not called) otherwise.
  bool for_each_encoded_count(const std::function<void(uint64_t, uint64_t)>& f) const;
  // Appends the pending part's bytes as stored; false (nothing appended) when it is decoded.
  bool append_encoded_counts(std::string& out) const;
  bool append_encoded_sample(std::string& out) const;
};

}  // namespace edo::stats
