// replan() for plans over several devices (private to tuner/; docs/tuning.md "Placement").
#pragma once

#include <cstdint>

#include "edo/model/tune.h"

namespace edo::tuner {

// The single-device plan under a total budget: the knapsack's choice, totals, frontier, the
// smallest total budget (plan.cpp; replan() for one device).
void plan_total(model::TuneResult& r, uint64_t total_budget, double max_error);

// The plan over r.devices devices of `device_budget` bytes each: the candidates are chosen under
// the total (devices x budget) and the chosen tables placed (edo/tuner/placement.h); when they
// do not place, the total is tightened and the choice made again, down to the plan with the
// fewest bytes. r.budget_bytes becomes the per-device budget and r.min_feasible_bytes the
// smallest per-device budget at which the fewest-bytes plan places (bisection over the
// placement). Deterministic.
void replan_devices(model::TuneResult& r, uint64_t device_budget, double max_error);

}  // namespace edo::tuner
