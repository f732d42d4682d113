// Tables too small to matter (issue 31, docs/tuning.md "Tables too small to matter"): on a
// recording of thousands of tables, most are small, and what any of them is encoded as moves
// the plan's total by less than the noise of the large ones. They keep their recorded format
// with their exact bytes and get no candidates and no timing runs.
//
// The rule: the smallest tuned tables whose recorded bytes together are at most 1 % of the
// budget (all devices' budgets together), smallest first. Whatever format those tables could
// have taken, the plan's device bytes could change by less than 1 % of the budget, so keeping
// them as recorded cannot make a plan infeasible that was one within 1 % of the budget. A
// per-table threshold (each table under some size) does not bound that sum: 3,500 tables of
// 1 MiB are 3.4 GiB. The rule applies to recordings of more than kMinTablesForSmall tuned
// tables (below that every table is timed in a few seconds anyway, and a user tuning a
// handful of tables sees each one's candidates) whose tables do not fit the budget as
// recorded (when they do, memory decides nothing and a plan is about speed, where a small
// table read often counts as much as a large one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "workload.h"

namespace edo::tuner {

inline constexpr double kSmallTablesFraction = 0.01;  // of the budget, all small tables together
inline constexpr size_t kMinTablesForSmall = 256;     // tuned tables; fewer: every table is tuned

struct SmallTables {
  std::vector<char> small;  // per group of the workload
  size_t count = 0;
  uint64_t bytes = 0;       // their recorded device bytes together
  uint64_t largest = 0;     // the largest small table's recorded device bytes
};

// The small tables of `w` for a budget of `budget_bytes` on each of `devices` devices
// (budget 0: none are small). Ties in size: workload order (largest first), so the last of
// equal tables is taken first; the choice is the same on every run.
SmallTables small_tables(const Workload& w, uint64_t budget_bytes, uint32_t devices);

}  // namespace edo::tuner
