// `edo export --format fbgemm-bench`'s index distribution (tuner/src/io/plan_fbgemm_bench.cpp):
// FBGEMM's heavy hitters and Zipf fit (tbe_estimate_indices_distribution), on counts whose answer
// is known. torch_torchrec_real compares it with FBGEMM's own op on a job's ids.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "edo/tuner/fbgemm_bench.h"

namespace edo::tuner {
namespace {

// Heavy hitters: the top shares, descending, until they hold more than 90 % (hand computed:
// 0.5, 0.8, 0.9 (not more than 0.9), 0.95 -> four of them), whatever order the counts come in.
TEST(FbgemmBench, HeavyHittersStopPastNinetyPercent) {
  const IndicesDistribution d = estimate_indices_distribution({5, 30, 50, 5, 10});
  ASSERT_EQ(d.heavy_hitters.size(), 4u);
  EXPECT_DOUBLE_EQ(d.heavy_hitters[0], 0.5);
  EXPECT_DOUBLE_EQ(d.heavy_hitters[1], 0.3);
  EXPECT_DOUBLE_EQ(d.heavy_hitters[2], 0.1);
  EXPECT_DOUBLE_EQ(d.heavy_hitters[3], 0.05);
}

// At most 20 heavy hitters; a flat tail of 1000 equal rows.
TEST(FbgemmBench, AtMostTwentyHeavyHitters) {
  const IndicesDistribution d = estimate_indices_distribution(std::vector<uint64_t>(1000, 7));
  ASSERT_EQ(d.heavy_hitters.size(), 20u);
  for (double h : d.heavy_hitters) EXPECT_DOUBLE_EQ(h, 0.001);
}

// Counts drawn exactly from a Zipf (k + q)^-s, s = 1.1, q = 3, over 5000 ranks: the sweep finds s
// to its 0.01 grid and q within a few of its 0.25 steps (the counts are rounded, the likelihood
// has a 0.0001 q penalty, and FBGEMM's log table reads log(k + q + 7/8) for rank k).
TEST(FbgemmBench, ZipfSweepRecoversTheGeneratingExponent) {
  std::vector<uint64_t> counts;
  for (int k = 0; k < 5000; ++k) counts.push_back(static_cast<uint64_t>(std::llround(1e9 * std::pow(k + 3.0, -1.1))));
  const IndicesDistribution d = estimate_indices_distribution(counts);
  EXPECT_NEAR(d.zipf_s, 1.1, 0.015);
  EXPECT_NEAR(d.zipf_q, 3.0, 1.0);
}

// No counts: FBGEMM's defaults (ZipfParameters: q 1, s 2), no heavy hitters.
TEST(FbgemmBench, NoCountsGiveFbgemmDefaults) {
  const IndicesDistribution d = estimate_indices_distribution({});
  EXPECT_TRUE(d.heavy_hitters.empty());
  EXPECT_EQ(d.zipf_q, 1.0);
  EXPECT_EQ(d.zipf_s, 2.0);
}

}  // namespace
}  // namespace edo::tuner
