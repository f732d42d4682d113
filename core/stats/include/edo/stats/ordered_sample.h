// An ordered sample of one table's access stream (issue 19, held-out validation of caches):
// every reference to a spatially sampled row (SHARDS: row r is in iff
// (hash::sample_hash(r) & kSampleMask) < threshold, the test of row_hash.h), kept in stream
// order with its position (the reference's index among all the table's in-range references).
// A cache fitted on the references before a position can then be replayed on the ones after
// it: an LRU of k rows behaves on the sampled rows like an LRU of k * rate slots (SHARDS).
//
// Bounded: at most StatsConfig::ordered_sample_refs references of the whole stream are kept.
// When one more would be kept, the threshold is halved (the rows kept at the lower threshold
// are a subset of those kept before), and so on: the sample is always every reference of the
// rows below the current threshold, whatever the flushes. Standard library only (it is linked
// into libedo_trace.so).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "edo/stats/row_hash.h"

namespace edo::stats {

struct OrderedRef {
  uint64_t position = 0;  // index of the reference among the table's in-range references
  uint64_t row = 0;
};

// One stretch [begin, end) of a table's stream, or the whole stream when merged in order.
struct OrderedSample {
  static constexpr uint64_t kFullThreshold = uint64_t{1} << hash::kSampleModBits;  // rate 1
  uint64_t threshold = kFullThreshold;
  uint64_t begin = 0;  // stream position where this stretch starts
  uint64_t end = 0;    // one past its last position (refs sampled or not)
  // False when the stretch is not one stream's order: parts that did not join (two
  // processes' streams merged), or references counted elsewhere (a GPU) in between.
  bool valid = true;
  std::vector<OrderedRef> refs;  // ascending position, each in [begin, end)

  double rate() const { return static_cast<double>(threshold) / static_cast<double>(kFullThreshold); }
  static bool keeps(uint64_t row, uint64_t threshold) { return hash::sampled(row, threshold); }
  // Drops the references of rows at or above `t` (t < threshold) and lowers the threshold.
  void lower_threshold(uint64_t t);
  // Appends the stretch that follows this one (next.begin == end, else the result is marked
  // invalid); the lower of the two thresholds applies to both.
  void append(const OrderedSample& next);

  // Byte encoding (inside the aggregate's, docs/stats.md "Byte format"): threshold, begin,
  // end, valid, n, n x (position gap, row), all varints. decode() checks every length
  // against the bytes left and every position against [begin, end).
  void encode(std::string& out) const;
  static bool decode(std::string_view& in, OrderedSample& out);
  // decode()'s checks, and every row below `rows`, without keeping the references (a reader
  // that decodes the sample only if it is asked for: TableAggregate::deserialize_lazily()).
  static bool check(std::string_view& in, uint64_t rows);
  // decode()'s checks of the header alone (threshold, begin, end, valid, the number of
  // references against the bytes left), the references not read.
  static bool check_header(std::string_view& in);
};

// The ingestor's side: samples references as they are counted, and hands out the stretch
// since the last take(). Keeps per halving level the number of references it kept, so that
// lowering the threshold knows how many the whole stream keeps without storing them.
class OrderedSampler {
 public:
  explicit OrderedSampler(uint64_t max_refs) : max_refs_(max_refs) {}
  // In-range rows in stream order.
  void add(const uint64_t* rows, size_t n);
  // References counted elsewhere advance the stream without being seen: the order is lost.
  void skip(uint64_t n);
  OrderedSample take();
  uint64_t threshold() const { return threshold_; }
  uint64_t kept() const { return kept_; }
  uint64_t max_refs() const { return max_refs_; }
  // Raises the bound (never lowers it). The sample so far is the one a sampler with the higher
  // bound would have kept, as long as it never had to lower its threshold: the tracer raises a
  // table's bound before the references that would need it (docs/memory.md).
  void raise_max_refs(uint64_t m) { max_refs_ = m > max_refs_ ? m : max_refs_; }

 private:
  void keep(uint64_t row);
  void drop_unkept();  // drops the pending references the threshold no longer keeps
  static uint32_t level_of(uint64_t row);  // halvings of the full threshold that still keep it

  uint64_t max_refs_;
  uint64_t threshold_ = OrderedSample::kFullThreshold;
  uint32_t level_ = 0;  // threshold_ == kFullThreshold >> level_
  uint64_t position_ = 0, begin_ = 0;
  uint64_t kept_ = 0;                       // references of the whole stream at threshold_
  std::array<uint64_t, hash::kSampleModBits + 2> by_level_{};  // kept references per level
  std::vector<OrderedRef> pending_;
  bool valid_ = true;
  bool unkept_pending_ = false;  // the threshold fell since pending_ was last filtered
};

}  // namespace edo::stats
