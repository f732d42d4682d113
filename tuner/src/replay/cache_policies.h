// Cache replacement policies replayed on a table's recorded order (issue 34 point 2): what an
// offloaded table's GPU cache would hit on the held-out part of its lookups under LRU, LFU,
// FBGEMM's set-associative cache (LRU or LFU, with or without TorchRec's one-batch prefetch),
// and Belady's optimal replacement, the bound no policy can beat at the same capacity.
//
// What counts as a hit, for every policy alike: a lookup that reads no host memory. The first
// lookup of a row that the cache brings in (on demand, or by a prefetch) is the miss that
// fetched it; later lookups of the row while it stays are hits; every lookup of a row the cache
// does not take is a miss. The stream's references before `split` warm the cache; hits are
// counted on the references from `split` on.
//
// FBGEMM's cache (fbgemm_gpu at 71d6f8b22, the commit these notes cite):
//  * sets of 32 ways on CUDA (DEFAULT_ASSOC = 32 and the device's warp size,
//    split_table_batched_embeddings_ops_training.py:97 and :3812-3816; 64 on CDNA ROCm);
//    cache_sets = ceil(int(rows * load_factor) / 32), at least 1 (:3898-3903);
//  * a row's set: the MurmurHash3 64-bit finaliser of its linear cache index, modulo the sets
//    (src/split_embeddings_cache/common.cuh:69-80, cache_slot(); used by lru_cache_find.cu:119
//    and lfu_cache_find.cu:51). One table per TBE: the linear index is the row;
//  * batch-granular: each batch (one prefetch(), timestep + 1) first marks the cached rows it
//    reads with the timestep (lru_cache_find.cu:119-131), then per set inserts its missed rows in
//    increasing row order (torch's sorted unique indices, radix-sorted by set) into the ways with
//    the oldest timestep, at most 32 per batch, stopping at a way used by this batch
//    (lru_cache_populate.cu:75-97); a row that finds no way is read from host memory;
//  * LFU: every batch adds each row's lookups to its count (lfu_state over all rows,
//    lfu_cache_find.cu:26); a set's missed rows, most counted first, replace its ways least
//    counted first (empty ways first) while the way's count is not above the row's
//    (lfu_cache_find.cu:60-64, lfu_cache_populate.cu:68-91);
//  * TorchRec's prefetch_pipeline: batch b + 1 is prefetched while batch b has yet to run its
//    backward, and the ways batch b uses stay locked (lxu_cache_locking_counter, skipped by the
//    insert: lru_cache_populate.cu:88-93) until it has.
//
// A sample of rate r < 1 (the ordered sample's SHARDS rows, cache_replay.h) is replayed as a
// miniature simulation (Waldspurger et al., "Cache Modeling and Optimization using Miniature
// Simulations", USENIX ATC '17): the sampled rows through a cache of capacity * r; a
// set-associative cache keeps its 32 ways and has sets * r sets (the sampled rows are a uniform
// share r of every set's rows, so each miniature set sees a full set's density of rows; below
// one set: one set of ways * sets * r ways). It is exact at r = 1 and an approximation below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::tuner {

// FBGEMM's ways per set on CUDA (see above).
inline constexpr uint32_t kFbgemmWays = 32;

// FBGEMM's set of `row` among `sets` sets (cache_slot(), common.cuh:69-80).
uint32_t fbgemm_cache_set(uint64_t row, uint32_t sets);

// FBGEMM's cache sets for a table of `rows` rows at `load_factor`
// (split_table_batched_embeddings_ops_training.py:3898-3903).
uint64_t fbgemm_cache_sets(uint64_t rows, double load_factor);

