// Cache policies replayed on hand-built streams (issue 34 point 2, cache_policies.h), each
// against an answer worked out by hand below, and Belady's optimal replacement against every
// policy on random streams (no policy may beat it), FBGEMM's 32-way sets against a fully
// associative LRU on a stream whose rows all fall in one set, and FBGEMM's device bytes against
// its formula with the numbers computed by hand.
#include "cache_policies.h"

#include <gtest/gtest.h>

#include <random>

#include "cache_replay.h"

namespace edo::tuner {
namespace {

// One reference per batch, unless `per_batch` says otherwise.
ReplayStream stream_of(std::vector<uint64_t> rows, size_t split, std::vector<uint64_t> batch = {}) {
  ReplayStream s;
  s.rows = std::move(rows);
  s.split = split;
  if (batch.empty())
    for (size_t i = 0; i < s.rows.size(); ++i) batch.push_back(i);
  s.batch = std::move(batch);
  return s;
}

TEST(CachePolicies, FbgemmSetsAreMurmur3FinaliserModuloTheSets) {
  // Worked out with the finaliser of common.cuh:69-80 in Python (h ^= h >> 33; h *= ...).
  EXPECT_EQ(fbgemm_cache_set(0, 7), 0u);
  EXPECT_EQ(fbgemm_cache_set(1, 7), 0u);
  EXPECT_EQ(fbgemm_cache_set(2, 3125), 1447u);
  EXPECT_EQ(fbgemm_cache_set(12345, 1000), 753u);
  EXPECT_EQ(fbgemm_cache_set(999999, 3125), 1902u);
  EXPECT_EQ(fbgemm_cache_set(uint64_t{1} << 40, 97), 29u);
}

TEST(CachePolicies, FbgemmDeviceBytesFollowItsAllocation) {
  // 1M rows x 64 fp32 at load factor 0.1: int(100000.0) = 100000 rows wanted, 3125 sets of 32
  // = 100000 slots. LRU: weights 100000 x 64 x 4 = 25,600,000; lxu_cache_state 800,000;
  // lxu_state 800,000; cache_index_table_map 4,000,000; 16 + 16 + 8 + 4 = 44 of small buffers.
  EXPECT_EQ(fbgemm_cache_sets(1000000, 0.1), 3125u);
  EXPECT_EQ(fbgemm_cache_device_bytes(1000000, 64, 4, 0.1, false, false), 31200044u);
  // LFU counts every table row: lxu_state (1,000,000 + 1) x 8 = 8,000,008.
  EXPECT_EQ(fbgemm_cache_device_bytes(1000000, 64, 4, 0.1, true, false), 38400052u);
  // The prefetch pipeline's lock counters: 100000 x 4.
  EXPECT_EQ(fbgemm_cache_device_bytes(1000000, 64, 4, 0.1, false, true), 31600044u);
  // A 53-row cache: int(53.0) = 53 -> 2 sets, 64 slots; fp16 cache rows.
  EXPECT_EQ(fbgemm_cache_sets(1000000, 53.0 / 1000000.0), 2u);
  EXPECT_EQ(fbgemm_cache_device_bytes(1000000, 16, 2, 53.0 / 1000000.0, false, false), 64u * 32 + 64 * 16 + 4000000 + 44);
  EXPECT_EQ(fbgemm_cache_sets(100, 0.0), 1u) << "at least one set";
}

TEST(CachePolicies, LruLfuAndOptimalOnATinyStream) {
  // Rows 1 1 1 2 3 2 3 1, one row of cache, every reference counted.
  const ReplayStream s = stream_of({1, 1, 1, 2, 3, 2, 3, 1}, 0);
  // LRU: 1 miss, hit, hit; 2, 3, 2, 3, 1 each replace the one before: 2 hits.
  EXPECT_EQ(replay_lru(s, 1).hits, 2u);
  // LFU: 1 is cached with count 3; 2 and 3 reach count 2 at most, never above it: not cached;
  // the last 1 hits: 3 hits.
  EXPECT_EQ(replay_lfu(s, 1).hits, 3u);
  // Optimal: 2 hits on 1, then at most one more (2 at index 5 or 1 at index 7): 3.
  EXPECT_EQ(replay_optimal(s, 1).hits, 3u);
  EXPECT_EQ(replay_optimal(s, 1).refs, 8u);
  // A cyclic scan of 3 rows: LRU of 2 never hits, of 3 hits the second pass.
  const ReplayStream scan = stream_of({1, 2, 3, 1, 2, 3}, 0);
  EXPECT_EQ(replay_lru(scan, 2).hits, 0u);
  EXPECT_EQ(replay_lru(scan, 3).hits, 3u);
  // Optimal with 2: keeps 1 and 2 (3 is bypassed), hits 1 and 2: 2 hits.
  EXPECT_EQ(replay_optimal(scan, 2).hits, 2u);
}

TEST(CachePolicies, LfuReplacesTheLeastCountedWhenTheNewRowIsReadAsOften) {
  // Rows 1 1 2 1 2 2 2, one row: 2 reaches 1's count 3 at index 5 and replaces it (not above
  // its own), hitting at 6. Hits: indices 1, 3, 6.
  const ReplayStream s = stream_of({1, 1, 2, 1, 2, 2, 2}, 0);
  EXPECT_EQ(replay_lfu(s, 1).hits, 3u);
  // Counted from the split only: indices 4..6: one hit (6).
  EXPECT_EQ(replay_lfu(stream_of({1, 1, 2, 1, 2, 2, 2}, 4), 1).hits, 1u);
  EXPECT_EQ(replay_lfu(stream_of({1, 1, 2, 1, 2, 2, 2}, 4), 1).refs, 3u);
}

TEST(CachePolicies, OptimalStartsFromTheBestWarmCache) {
  // Rows a b b | a with one row of cache: Belady over the whole stream caches b (read sooner)
  // and misses the held-out a, but a cache that kept a hits it: the bound counts the best cache
  // the earlier part allows, 1 of 1.
  const ReplayStream s = stream_of({7, 8, 8, 7}, 3);
  EXPECT_EQ(replay_lru(s, 1).hits, 0u);
  EXPECT_EQ(replay_optimal(s, 1).hits, 1u);
  EXPECT_EQ(replay_optimal(s, 1).refs, 1u);
}

TEST(CachePolicies, FbgemmLruIsBatchGranular) {
  // One set of 2 ways; batches {1, 2}, {3, 1}, {2}.
  const ReplayStream s = stream_of({1, 2, 3, 1, 2}, 0, {0, 0, 1, 1, 2});
  // Batch 1: 1 and 2 fill the empty ways (misses). Batch 2: 1 is found first (marked with this
  // batch), then 3 takes the older way, 2's: 3 misses, 1 hits. Batch 3: 2 takes the older of
  // the two ways (both of batch 2; the lower way, 1's) and misses. 1 hit, where a per-lookup
  // LRU of 2 rows has none (3 evicts 1 before 1 is read).
  EXPECT_EQ(replay_fbgemm(s, 1, 2, FbgemmAlgorithm::kLru, false).hits, 1u);
  EXPECT_EQ(replay_lru(s, 2).hits, 0u);
  // Prefetch pipeline: batch 1's ways are locked while batch 2 is brought in: 2's way is
  // skipped, 1's is this batch's, so 3 is not cached (read from host); batch 3 finds 2: 2 hits.
  EXPECT_EQ(replay_fbgemm(s, 1, 2, FbgemmAlgorithm::kLru, true).hits, 2u);
  // A row read twice in a batch it is brought in by: the first read fetched it, the second hits.
  const ReplayStream twice = stream_of({5, 5, 6}, 0, {0, 0, 0});
  EXPECT_EQ(replay_fbgemm(twice, 1, 2, FbgemmAlgorithm::kLru, false).hits, 1u);
  // With no room (one way, two rows of one batch): the lower row takes it, 6 is read from host
  // on each of its lookups.
  const ReplayStream crowd = stream_of({6, 5, 6, 5}, 0, {0, 0, 0, 0});
  EXPECT_EQ(replay_fbgemm(crowd, 1, 1, FbgemmAlgorithm::kLru, false).hits, 1u);
}

TEST(CachePolicies, FbgemmLfuKeepsTheMostCountedRows) {
  // One set of 1 way; batches {1, 1}, {2}, {2}, {2}. Batch 1: 1 (count 2) fills the way, 1 hit.
  // Batch 2: 2 has count 1 < 2: not cached. Batch 3: count 2, not above 1's 2: replaces it
  // (the read that fetched it misses). Batch 4: 2 hits. 2 hits.
  const ReplayStream s = stream_of({1, 1, 2, 2, 2}, 0, {0, 0, 1, 2, 3});
  EXPECT_EQ(replay_fbgemm(s, 1, 1, FbgemmAlgorithm::kLfu, false).hits, 2u);
  EXPECT_EQ(replay_fbgemm(s, 1, 1, FbgemmAlgorithm::kLru, false).hits, 3u) << "LRU: 1 hit, then 2 fetched once and hit twice";
}

TEST(CachePolicies, SetAssociativeMissesWhatAFullyAssociativeLruHoldsOnConflicts) {
  // 64 rows that all fall in set 0 of 4 sets (128 slots), read cyclically 20 times: a fully
  // associative LRU of 128 holds them all and misses only the first pass; FBGEMM's 32 ways of
  // set 0 see a cycle of 64 rows and never hit.
  std::vector<uint64_t> conflicting;
  for (uint64_t r = 0; conflicting.size() < 64; ++r)
    if (fbgemm_cache_set(r, 4) == 0) conflicting.push_back(r);
  std::vector<uint64_t> rows;
  for (int pass = 0; pass < 20; ++pass) rows.insert(rows.end(), conflicting.begin(), conflicting.end());
  const ReplayStream s = stream_of(rows, 0);
  const ReplayCount full = replay_lru(s, 128), sets = replay_fbgemm(s, 4, kFbgemmWays, FbgemmAlgorithm::kLru, false);
  EXPECT_EQ(full.hits, 64u * 19);
  EXPECT_EQ(sets.hits, 0u);
  EXPECT_LE(sets.hits, full.hits);
  EXPECT_GE(replay_optimal(s, 128).hits, full.hits);
  // The same rows spread over the sets (consecutive rows): the 32 ways of each set hold them.
  std::vector<uint64_t> spread;
  for (int pass = 0; pass < 20; ++pass)
    for (uint64_t r = 0; r < 64; ++r) spread.push_back(r);
  const ReplayStream t = stream_of(spread, 0);
  EXPECT_EQ(replay_fbgemm(t, 4, kFbgemmWays, FbgemmAlgorithm::kLru, false).hits, 64u * 19);
}

TEST(CachePolicies, OptimalIsAtLeastEveryPolicyOnRandomStreams) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const uint64_t distinct = 50 + rng() % 400;
    const double alpha = 0.5 + static_cast<double>(rng() % 100) / 100.0;
    std::vector<double> w(distinct);
    for (uint64_t k = 0; k < distinct; ++k) w[k] = std::pow(static_cast<double>(k + 1), -alpha);
    std::discrete_distribution<uint64_t> zipf(w.begin(), w.end());
    const size_t n = 2000 + rng() % 3000;
    const uint64_t per_batch = 1 + rng() % 64;
    ReplayStream s;
    for (size_t i = 0; i < n; ++i) {
      s.rows.push_back(zipf(rng) * 7919 % 100003);  // spread over the row space
      s.batch.push_back(i / per_batch);
    }
    s.split = static_cast<size_t>(0.7 * static_cast<double>(n));
    const PolicyReplay replay(s, 1.0);
    for (uint64_t cache_rows : {1u, 20u, 64u, 100u, 300u}) {
      const PolicyRates p = replay.at(cache_rows, 100003);
      SCOPED_TRACE("trial " + std::to_string(trial) + " rows " + std::to_string(cache_rows));
      EXPECT_EQ(p.slots % kFbgemmWays, 0u);
      for (double rate : {p.lru, p.lfu, p.fbgemm_lru, p.fbgemm_lfu, p.fbgemm_lru_prefetch}) EXPECT_LE(rate, p.optimal + 1e-15);
      EXPECT_GE(p.headroom(), 0.0);
      EXPECT_EQ(p.chosen_rate(), std::max(p.fbgemm_lru, p.fbgemm_lfu));
    }
  }
}

