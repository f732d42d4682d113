// The plan's optimiser (docs/tuning.md "The plan"): a multiple-choice knapsack that picks one option per
// item (a table, or tables sharing weights) with the least total step time whose total device
// bytes fit a budget, and the Pareto frontier of whole plans (device bytes vs step time).
//
// Method: the items' option sets are merged one item at a time into the set of non-dominated
// (bytes, time) sums, each point remembering how it was made. The result is exact unless the
// set grows beyond `max_frontier` points; then it is thinned to points at least
// (largest - smallest bytes) / max_frontier apart, which can cost the plan at most that many
// bytes of slack against the budget (never a plan over the budget).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "edo/model/tune_vocabulary.h"

namespace edo::tuner {

struct PlanOption {
  uint64_t device_bytes = 0;
  uint64_t host_bytes = 0;
  double step_us = 0;     // finite, >= 0
  size_t id = 0;          // the caller's handle (a candidate index), returned in Solution::chosen
  // What the option loses, in integer units (loss_units()): sums are exact, so plans of equal
  // loss compare equal and their times decide.
  int64_t loss = 0;
  uint64_t ssd_bytes = 0;
};

// Limits on the host and SSD bytes of a whole plan (`edo tune --host-budget`, `--ssd-budget`);
// 0: none. With none, the plan is the one-budget knapsack above. With one, the one-budget plan
// is taken when it meets them (its frontier and smallest budget are then the one-budget
// search's); else the partial plans over a limit are dropped and a partial plan is kept unless
// another is no worse in device, host and SSD bytes and the objective's key (exact but for the
// thinning above, which then keeps points by device bytes alone; slower, as more points are
// kept: 14 s for 1,000 tables of 8 options, 20 with host and SSD options, on the loaded 2-core
// VM, against 2.5 s without limits).
struct TierLimits {
  uint64_t host = 0, ssd = 0;
  bool any() const { return host > 0 || ssd > 0; }
};

// A loss (error, retraining) in the integer units of PlanOption::loss: 1e-9 each.
int64_t loss_units(double loss);

// The plan's objective (edo/model/tune_vocabulary.h). kSpeed: the least step time within the
// budget, then the least loss (an option that is as fast and loses less is kept beside one with
// fewer bytes). kLeastChange: the least loss within the budget, then the least step time.
using Objective = model::Objective;

struct PlanItem {
  std::vector<PlanOption> options;  // the options allowed (under the error limit); none: infeasible
};

struct Solution {
  bool feasible = false;
  // The smallest total device bytes any choice reaches; UINT64_MAX when some item has no option.
  uint64_t min_feasible_bytes = 0;
  std::vector<size_t> chosen;         // one option id per item (empty when infeasible)
  uint64_t device_bytes = 0, host_bytes = 0, ssd_bytes = 0;
  double step_us = 0;
  int64_t loss = 0;
  // Whole plans no other beats in bytes and the objective's key, bytes ascending. Under kSpeed
  // the (bytes, step time) Pareto frontier (times descending).
  std::vector<std::pair<uint64_t, double>> frontier;
};

// Ties (equal key) go to fewer bytes, then to the option listed first.
Solution solve_plan(const std::vector<PlanItem>& items, uint64_t budget_bytes, size_t max_frontier = size_t{1} << 14,
                    Objective objective = Objective::kSpeed, TierLimits limits = {});

}  // namespace edo::tuner
