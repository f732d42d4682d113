// The offload cache's replacement policy (policy=lru), one definition for both backends: the
// CPU backend runs this class; the CUDA backend runs the same steps as device kernels
// (kernels/cuda), and the GPU tests check that both give the same hits and the same cache.
//
// Set-associative, batch-granular LRU, as FBGEMM's LRU cache: slots are grouped in sets of
// W = min(8, C) ways, row r belongs to set lru_set_of(r) (edo/kernels/formats/offload.h).
// For each batch, with t the batch's number (1, 2, ...):
//   1. an access whose row is in the cache before the batch is a hit; its slot's time = t;
//   2. the batch's distinct missed rows, set by set in increasing row order, take the slots of
//      their set that this batch has not used (time < t), least recently used first (empty
//      slots have time 0; ties: lower way); a miss that finds no such slot is not cached;
//   3. every access then reads its row from the cache if it is there, else from host memory.
// Hit rates are deterministic (no dependence on the order of the batch's accesses); they are
// close to, not equal to, a fully associative per-access LRU (the profile's LRU curve).
#pragma once

#include <cstdint>
#include <vector>

namespace edo::kernels {

class LruCache {
 public:
  struct Fill {
    std::int64_t row;      // the row brought in
    std::int32_t slot;     // into this slot
    std::int64_t evicted;  // the row that held the slot before, or -1
  };
  explicit LruCache(std::uint64_t cache_rows);

  // Steps 1 and 2 for one batch; returns the hits and appends the fills, in set order.
  std::uint64_t batch(const std::int64_t* idx, std::int64_t n, std::vector<Fill>& fills);
  // The slot holding `row`, or -1.
  std::int64_t find(std::int64_t row) const;

  std::uint64_t sets() const { return sets_; }
  std::uint32_t ways() const { return ways_; }
  std::uint32_t batches() const { return now_; }
  const std::vector<std::int64_t>& tags() const { return tag_; }
  const std::vector<std::uint32_t>& times() const { return time_; }

 private:
  std::uint64_t sets_ = 0;
  std::uint32_t ways_ = 0;
  std::uint32_t now_ = 0;
  std::vector<std::int64_t> tag_;
  std::vector<std::uint32_t> time_;
  std::vector<std::uint64_t> miss_keys_;  // (set << 32 | row) of the batch's misses
};

}  // namespace edo::kernels