TEST(CachePolicies, TheWholeStreamsLruIsCacheReplaysLru) {
  // A recorded Zipf-like stream that fits the ordered sample whole (rate 1): the fully
  // associative LRU replay equals cache_replay.h's held-out LRU at the same slots.
  stats::StatsConfig cfg;
  cfg.ordered_sample_refs = 1 << 16;
  stats::TableIngestor ing(5000, cfg);
  std::mt19937_64 rng(3);
  std::vector<double> w(5000);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 1.0 / static_cast<double>(k + 1);
  std::discrete_distribution<int64_t> zipf(w.begin(), w.end());
  stats::TableAggregate total;
  for (int step = 0; step < 20; ++step) {
    std::vector<int64_t> idx(1000);
    for (auto& x : idx) x = zipf(rng);
    ing.add(idx.data(), idx.size());
    stats::TableAggregate d = ing.take_delta();
    if (step == 0) total = std::move(d);
    else ASSERT_TRUE(total.merge(d));
  }
  std::string why;
  const auto lru = CacheReplay::of(total, why);
  ASSERT_TRUE(lru) << why;
  const auto replay = PolicyReplay::of(total, 1000.0, why);
  ASSERT_TRUE(replay) << why;
  EXPECT_EQ(replay->rate(), 1.0);
  for (uint64_t k : {32u, 100u, 500u, 2000u}) {
    const PolicyRates p = replay->at(k, 5000);
    EXPECT_NEAR(p.lru, lru->lru_hit_rate(p.slots), 1e-12) << k;
    EXPECT_LE(p.fbgemm_lru, p.optimal);
    EXPECT_LE(p.lru, p.optimal);
  }
}

}  // namespace
}  // namespace edo::tuner