// Device bytes of one UVM-caching table under FBGEMM (_apply_cache_state,
// split_table_batched_embeddings_ops_training.py:3791-4003; CacheState.construct,
// tbe/cache/cache_config.py:69-116): slots = sets x 32 of
//   lxu_cache_weights   slots x dim x element size (the cache precision, fp32 or fp16; the
//                       width is max_D_cache, the table's own dim: not padded, :965-970, :3957-3965)
//   lxu_cache_state     slots x 8 (int64, :3946-3955)
//   lxu_state           LRU: slots x 8; LFU: (rows + 1) x 8 (int64, :3966-3978)
//   lxu_cache_locking_counter  prefetch pipeline only: slots x 4 (int32, :4113-4123)
//   cache_index_table_map      rows x 4 (int32, one entry per cached table row, :3937-3944)
//   cache_hash_size_cumsum     (tables + 1) x 8 = 16 (one table, :3929-3936)
//   cache_miss_counter         2 x 8 = 16 (:3980-3983)
//   uvm_cache_stats, local_uvm_cache_stats  8 + 4 (stats not gathered, :4131-4152)
// The table itself stays in host (UVM) memory.
uint64_t fbgemm_cache_device_bytes(uint64_t rows, uint32_t dim, uint32_t element_bytes, double load_factor, bool lfu,
                                   bool prefetch);

// One stream to replay: rows in order, each with its batch (non-decreasing); references before
// `split` warm the cache, hits are counted from `split` on.
struct ReplayStream {
  std::vector<uint64_t> rows;
  std::vector<uint64_t> batch;
  size_t split = 0;
};

struct ReplayCount {
  uint64_t hits = 0;
  uint64_t refs = 0;  // references counted (from split on)
  double rate() const { return refs ? static_cast<double>(hits) / static_cast<double>(refs) : 0.0; }
};

// Fully associative LRU of `slots` rows, reference by reference.
ReplayCount replay_lru(const ReplayStream& s, uint64_t slots);
// Fully associative LFU of `slots` rows, reference by reference: every row's count of lookups
// so far (cached or not, as FBGEMM's lfu_state); a missed row replaces the cached row of the
// least count (ties: the least recently used) when that count is not above its own, else it
// is not cached.
ReplayCount replay_lfu(const ReplayStream& s, uint64_t slots);
// FBGEMM's cache: `sets` x `ways`, batch-granular (above), LRU or LFU, and with `prefetch` the
// previous batch's ways locked while a batch is brought in.
enum class FbgemmAlgorithm { kLru, kLfu };
ReplayCount replay_fbgemm(const ReplayStream& s, uint64_t sets, uint32_t ways, FbgemmAlgorithm algorithm, bool prefetch);
// Belady's optimal replacement with bypass (a miss need not be cached) on `slots` rows: the
// most hits any policy of that capacity can have on the references from `split` on, from the
// best warm cache the earlier references allow (any `slots` rows read before the split: they
// are replayed as one reference each ahead of the held-out part, no hit counted before it).
ReplayCount replay_optimal(const ReplayStream& s, uint64_t slots);

// The held-out hit rates of one offload cache under every policy, at the capacity FBGEMM
// allocates for it (`slots` = its sets x 32), so that they compare.
struct PolicyRates {
  uint64_t cache_rows = 0;  // what the plan asks for (load factor x rows)
  uint64_t slots = 0;       // what FBGEMM allocates
  double lru = 0, lfu = 0;  // fully associative
  double fbgemm_lru = 0, fbgemm_lfu = 0, fbgemm_lru_prefetch = 0;
  double optimal = 0;
  // FBGEMM's algorithm with more held-out hits (TorchRec's CacheAlgorithm; ties: LRU, its
  // default), its rate, and the headroom: optimal minus it.
  std::string chosen;
  double chosen_rate() const { return chosen == "lfu" ? fbgemm_lfu : fbgemm_lru; }
  double headroom() const { return optimal - chosen_rate(); }
};

class PolicyReplay {
 public:
  // From `counts`' ordered sample cut at `fit_fraction` of its references (as CacheReplay);
  // batches of `lookups_per_step` lookups (rounded, at least 1). nullopt with `why_not`.
  static std::optional<PolicyReplay> of(const stats::TableAggregate& counts, double lookups_per_step, std::string& why_not,
                                        double fit_fraction = 0.7);
  // Built from a stream at rate r (tests).
  PolicyReplay(ReplayStream stream, double rate) : s_(std::move(stream)), rate_(rate) {}

  // Every policy for a cache of `cache_rows` of the table's `rows` rows.
  PolicyRates at(uint64_t cache_rows, uint64_t rows) const;
  double rate() const { return rate_; }
  const ReplayStream& stream() const { return s_; }

 private:
  ReplayStream s_;
  double rate_ = 1.0;
};

}  // namespace edo::tuner
