// The plan document's top-level keys (edo.plan/1, docs/formats.md), each declared once
// (edo/model/fields.h): plan_to_json() writes them and plan import reads them back, type- and
// range-checked, from JSON and YAML alike. The document's order is the goldens': each
// declaration is one run of keys between those derived from other records (the tables, the
// frontier, the notes). A new top-level key goes at the end of kPlanTailFields, plus its
// column in tune_fields.h and migration when the store keeps it. Private to tuner/.
#pragma once

#include <cstdint>

#include "edo/model/fields.h"
#include "edo/model/tune.h"

namespace edo::tuner {

using model::InPlan;
using model::Record;
using model::TuneResult;

// Records of the plan document only: no table of the database (the store keeps these members
// in tune_runs and tune_plans, tune_fields.h).
inline constexpr const char* kPlanDocument = "";

// The first keys, after "schema": the budget, the error limit (null: none) and the machine.
inline constexpr Record<TuneResult, 5> kPlanHeadFields{kPlanDocument, {{
    {"budget_bytes", "", &TuneResult::budget_bytes, nullptr, InPlan::kRequired},
    {"max_error", "", &TuneResult::max_error, nullptr, InPlan::kRequired},
    {"backend", "", &TuneResult::backend, nullptr, InPlan::kRequired},
    {"device", "", &TuneResult::device, nullptr, InPlan::kRequired},
    {"weights", "", &TuneResult::weights, nullptr, InPlan::kRequired},
}}};

// "baseline": the job as recorded.
inline constexpr Record<TuneResult, 3> kPlanBaselineFields{kPlanDocument, {{
    {"device_bytes", "", &TuneResult::baseline_device_bytes, nullptr, InPlan::kRequired},
    {"step_us", "", &TuneResult::baseline_step_us, nullptr, InPlan::kRequired},
    {"host_bytes", "", &TuneResult::baseline_host_bytes, nullptr, InPlan::kOptional},
}}};

// "plan": the plan's totals (null when no plan fits).
inline constexpr Record<TuneResult, 4> kPlanTotalsFields{kPlanDocument, {{
    {"device_bytes", "", &TuneResult::plan_device_bytes, nullptr, InPlan::kRequired},
    {"step_us", "", &TuneResult::plan_step_us, nullptr, InPlan::kRequired},
    {"host_bytes", "", &TuneResult::plan_host_bytes, nullptr, InPlan::kOptional},
    {"ssd_bytes", "", &TuneResult::plan_ssd_bytes, nullptr, InPlan::kOptional},
}}};

// After the tables and the frontier: how the run went and its options (plans written before a
// key was added lack it and read its default). "feasible" must agree with "plan".
inline constexpr Record<TuneResult, 16> kPlanRunFields{kPlanDocument, {{
    {"candidates_measured", "", &TuneResult::candidates_measured, nullptr, InPlan::kRequired},
    {"candidates_total", "", &TuneResult::candidates_total, nullptr, InPlan::kOptional},
    {"feasible", "", &TuneResult::feasible, nullptr, InPlan::kOptional},
    {"min_feasible_bytes", "", &TuneResult::min_feasible_bytes, nullptr, InPlan::kOptional},
    {"complete", "", &TuneResult::complete, nullptr, InPlan::kOptional},
    {"stop_reason", "", &TuneResult::stop_reason, nullptr, InPlan::kNullIsDefault},
    {"elapsed_s", "", &TuneResult::elapsed_s, nullptr, InPlan::kOptional},
    {"time_limit_s", "", &TuneResult::time_limit_s, nullptr, InPlan::kNullIsDefault},
    {"seed", "", &TuneResult::seed, nullptr, InPlan::kOptional},
    {"tables_glob", "", &TuneResult::tables_glob, nullptr, InPlan::kOptional},
    {"created_unix", "", &TuneResult::created_unix, nullptr, InPlan::kOptional, 0, 9.2e18},
    {"objective", "", &TuneResult::objective, nullptr, InPlan::kOptional},
    {"allow_unvalidated", "", &TuneResult::allow_unvalidated, nullptr, InPlan::kOptional},
    {"fine_tune", "", &TuneResult::fine_tune, nullptr, InPlan::kOptional},
    {"host_budget_bytes", "", &TuneResult::host_budget_bytes, nullptr, InPlan::kNullIsDefault},
    {"ssd_budget_bytes", "", &TuneResult::ssd_budget_bytes, nullptr, InPlan::kNullIsDefault},
}}};

// "timing": whether the plan's step times were measured on its device or modelled for another
// (plans written before it: measured on their backend's device).
inline constexpr Record<TuneResult, 2> kPlanTimingFields{kPlanDocument, {{
    {"kind", "", &TuneResult::timing_kind, nullptr, InPlan::kRequired},
    {"device", "", &TuneResult::timing_device, nullptr, InPlan::kRequired},
}}};

// After the notes: the devices the plan is for (budget_bytes is per device; plans written
// before: one). A new top-level key goes here, last.
inline constexpr Record<TuneResult, 1> kPlanTailFields{kPlanDocument, {{
    {"devices", "", &TuneResult::devices, nullptr, InPlan::kOptional, 1, 65536},
}}};

}  // namespace edo::tuner
