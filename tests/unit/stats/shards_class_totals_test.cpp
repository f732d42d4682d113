// The SHARDS sampler's class totals (references per frequency class, by the row's running count
// since the sampler started; docs/stats.md "post-stratification") are tallied as the counts
// grow, not summed over every row's count at each flush. Checked against a brute-force
// simulation of the stream and against the per-flush sum over the final counts that the
// sampler used before (kept here as the reference), on random streams split at random.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "internal.h"
#include "test_util.h"

namespace edo::stats {
namespace {

using detail::ShardsSampler;

// The sampler's count slot of a row: the row itself up to kCountSlots rows, else a hash bucket
// (rows sharing a bucket share a count), as documented in internal.h.
uint64_t count_slot(uint64_t row, uint64_t rows) {
  return rows <= ShardsSampler::kCountSlots ? row
                                            : (hash::sample_hash(row) >> 24) & (ShardsSampler::kCountSlots - 1);
}

uint32_t class_of(uint64_t count) {
  return std::min<uint32_t>(ShardsSampler::kClasses - 1, 63u - static_cast<uint32_t>(__builtin_clzll(count)));
}

// Brute force: every reference's class from its slot's running count including itself.
std::vector<uint64_t> simulated_totals(const std::vector<uint64_t>& s, uint64_t rows) {
  std::vector<uint64_t> count(ShardsSampler::kCountSlots, 0);  // every slot is below it
  std::vector<uint64_t> t(ShardsSampler::kClasses, 0);
  for (uint64_t r : s) ++t[class_of(++count[count_slot(r, rows)])];
  return t;
}

// The sampler's former flush: for every slot's final count n, the counts 1..n split by class.
std::vector<uint64_t> totals_from_final_counts(const std::vector<uint64_t>& s, uint64_t rows) {
  std::vector<uint64_t> count(ShardsSampler::kCountSlots, 0);
  for (uint64_t r : s) ++count[count_slot(r, rows)];
  std::vector<uint64_t> t(ShardsSampler::kClasses, 0);
  for (const uint64_t n : count)
    for (uint32_t k = 0; k < ShardsSampler::kClasses; ++k) {
      const uint64_t lo = uint64_t{1} << k;
      if (lo > n) break;
      const uint64_t hi = k + 1 == ShardsSampler::kClasses ? n : std::min<uint64_t>(n, (lo << 1) - 1);
      t[k] += hi - lo + 1;
    }
  return t;
}

void check_stream(uint64_t rows, double alpha, size_t n, uint64_t seed) {
  const auto trace = testing::zipf_trace(rows, alpha, n, seed);
  const std::vector<uint64_t> s(trace.begin(), trace.end());
  ShardsSampler sampler(0.01, rows, true);
  std::mt19937_64 rng(seed);
  for (size_t off = 0; off < s.size();) {
    const size_t k = std::min<size_t>(s.size() - off, 1 + rng() % 3000);
    sampler.process(s.data() + off, k);
    off += k;
  }
  const auto want = simulated_totals(s, rows);
  EXPECT_EQ(totals_from_final_counts(s, rows), want) << "the reference formulas disagree";
  EXPECT_EQ(sampler.class_refs(), want) << rows << " rows, alpha " << alpha;
}

TEST(ShardsClassTotals, MatchTheRunningCountsOfARowPerRowTable) {
  check_stream(100'000, 1.05, 400'000, 1);  // hot rows reach classes 10 and more
  check_stream(1'000, 1.2, 200'000, 2);     // a few rows in the top classes
  check_stream(1u << 20, 0.0, 300'000, 3);  // uniform: classes 0 and 1
}

TEST(ShardsClassTotals, MatchTheRunningCountsOfHashBuckets) {
  // Above kCountSlots rows the counts are per hash bucket: buckets' classes, not rows'.
  check_stream(uint64_t{1} << 24, 1.05, 400'000, 4);
  check_stream(uint64_t{1} << 22, 0.0, 3'000'000, 5);  // ~3 rows a bucket: shared counts
}

}  // namespace
}  // namespace edo::stats
