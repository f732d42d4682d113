// Reading and writing the tuner's results (`edo tune`) in an .edodb: the run (machine,
// options), every candidate, the plan, its choices and its Pareto frontier. Report, export and
// the dashboard read them back without measuring again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/model/tune.h"

namespace edo::db {

// Writes one run with its plan in one transaction; fills in result.run_id and the candidates'
// ids. The store must be open for writing.
void save_tune_result(ProfileStore& store, model::TuneResult& result);

// Adds another plan (another budget or error limit over the same candidates) to a stored run.
void save_tune_plan(ProfileStore& store, const model::TuneResult& result);

// Run ids, oldest first.
std::vector<int64_t> tune_run_ids(const ProfileStore& store);

// A run with its latest plan. Throws DbError when there is no such run or it does not decode.
model::TuneResult load_tune_result(const ProfileStore& store, int64_t run_id);

// The latest run, or nothing when the file has never been tuned.
std::optional<model::TuneResult> load_latest_tune_result(const ProfileStore& store);

// The latest run whose latest plan is feasible (a run that found no plan, stopped early or
// not, never replaces the last good one), or nothing when no run found a plan.
std::optional<model::TuneResult> load_latest_good_tune_result(const ProfileStore& store);

// One line of `edo report`'s list of tune runs: each run with its latest plan.
struct TuneRunSummary {
  int64_t run_id = 0;
  int64_t created_unix = 0;
  std::string backend, device;
  model::Objective objective = model::Objective::kSpeed;
  model::StopReason stop_reason = model::StopReason::kNone;
  model::RunTiming timing_kind = model::RunTiming::kMeasured;  // schema 7 (older runs: measured on `device`)
  std::string timing_device;
  bool complete = true;
  bool feasible = false;
  uint64_t budget_bytes = 0;  // per device when devices > 1
  uint32_t devices = 1;       // schema 12 (older plans: one device)
  uint64_t plan_device_bytes = 0;
  uint64_t min_feasible_bytes = 0;
  double plan_step_us = 0;
};
// Every run, oldest first.
std::vector<TuneRunSummary> list_tune_runs(const ProfileStore& store);

}  // namespace edo::db
