// The managed-collision replay (mch_replay.h) on streams whose answer is worked out by hand from
// torchrec's MCHManagedCollisionModule (mc_modules.py); the same replay against torchrec's own
// module on longer streams is tests/integration/torch/mch_check.py.
#include <gtest/gtest.h>

#include <stdexcept>

#include "mch_replay.h"

namespace edo::tuner {
namespace {

// 3 slots (2 for ids, 1 the miss row), eviction every step: each step's ids are admitted before
// they are remapped. Step 2: id 3 (score 1/1) ties id 1 (2/(2-1+1) = 1) and loses the tie to the
// slot (stable order), id 2 (1/2) is evicted. Step 4: id 2 (4/1) evicts id 3 (1/(4-2+1)).
TEST(MchReplay, DistanceLfuEveryStepByHand) {
  const std::vector<std::vector<int64_t>> steps = {{1, 1, 2}, {3}, {1}, {2, 2, 2, 2}};
  const MchStats s = replay_mch(steps, {3, 1, MchPolicy::kDistanceLfu, 1.0});
  EXPECT_EQ(s.steps, 4u);
  EXPECT_EQ(s.lookups, 9u);
  EXPECT_EQ(s.hits, 9u);
  EXPECT_EQ(s.miss_row_reads, 0u);
  EXPECT_EQ(s.inserts, 4u);
  EXPECT_EQ(s.evictions, 2u);
  EXPECT_EQ(s.evictions_runs, 4u);
}

// Eviction every 2 steps: step 1 reads an empty table (2 misses); step 2 admits ids 1 (2/1) and
// 3 (1/1) over id 2 (1/(2-1+1)); step 3's id 2 misses; step 4 keeps 1 (2/3) and 3 (3/1) over 2 (1/2).
TEST(MchReplay, DistanceLfuEveryTwoStepsByHand) {
  const std::vector<std::vector<int64_t>> steps = {{1, 2}, {1, 3}, {2}, {3, 3}};
  const MchStats s = replay_mch(steps, {3, 2, MchPolicy::kDistanceLfu, 1.0});
  EXPECT_EQ(s.lookups, 7u);
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.miss_row_reads, 3u);
  EXPECT_EQ(s.inserts, 2u);
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.evictions_runs, 2u);
  EXPECT_DOUBLE_EQ(s.hit_rate(), 4.0 / 7.0);
  EXPECT_DOUBLE_EQ(s.own_row_rate(), 4.0 / 7.0);
  // Scored from step 3 on: the warm-up's lookups and admissions are not counted.
  const MchStats later = replay_mch(steps, {3, 2, MchPolicy::kDistanceLfu, 1.0}, 2);
  EXPECT_EQ(later.lookups, 3u);
  EXPECT_EQ(later.hits, 2u);
  EXPECT_EQ(later.inserts, 0u);
}

// LFU keeps the most counted ids whatever their age; LRU the most recent. Two slots for ids:
// ids 1 and 2 are read 5 times in step 1, id 3 once in each of steps 2 and 3, then step 4 reads
// 3 again. LFU: 3 (count 1 each round) never beats 1 or 2 (5): step 4 misses. LRU: step 2 admits
// 3 over 1 (same age 1 for both 1 and 2: the slot order keeps id 1 first; 2 is evicted), so
// step 4 hits.
TEST(MchReplay, LfuAndLruDifferAsTheirScoresSay) {
  const std::vector<std::vector<int64_t>> steps = {{1, 1, 1, 1, 1, 2, 2, 2, 2, 2}, {3}, {3}, {3}};
  const MchStats lfu = replay_mch(steps, {3, 1, MchPolicy::kLfu, 1.0});
  EXPECT_EQ(lfu.hits, 10u);
  EXPECT_EQ(lfu.lookups, 13u);
  EXPECT_EQ(lfu.inserts, 2u);
  EXPECT_EQ(lfu.evictions, 0u);
  const MchStats lru = replay_mch(steps, {3, 1, MchPolicy::kLru, 1.0});
  EXPECT_EQ(lru.hits, 13u);
  EXPECT_EQ(lru.inserts, 3u);
  EXPECT_EQ(lru.evictions, 1u);
}

TEST(MchReplay, BadConfigurationsAreRefusedWithTheReason) {
  EXPECT_THROW(replay_mch({{1}}, {1, 1, MchPolicy::kLfu, 1.0}), std::invalid_argument);
  EXPECT_THROW(replay_mch({{1}}, {4, 0, MchPolicy::kLfu, 1.0}), std::invalid_argument);
  EXPECT_THROW(replay_mch({{INT64_MAX}}, {4, 1, MchPolicy::kLfu, 1.0}), std::invalid_argument);
  EXPECT_EQ(mch_policy_from_name("lru"), MchPolicy::kLru);
  EXPECT_THROW(mch_policy_from_name("fifo"), std::invalid_argument);
}

}  // namespace
}  // namespace edo::tuner
