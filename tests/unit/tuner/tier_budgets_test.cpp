// Per-tier budgets (issue 35 point 2): the knapsack under host and SSD limits is exact against
// brute force on small random instances (every choice enumerated, the fastest within the
// device budget and both limits), never exceeds a limit, and says infeasible when none fits;
// the SSD tier's device bytes and modelled miss time against figures worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "edo/tuner/optimizer.h"
#include "ssd_candidates.h"

namespace edo::tuner {
namespace {

struct Best {
  bool feasible = false;
  double time = std::numeric_limits<double>::infinity();
};

Best brute(const std::vector<PlanItem>& items, uint64_t budget, TierLimits limits) {
  Best b;
  std::vector<size_t> pick(items.size(), 0);
  while (true) {
    uint64_t bytes = 0, host = 0, ssd = 0;
    double t = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const PlanOption& o = items[i].options[pick[i]];
      bytes += o.device_bytes;
      host += o.host_bytes;
      ssd += o.ssd_bytes;
      t += o.step_us;
    }
    const bool fits = bytes <= budget && (!limits.host || host <= limits.host) && (!limits.ssd || ssd <= limits.ssd);
    if (fits && t < b.time) {
      b.feasible = true;
      b.time = t;
    }
    size_t i = 0;
    while (i < items.size() && ++pick[i] == items[i].options.size()) pick[i++] = 0;
    if (i == items.size()) break;
  }
  return b;
}

TEST(TierBudgets, TheKnapsackUnderHostAndSsdLimitsMatchesBruteForce) {
  std::mt19937_64 rng(35);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<PlanItem> items(1 + rng() % 5);
    size_t id = 0;
    for (auto& item : items)
      for (size_t k = 0, n = 1 + rng() % 4; k < n; ++k) {
        PlanOption o;
        o.device_bytes = rng() % 100;
        o.host_bytes = rng() % 3 ? 0 : rng() % 100;
        o.ssd_bytes = rng() % 3 ? 0 : rng() % 100;
        o.step_us = static_cast<double>(rng() % 1000) / 8;  // exact in binary: sums compare exactly
        o.id = id++;
        item.options.push_back(o);
      }
    const uint64_t budget = rng() % 300;
    const TierLimits limits{rng() % 2 ? 1 + rng() % 150 : 0, rng() % 2 ? 1 + rng() % 150 : 0};
    const Best want = brute(items, budget, limits);
    const Solution got = solve_plan(items, budget, size_t{1} << 14, Objective::kSpeed, limits);
    ASSERT_EQ(got.feasible, want.feasible) << "trial " << trial;
    if (!want.feasible) continue;
    EXPECT_EQ(got.step_us, want.time) << "trial " << trial;
    EXPECT_LE(got.device_bytes, budget);
    if (limits.host) EXPECT_LE(got.host_bytes, limits.host) << "trial " << trial;
    if (limits.ssd) EXPECT_LE(got.ssd_bytes, limits.ssd) << "trial " << trial;
    // The chosen options add up to what the solution says.
    uint64_t host = 0, ssd = 0;
    for (size_t i = 0; i < items.size(); ++i)
      for (const auto& o : items[i].options)
        if (o.id == got.chosen[i]) {
          host += o.host_bytes;
          ssd += o.ssd_bytes;
        }
    EXPECT_EQ(host, got.host_bytes);
    EXPECT_EQ(ssd, got.ssd_bytes);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(TierBudgets, NoLimitsIsTheOneBudgetPlanAndAnUnmeetableLimitIsInfeasible) {
  // Two tables: on the device (fast, large) or on the SSD (slow, small on the device).
  std::vector<PlanItem> items(2);
  items[0].options = {{100, 0, 1.0, 0, 0, 0}, {10, 5, 9.0, 1, 0, 1000}};
  items[1].options = {{100, 0, 1.0, 2, 0, 0}, {10, 5, 9.5, 3, 0, 2000}};
  const Solution free = solve_plan(items, 120, size_t{1} << 14, Objective::kSpeed);
  ASSERT_TRUE(free.feasible);
  EXPECT_EQ(free.step_us, 10.0);  // one table on the SSD
  EXPECT_EQ(free.ssd_bytes, 1000u);  // the first table (the second is slower there)
  // An SSD limit of 1500 keeps the 2000-byte table off the SSD; 500 keeps both off: none fits.
  EXPECT_EQ(solve_plan(items, 120, size_t{1} << 14, Objective::kSpeed, {0, 1500}).ssd_bytes, 1000u);
  const Solution none = solve_plan(items, 120, size_t{1} << 14, Objective::kSpeed, {0, 500});
  EXPECT_FALSE(none.feasible);
  EXPECT_EQ(none.min_feasible_bytes, 200u) << "the smallest device budget within the limits: both on the device";
  EXPECT_FALSE(solve_plan(items, 20, size_t{1} << 14, Objective::kSpeed, {9, 0}).feasible) << "both on the SSD need 10 host bytes";
  EXPECT_TRUE(solve_plan(items, 20, size_t{1} << 14, Objective::kSpeed, {10, 0}).feasible);
}

TEST(SsdCandidates, DeviceCacheBytesAndMissTimeByHand) {
  // 100 rows of 64 bytes: 4 sets of 32 = 128 slots: 128 x 64 + 128 x 8 x 2 = 10240.
  EXPECT_EQ(ssd_device_cache_bytes(100, 64), 10240u);
  EXPECT_EQ(ssd_device_cache_bytes(32, 16), 32u * 32);
  // 1000 fetches of 512-byte rows over 25 GB/s: 20.48 us; 100 SSD reads at TorchRec's
  // 100 MiB/s: 51200 / 104857600 s = 488.28125 us.
  SsdLinks links;
  std::string basis;
  EXPECT_DOUBLE_EQ(ssd_added_us(1000, 100, 512, links, basis), 20.48 + 488.28125);
  EXPECT_NE(basis.find("TorchRec's planner default of 100 MiB/s"), std::string::npos) << basis;
  // Measured storage: 100 reads at 200,000 row reads/s at queue depth 32: 500 us.
  kernels::StorageFigures f;
  f.row_read_bytes = 4096;
  f.row_qd32.reads_per_s = 200000;
  links.storage = f;
  links.storage_source = "device profile test";
  EXPECT_DOUBLE_EQ(ssd_added_us(1000, 100, 512, links, basis), 20.48 + 500);
  EXPECT_NE(basis.find("queue depth 32"), std::string::npos) << basis;
}

TEST(SsdCandidates, OfferedOnlyPastTheHostBudgetOrWhatTheDeviceBudgetLeaves) {
  TableGroup g;
  g.name = "t";
  g.rows = 1000;
  g.dim = 16;
  g.weight_bytes = 64000;
  g.lookups_per_step = 10;
  EXPECT_EQ(ssd_not_offered(g, {0, 0}), "no host or SSD budget");
  EXPECT_EQ(ssd_not_offered(g, {64000, 0}), "fits the host budget and what the device budget leaves it");
  EXPECT_EQ(ssd_not_offered(g, {63999, 0}), "");
  // --ssd-budget alone: past what the device budget leaves the table (none without a budget).
  EXPECT_NE(ssd_not_offered(g, {0, 1 << 20}), "");
  g.budget_left_bytes = 64000;
  EXPECT_NE(ssd_not_offered(g, {0, 1 << 20}), "");
  g.budget_left_bytes = 63999;
  EXPECT_EQ(ssd_not_offered(g, {0, 1 << 20}), "");
  EXPECT_EQ(ssd_not_offered(g, {0, 63999}), "larger than the SSD budget");
  g.dense_use = "lm_head";
  EXPECT_EQ(ssd_not_offered(g, {0, 1 << 20}), "read whole by lm_head");
  g.dense_use.clear();
  g.optimizer_bytes = 8000;
  EXPECT_EQ(ssd_not_offered(g, {0, 1 << 20}), "") << "a trained table is offered the tier too (ssd_training_test.cpp)";
}

}  // namespace
}  // namespace edo::tuner
