// The multiple-choice knapsack: exact against brute force on small random instances, the
// frontier non-dominated, the budget never exceeded, infeasibility names the smallest budget.
#include "edo/tuner/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace edo::tuner {
namespace {

struct Best {
  bool feasible = false;
  double time = std::numeric_limits<double>::infinity();
  uint64_t bytes = 0, min_bytes = UINT64_MAX;
};

Best brute(const std::vector<PlanItem>& items, uint64_t budget) {
  Best b;
  std::vector<size_t> pick(items.size(), 0);
  while (true) {
    uint64_t bytes = 0;
    double t = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      bytes += items[i].options[pick[i]].device_bytes;
      t += items[i].options[pick[i]].step_us;
    }
    b.min_bytes = std::min(b.min_bytes, bytes);
    if (bytes <= budget && (t < b.time || (t == b.time && bytes < b.bytes))) {
      b.feasible = true;
      b.time = t;
      b.bytes = bytes;
    }
    size_t i = 0;
    while (i < items.size() && ++pick[i] == items[i].options.size()) pick[i++] = 0;
    if (i == items.size()) break;
  }
  return b;
}

TEST(Optimizer, MatchesBruteForceOnRandomInstances) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<PlanItem> items(1 + rng() % 5);
    size_t id = 0;
    for (auto& it : items) {
      const size_t n = 1 + rng() % 5;
      for (size_t k = 0; k < n; ++k) it.options.push_back({1 + rng() % 1000, rng() % 50, double(1 + rng() % 500) / 7.0, id++});
    }
    const uint64_t budget = rng() % 3000;
    const Solution s = solve_plan(items, budget);
    const Best b = brute(items, budget);
    ASSERT_EQ(s.feasible, b.feasible) << trial;
    EXPECT_EQ(s.min_feasible_bytes, b.min_bytes) << trial;
    if (!b.feasible) continue;
    EXPECT_NEAR(s.step_us, b.time, 1e-9) << trial;
    EXPECT_LE(s.device_bytes, budget);
    // The chosen ids add up to the reported totals.
    uint64_t bytes = 0;
    double t = 0;
    ASSERT_EQ(s.chosen.size(), items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      bool found = false;
      for (const auto& o : items[i].options)
        if (o.id == s.chosen[i]) {
          bytes += o.device_bytes;
          t += o.step_us;
          found = true;
        }
      ASSERT_TRUE(found);
    }
    EXPECT_EQ(bytes, s.device_bytes);
    EXPECT_NEAR(t, s.step_us, 1e-9);
    // The frontier is non-dominated and sorted; the plan is on it.
    for (size_t k = 1; k < s.frontier.size(); ++k) {
      EXPECT_GT(s.frontier[k].first, s.frontier[k - 1].first);
      EXPECT_LT(s.frontier[k].second, s.frontier[k - 1].second);
    }
    bool on = false;
    for (const auto& p : s.frontier) on = on || (p.first == s.device_bytes && std::fabs(p.second - s.step_us) < 1e-9);
    EXPECT_TRUE(on);
  }
}

TEST(Optimizer, NoOptionMeansInfeasibleWithoutBound) {
  std::vector<PlanItem> items(2);
  items[0].options.push_back({10, 0, 1.0, 0});
  const Solution s = solve_plan(items, 1000);
  EXPECT_FALSE(s.feasible);
  EXPECT_EQ(s.min_feasible_bytes, UINT64_MAX);
}

TEST(Optimizer, ThinnedFrontierStaysWithinBudgetAndCloseToOptimal) {
  std::mt19937_64 rng(3);
  std::vector<PlanItem> items(12);
  size_t id = 0;
  for (auto& it : items)
    for (int k = 0; k < 8; ++k) it.options.push_back({1000 + rng() % 100000, 0, double(1 + rng() % 1000), id++});
  const Solution exact = solve_plan(items, 400000, size_t{1} << 30);
  const Solution thin = solve_plan(items, 400000, 64);
  ASSERT_TRUE(exact.feasible && thin.feasible);
  EXPECT_LE(thin.device_bytes, 400000u);
  EXPECT_LE(thin.frontier.size(), 66u);
  EXPECT_GE(thin.step_us, exact.step_us);
  EXPECT_LE(thin.step_us, exact.step_us * 1.2);
}

}  // namespace
}  // namespace edo::tuner
