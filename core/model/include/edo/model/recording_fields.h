// The stored fields of a recording's records (profile.h), each declared once (fields.h): its
// `tables`, `kernel_tables` and `ranges` rows in the .edodb (docs/database.md). A new field is one line here plus its
// migration step (db/src/schema.cpp); docs/development.md "Adding a field" says how.
#pragma once

#include <cstdint>

#include "edo/model/fields.h"
#include "edo/model/profile.h"

namespace edo::model {

// One embedding table of a session (tables; id, session_id and base_address, kept bit for bit,
// are the store's own, and the optimizer's columns are kOptimizerParamFields'). Its statistics
// live in table_stats.
inline constexpr Record<Table, 9> kRecordedTableFields{"tables", {{
    {"name", "TEXT NOT NULL", &Table::name},
    {"rows", "INTEGER NOT NULL", &Table::rows},
    {"dim", "INTEGER NOT NULL", &Table::dim, nullptr, InPlan::kNo, 0, UINT32_MAX},
    {"dtype", "TEXT NOT NULL", &Table::dtype},
    {"device", "TEXT NOT NULL", &Table::device},
    {"weight_bytes", "INTEGER NOT NULL", &Table::weight_bytes},
    {"optimizer_bytes", "INTEGER NOT NULL", &Table::optimizer_bytes},
    {"grad_bytes", "INTEGER NOT NULL DEFAULT 0", &Table::grad_bytes},
    {"dense_use", "TEXT NOT NULL DEFAULT ''", &Table::dense_use},
}}};

// A table's optimizer and hyperparameters, in its `tables` row (optimizer_kind, the store's own,
// is NULL when none was recorded). A NaN hyperparameter is stored as 0, what reads as "not set".
inline constexpr Record<OptimizerParams, 8> kOptimizerParamFields{"tables", {{
    {"optimizer_lr", "REAL NOT NULL DEFAULT 0", &OptimizerParams::lr},
    {"optimizer_eps", "REAL NOT NULL DEFAULT 0", &OptimizerParams::eps},
    {"optimizer_weight_decay", "REAL NOT NULL DEFAULT 0", &OptimizerParams::weight_decay},
    {"optimizer_beta1", "REAL NOT NULL DEFAULT 0", &OptimizerParams::beta1},
    {"optimizer_beta2", "REAL NOT NULL DEFAULT 0", &OptimizerParams::beta2},
    {"optimizer_momentum", "REAL NOT NULL DEFAULT 0", &OptimizerParams::momentum},
    {"optimizer_initial_accumulator_value", "REAL NOT NULL DEFAULT 0", &OptimizerParams::initial_accumulator_value},
    {"optimizer_maximize", "INTEGER NOT NULL DEFAULT 0", &OptimizerParams::maximize},
}}};

// Per kernel, per table it reads (kernel_tables; session_id and kernel are its kernel's).
inline constexpr Record<KernelTableStat, 3> kKernelTableFields{"kernel_tables", {{
    {"table_name", "TEXT NOT NULL", &KernelTableStat::table},
    {"launches", "INTEGER NOT NULL", &KernelTableStat::launches},
    {"total_ns", "INTEGER NOT NULL", &KernelTableStat::total_ns},
}}};

// Per NVTX range name (ranges).
inline constexpr Record<RangeStat, 6> kRangeFields{"ranges", {{
    {"session_id", "INTEGER NOT NULL", &RangeStat::session_id},
    {"name", "TEXT NOT NULL", &RangeStat::name},
    {"count", "INTEGER NOT NULL", &RangeStat::count},
    {"total_ns", "INTEGER NOT NULL", &RangeStat::total_ns},
    {"lookups", "INTEGER NOT NULL", &RangeStat::lookups},
    {"alloc_bytes", "INTEGER NOT NULL", &RangeStat::alloc_bytes},
}}};

}  // namespace edo::model
