// `edo diff --plan PLAN TRIAL [BASELINE]`: a plan proven by a trial run on the job itself (issue
// 29). The trial is a recording of the job with the plan applied (`edo record --apply-plan`), the
// baseline one without. What is judged: each applied table's recorded bytes against the plan's
// (within 1 %), the trial's losses all finite, and its final loss within a limit of the
// baseline's. The verdict is data here; cmd_diff.cpp words it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"
#include "edo/model/training.h"
#include "edo/model/tune.h"

namespace edo::cli {

// Recorded bytes within this share of the plan's count as the plan's.
inline constexpr double kTrialBytesTolerance = 0.01;

struct TrialTable {
  std::string name;
  std::string strategy;              // the plan's: "int8", "unchanged", "shared", ...
  uint64_t planned_device_bytes = 0;
  uint64_t planned_host_bytes = 0;
  std::optional<double> planned_error;
  std::optional<uint64_t> recorded_bytes;  // unset: not in the trial recording
  std::string recorded_shape;              // "rows x dim dtype"
  std::optional<double> bytes_change;      // (recorded - planned) / planned
  // What the trial's apply said (pytorch.plan_applied): false with its reason when it could not
  // apply the table's strategy; true when it applied it or said nothing of the table.
  bool applied = true;
  std::string not_applied_why;
  bool judged = false;                     // counted in the bytes check
  std::string note;                        // why it is not judged ("" when judged)
};

struct PlanTrial {
  std::vector<TrialTable> tables;
  bool has_baseline = false;
  model::LossSummary trial_loss, baseline_loss;
  std::optional<double> trial_step_s, baseline_step_s;  // seconds per step (duration / steps)
  std::optional<double> loss_change;                     // (trial final - baseline final) / |baseline final|
  std::vector<std::string> notes;                        // what could not be judged, one line each
  bool held = false;
  std::string verdict;                                   // "the plan held (...)", "the plan broke training at ..."
};

// `trial_tables` are table_views(trial). max_loss_delta: the final loss's largest relative change.
PlanTrial judge_plan_trial(const model::TuneResult& plan, const model::Profile& trial,
                           const std::vector<model::TableView>& trial_tables, const model::Profile* baseline,
                           double max_loss_delta);

// A loss as text: 0.6931, nan, inf, -inf.
std::string loss_text(double v);

}  // namespace edo::cli
