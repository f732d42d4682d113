// The stored fields of the tuner's records (tune.h), each declared once (fields.h): the
// tune_* tables of the .edodb (docs/database.md) and the per-table keys of the plan document
// (docs/formats.md). A new field is one line here plus its migration step (db/src/schema.cpp);
// docs/development.md "Adding a field" says how.
//
// Order: a record's plan keys are written in the order declared here (fields that are not in
// the plan may go anywhere), so a new plan field goes last. Columns are bound and read by name:
// their order in the database does not matter.
#pragma once

#include <cstdint>
#include <utility>

#include "edo/model/fields.h"
#include "edo/model/tune.h"

namespace edo::model {

// One `edo tune` run (tune_runs; its notes, one per line, and its id are the store's own).
inline constexpr Record<TuneResult, 19> kTuneRunFields{"tune_runs", {{
    {"created_unix", "INTEGER NOT NULL", &TuneResult::created_unix},
    {"backend", "TEXT NOT NULL", &TuneResult::backend},
    {"device", "TEXT NOT NULL", &TuneResult::device},
    {"weights", "TEXT NOT NULL", &TuneResult::weights},
    {"budget_bytes", "INTEGER NOT NULL", &TuneResult::budget_bytes},
    {"max_error", "REAL", &TuneResult::max_error},
    {"tables_glob", "TEXT NOT NULL", &TuneResult::tables_glob},
    {"seed", "INTEGER NOT NULL", &TuneResult::seed},
    {"time_limit_s", "REAL NOT NULL", &TuneResult::time_limit_s},
    {"elapsed_s", "REAL NOT NULL", &TuneResult::elapsed_s},
    {"complete", "INTEGER NOT NULL", &TuneResult::complete},
    {"stop_reason", "TEXT NOT NULL", &TuneResult::stop_reason},
    {"candidates_total", "INTEGER NOT NULL", &TuneResult::candidates_total},
    {"candidates_measured", "INTEGER NOT NULL", &TuneResult::candidates_measured},
    {"timing_kind", "TEXT NOT NULL DEFAULT 'measured'", &TuneResult::timing_kind},
    {"timing_device", "TEXT NOT NULL DEFAULT ''", &TuneResult::timing_device},
    {"allow_unvalidated", "INTEGER NOT NULL DEFAULT 0", &TuneResult::allow_unvalidated},
    {"fine_tune", "INTEGER NOT NULL DEFAULT 0", &TuneResult::fine_tune},
    {"note_reasons", "TEXT NOT NULL DEFAULT ''", &TuneResult::note_reasons},
}}};

// A plan of a run (tune_plans; its id and run_id are the store's own). The latest plan's
// created_unix, budget_bytes and max_error are the result's.
inline constexpr Record<TuneResult, 16> kTunePlanFields{"tune_plans", {{
    {"created_unix", "INTEGER NOT NULL", &TuneResult::created_unix},
    {"budget_bytes", "INTEGER NOT NULL", &TuneResult::budget_bytes},
    {"max_error", "REAL", &TuneResult::max_error},
    {"feasible", "INTEGER NOT NULL", &TuneResult::feasible},
    {"min_feasible_bytes", "INTEGER NOT NULL", &TuneResult::min_feasible_bytes},
    {"baseline_device_bytes", "INTEGER NOT NULL", &TuneResult::baseline_device_bytes},
    {"baseline_host_bytes", "INTEGER NOT NULL", &TuneResult::baseline_host_bytes},
    {"baseline_step_us", "REAL NOT NULL", &TuneResult::baseline_step_us},
    {"plan_device_bytes", "INTEGER NOT NULL", &TuneResult::plan_device_bytes},
    {"plan_host_bytes", "INTEGER NOT NULL", &TuneResult::plan_host_bytes},
    {"plan_step_us", "REAL NOT NULL", &TuneResult::plan_step_us},
    {"objective", "TEXT NOT NULL DEFAULT 'speed'", &TuneResult::objective},
    {"devices", "INTEGER NOT NULL DEFAULT 1", &TuneResult::devices, nullptr, InPlan::kNo, 1, 65536},
    {"plan_ssd_bytes", "INTEGER NOT NULL DEFAULT 0", &TuneResult::plan_ssd_bytes},
    {"host_budget_bytes", "INTEGER NOT NULL DEFAULT 0", &TuneResult::host_budget_bytes},
    {"ssd_budget_bytes", "INTEGER NOT NULL DEFAULT 0", &TuneResult::ssd_budget_bytes},
}}};

// A table as the run saw it (tune_tables; run_id is the store's). In the plan: each table's
// object, after its choice's keys ("recorded_*": as recorded, beside the plan's figures).
inline constexpr Record<TuneTable, 12> kTuneTableFields{"tune_tables", {{
    {"name", "TEXT NOT NULL", &TuneTable::name},
    {"rows", "INTEGER NOT NULL", &TuneTable::rows, nullptr, InPlan::kOptional},
    {"dim", "INTEGER NOT NULL", &TuneTable::dim, nullptr, InPlan::kOptional, 0, 1 << 24},
    {"dtype", "TEXT NOT NULL", &TuneTable::dtype, nullptr, InPlan::kOptional},
    {"device_bytes", "INTEGER NOT NULL", &TuneTable::device_bytes, "recorded_device_bytes", InPlan::kOptional},
    {"lookups_per_step", "REAL NOT NULL", &TuneTable::lookups_per_step, nullptr, InPlan::kOptional},
    {"optimizer", "TEXT NOT NULL", &TuneTable::optimizer, "recorded_optimizer", InPlan::kOptional},
    {"training", "INTEGER NOT NULL DEFAULT 0", &TuneTable::training, nullptr, InPlan::kOptional},
    {"tuned", "INTEGER NOT NULL", &TuneTable::tuned, nullptr, InPlan::kOptional},
    {"shares_with", "TEXT NOT NULL", &TuneTable::shares_with},
    {"weights", "TEXT NOT NULL", &TuneTable::weights},
    {"dense_use", "TEXT NOT NULL DEFAULT ''", &TuneTable::dense_use},
}}};

// Every candidate of a run (tune_candidates; id and run_id are the store's). In the plan: the
// chosen candidate's keys in its table's object (a table kept as recorded: a default
// candidate's values, "" or null).
inline constexpr Record<TuneCandidate, 29> kTuneCandidateFields{"tune_candidates", {{
    {"table_name", "TEXT NOT NULL", &TuneCandidate::table},
    {"strategy", "TEXT NOT NULL", &TuneCandidate::strategy},
    {"spec", "TEXT NOT NULL", &TuneCandidate::spec, nullptr, InPlan::kOptional},
    {"params", "TEXT NOT NULL", &TuneCandidate::params},
    {"optimizer", "TEXT NOT NULL", &TuneCandidate::optimizer, nullptr, InPlan::kOptional},
    {"device_bytes", "INTEGER NOT NULL", &TuneCandidate::device_bytes},
    {"host_bytes", "INTEGER NOT NULL", &TuneCandidate::host_bytes},
    {"step_us", "REAL", &TuneCandidate::step_us},
    {"error", "REAL", &TuneCandidate::error},
    {"hit_rate", "REAL", &TuneCandidate::hit_rate, nullptr, InPlan::kNo, 0, 1},
    {"recorded_hit_rate", "REAL", &TuneCandidate::recorded_hit_rate, nullptr, InPlan::kOptional, 0, 1},
    {"needs_retraining", "INTEGER NOT NULL", &TuneCandidate::needs_retraining},
    {"measured", "INTEGER NOT NULL", &TuneCandidate::measured},
    {"measured_rows", "INTEGER NOT NULL", &TuneCandidate::measured_rows},
    {"note", "TEXT NOT NULL", &TuneCandidate::note},
    {"step_us_lo", "REAL", &TuneCandidate::step_us_lo},
    {"step_us_hi", "REAL", &TuneCandidate::step_us_hi},
    {"step_covers", "TEXT NOT NULL DEFAULT ''", &TuneCandidate::step_covers},
    {"forward_us", "REAL", &TuneCandidate::forward_us},
    {"backward_us", "REAL", &TuneCandidate::backward_us},
    {"update_us", "REAL", &TuneCandidate::update_us},
    {"heldout_hit_rate", "REAL", &TuneCandidate::heldout_hit_rate, nullptr, InPlan::kOptional, 0, 1},
    {"timing_kind", "TEXT NOT NULL DEFAULT ''", &TuneCandidate::timing_kind},
    {"timing_from", "TEXT NOT NULL DEFAULT ''", &TuneCandidate::timing_from},
    {"validated", "INTEGER NOT NULL DEFAULT 1", &TuneCandidate::validated},
    {"rejected", "TEXT NOT NULL DEFAULT ''", &TuneCandidate::rejected},
    {"ssd_bytes", "INTEGER NOT NULL DEFAULT 0", &TuneCandidate::ssd_bytes},
    {"note_reasons", "TEXT NOT NULL DEFAULT ''", &TuneCandidate::note_reasons},
    {"rejection", "TEXT NOT NULL DEFAULT ''", &TuneCandidate::rejection},
}}};

// A plan's choice for one table (tune_choices; plan_id and candidate_id are the store's). In
// the plan: the table's bytes, right after its strategy and params.
inline constexpr Record<TuneChoice, 9> kTuneChoiceFields{"tune_choices", {{
    {"table_name", "TEXT NOT NULL", &TuneChoice::table},
    {"shares_with", "TEXT NOT NULL", &TuneChoice::shares_with},
    {"device_bytes", "INTEGER NOT NULL", &TuneChoice::device_bytes, nullptr, InPlan::kRequired},
    {"host_bytes", "INTEGER NOT NULL", &TuneChoice::host_bytes, nullptr, InPlan::kRequired},
    {"step_us", "REAL NOT NULL", &TuneChoice::step_us},
    {"why", "TEXT NOT NULL", &TuneChoice::why},
    {"sharding", "TEXT NOT NULL DEFAULT ''", &TuneChoice::sharding},
    {"ssd_bytes", "INTEGER NOT NULL DEFAULT 0", &TuneChoice::ssd_bytes},
    {"why_reasons", "TEXT NOT NULL DEFAULT ''", &TuneChoice::why_reasons},
}}};

// One shard of a choice in a plan over several devices (tune_shards; plan_id, table_name and
// position are the store's). In the plan: each entry of a table's "sharding" "shards".
inline constexpr Record<TuneShard, 5> kTuneShardFields{"tune_shards", {{
    {"device", "INTEGER NOT NULL", &TuneShard::device, nullptr, InPlan::kRequired, 0, 65535},
    {"first", "INTEGER NOT NULL", &TuneShard::offset, "offset", InPlan::kRequired},
    {"size", "INTEGER NOT NULL", &TuneShard::size, nullptr, InPlan::kRequired},
    {"device_bytes", "INTEGER NOT NULL", &TuneShard::device_bytes, nullptr, InPlan::kRequired},
    {"lookups_per_step", "REAL NOT NULL", &TuneShard::lookups_per_step, nullptr, InPlan::kRequired},
}}};

// One point of a plan's Pareto frontier (tune_frontier; plan_id is the store's): device bytes and
// the step time at them.
using FrontierPoint = std::pair<uint64_t, double>;
inline constexpr Record<FrontierPoint, 2> kTuneFrontierFields{"tune_frontier", {{
    {"device_bytes", "INTEGER NOT NULL", &FrontierPoint::first},
    {"step_us", "REAL NOT NULL", &FrontierPoint::second},
}}};

}  // namespace edo::model
