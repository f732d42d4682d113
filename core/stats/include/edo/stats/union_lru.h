// The LRU curve of the union of several ranks' streams of one table (issue 22, model
// parallel: the device that holds a table, or a row shard of it, serves every rank's lookups
// of it after the all-to-all, through one cache).
//
// The ranks' histograms cannot give it (the union's stack distances depend on how the streams
// interleave), so it is estimated from the ranks' ordered samples (ordered_sample.h). Their
// row test is the same hash in every process, so after lowering all of them to the smallest
// threshold they keep the same rows, and interleaving them gives a SHARDS sample of the union
// stream. There are no timestamps per reference: the samples are interleaved by progress
// (a reference's position in its rank's stream over that stream's length), i.e. the ranks are
// assumed to advance in lock-step, as synchronous data-parallel training does step by step;
// ties go to the lower rank. Stack distances of the interleaved sample (the Mattson stack of
// stack_distance.cpp) stand for the union's as in SHARDS (Waldspurger et al., FAST '15): an
// LRU of k rows hits a sampled reference iff its distance is below k * rate.
//
// A sample at rate 1 (every reference) gives the exact LRU curve of the lock-step union. Below
// rate 1 a bounded sample holds the hottest rows rarely or never (one of them alone can exceed
// the bound), so with exact counts the estimate is post-stratified as the tuner's held-out
// replay does (tuner/src/replay/cache_replay.h): rows in classes of equal floor(log2 count) of the
// union, each class's sampled hit rate weighted by the class's share of the union's lookups;
// classes hotter than every sampled one from their counts under the independent reference
// model (Che's approximation), their rows taking room in the cache first. With sketched counts
// the difference between the expected (lookups * rate) and the sampled references counts as
// hits at distance 0 (SHARDS_adj, same paper). Every estimate is capped at the union's
// compulsory-miss ceiling 1 - unique/lookups, exact from the merged counts (HyperLogLog
// estimate when sketched). Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edo/stats/ordered_sample.h"
#include "edo/stats/table_stats.h"

namespace edo::stats {

// One rank's stream of the table: its ordered sample (nullptr when its recording has none).
struct RankSample {
  int64_t rank = 0;
  const OrderedSample* sample = nullptr;
};

// A reference of the interleaved union: which stream (index into the input) and its reference.
struct InterleavedRef {
  uint32_t stream = 0;
  OrderedRef ref;
};

// The references of `samples` (each one stream's, valid) kept at the smallest of their
// thresholds, in lock-step order: ascending (position - begin) / (end - begin), ties by stream
// index. Exact (integer cross products).
std::vector<InterleavedRef> interleave_by_progress(const std::vector<OrderedSample>& samples);

struct UnionLru {
  bool available = false;
  std::string why_not;          // when not available: which rank and why (said to the user)
  size_t ranks = 0;             // streams interleaved (ranks that read the table)
  double rate = 0.0;            // the union sample's SHARDS rate (1: every reference)
  bool stratified = false;      // post-stratified by the union's exact counts (rate < 1)
  uint64_t lookups = 0;         // references of the union (the merged counts')
  uint64_t sampled_refs = 0;    // references of the interleaved sample
  double ceiling = 1.0;         // 1 - unique/lookups of the union
  // Hit rate vs cache rows at the cache sizes of TableSummary::lru_curve (summarize()).
  std::vector<CurvePoint> curve;
  double hit_rate_1pct = 0.0, hit_rate_10pct = 0.0, hit_rate_50pct = 0.0, hit_rate_100pct = 0.0;

  // The estimate for any cache size (0 when not available).
  double hit_rate(uint64_t cache_rows) const;

  struct Estimator;  // the sample's stack distances by class (union_lru.cpp)
  std::shared_ptr<const Estimator> estimator;
};

// The union curve of `ranks` (each rank that read the table once), whose merged aggregate is
// `merged` (rows, lookups and unique rows of the union). Not available, with why_not naming
// the rank, when a rank has no ordered sample, an invalid one (not one stream's order), or
// one that kept nothing.
UnionLru union_lru(const std::vector<RankSample>& ranks, const TableAggregate& merged);

// The cache sizes (rows) of an LRU curve of a table of `rows` rows: log-spaced, 10 a decade,
// plus 1, 10, 50 and 100 % of the rows (at least one row each). summarize() uses them too.
std::vector<uint64_t> lru_cache_sizes(uint64_t rows);

}  // namespace edo::stats
