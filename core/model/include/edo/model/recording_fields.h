// The stored fields of a recording's records (profile.h), each declared once (fields.h): every
// table of the .edodb but the tuner's (tune_fields.h) and the file's own edo_meta and
// schema_migrations (docs/database.md). A new field is one line here plus its migration step
// (db/src/schema.cpp); docs/development.md "Adding a field" says how.
#pragma once

#include <cstdint>
#include <string>

#include "edo/model/fields.h"
#include "edo/model/profile.h"
#include "edo/model/weights.h"
#include "edo/stats/table_stats.h"

namespace edo::model {

// The rows of a name -> count map (Session::drops, Table::extra_by_kind), one per entry.
struct NamedCount {
  std::string name;
  uint64_t count = 0;
};

// One entry of Profile::metadata.
struct MetadataEntry {
  std::string key;
  std::string value;
};

// The headline numbers of a table's statistics, beside its serialized aggregate in table_stats
// (for plain SQL readers and the outline, which skips the aggregate).
struct StoredStatistics {
  std::string counts_mode;  // "exact" or "sketch"
  uint64_t lookups = 0;
  uint64_t unique_rows = 0;
  uint64_t out_of_range = 0;
};

// One traced process (sessions; id is the store's own). Its drop counters are kSessionDropFields'
// rows, its place in a distributed job kSessionIdentityFields', its losses kStepLossFields'.
inline constexpr Record<Session, 13> kSessionFields{"sessions", {{
    {"command", "TEXT NOT NULL", &Session::command},
    {"host", "TEXT NOT NULL", &Session::host},
    {"pid", "INTEGER NOT NULL", &Session::pid},
    {"parent_pid", "INTEGER NOT NULL", &Session::parent_pid},
    {"rank", "INTEGER", &Session::rank},
    {"local_rank", "INTEGER", &Session::local_rank},
    {"start_unix_ns", "INTEGER NOT NULL", &Session::start_unix_ns},
    {"duration_ns", "INTEGER NOT NULL", &Session::duration_ns},
    {"exit_code", "INTEGER", &Session::exit_code, nullptr, InPlan::kNo, kInt32Min, kInt32Max},
    {"gpus", "TEXT NOT NULL", &Session::gpus},
    {"source", "TEXT NOT NULL", &Session::source},
    {"dropped_events", "INTEGER NOT NULL", &Session::dropped_events},
    {"steps", "INTEGER NOT NULL", &Session::steps},
}}};

// Each loss counter of a session by name (session_drops; session_id is its session's).
inline constexpr Record<NamedCount, 2> kSessionDropFields{"session_drops", {{
    {"name", "TEXT NOT NULL", &NamedCount::name},
    {"count", "INTEGER NOT NULL", &NamedCount::count},
}}};

// Where a session's process sits in a distributed job (session_identity; session_id is its
// session's; a session without any of it has no row).
inline constexpr Record<RankIdentity, 6> kSessionIdentityFields{"session_identity", {{
    {"job_id", "TEXT NOT NULL", &RankIdentity::job_id},
    {"master", "TEXT NOT NULL", &RankIdentity::master},
    {"world_size", "INTEGER", &RankIdentity::world_size},
    {"group_rank", "INTEGER", &RankIdentity::group_rank},
    {"local_world_size", "INTEGER", &RankIdentity::local_world_size},
    {"clock_shift_ns", "INTEGER NOT NULL", &RankIdentity::clock_shift_ns},
}}};

// A session's loss per step (session_losses; session_id and position, the order noted, are the
// store's, and so is nonfinite: SQLite stores a NaN as NULL, so a non-finite loss is NULL plus
// its name, "nan", "inf" or "-inf").
inline constexpr Record<StepLoss, 2> kStepLossFields{"session_losses", {{
    {"step", "INTEGER NOT NULL", &StepLoss::step},
    {"loss", "REAL", &StepLoss::loss},
}}};

// Free-form facts about the recording (metadata).
inline constexpr Record<MetadataEntry, 2> kMetadataFields{"metadata", {{
    {"key", "TEXT", &MetadataEntry::key},
    {"value", "TEXT NOT NULL", &MetadataEntry::value},
}}};

// One embedding table of a session (tables; id and session_id are the store's own, and the
// optimizer's columns are kOptimizerParamFields'). Its statistics live in table_stats.
inline constexpr Record<Table, 10> kRecordedTableFields{"tables", {{
    {"name", "TEXT NOT NULL", &Table::name},
    {"rows", "INTEGER NOT NULL", &Table::rows},
    {"dim", "INTEGER NOT NULL", &Table::dim, nullptr, InPlan::kNo, 0, UINT32_MAX},
    {"dtype", "TEXT NOT NULL", &Table::dtype},
    {"device", "TEXT NOT NULL", &Table::device},
    {"weight_bytes", "INTEGER NOT NULL", &Table::weight_bytes},
    {"optimizer_bytes", "INTEGER NOT NULL", &Table::optimizer_bytes},
    {"grad_bytes", "INTEGER NOT NULL DEFAULT 0", &Table::grad_bytes},
    {"dense_use", "TEXT NOT NULL DEFAULT ''", &Table::dense_use},
    {"base_address", "INTEGER NOT NULL", &Table::base_address, nullptr, InPlan::kNo, kAnyBits},
}}};

// A table's statistics' headline numbers (table_stats; table_id is its table's, and the
// aggregate, a BLOB that stats::TableAggregate::serialize() writes, is the store's own).
inline constexpr Record<StoredStatistics, 4> kTableStatisticsFields{"table_stats", {{
    {"counts_mode", "TEXT NOT NULL", &StoredStatistics::counts_mode},
    {"lookups", "INTEGER NOT NULL", &StoredStatistics::lookups},
    {"unique_rows", "INTEGER NOT NULL", &StoredStatistics::unique_rows},
    {"out_of_range", "INTEGER NOT NULL", &StoredStatistics::out_of_range},
}}};

// A table's derived summary, written by the final save (table_summary; table_id is its table's,
// and zipf_alpha and zipf_fit_error, NULL when the fit is not valid, are the store's own).
inline constexpr Record<stats::TableSummary, 8> kTableSummaryFields{"table_summary", {{
    {"coverage_top_0_1pct", "REAL", &stats::TableSummary::coverage_top_0_1pct},
    {"coverage_top_1pct", "REAL", &stats::TableSummary::coverage_top_1pct},
    {"coverage_top_10pct", "REAL", &stats::TableSummary::coverage_top_10pct},
    {"lru_hit_1pct", "REAL", &stats::TableSummary::lru_hit_rate_1pct},
    {"lru_hit_10pct", "REAL", &stats::TableSummary::lru_hit_rate_10pct},
    {"lru_hit_50pct", "REAL", &stats::TableSummary::lru_hit_rate_50pct},
    {"lru_hit_100pct", "REAL", &stats::TableSummary::lru_hit_rate_100pct},
    {"mean_drift_jaccard", "REAL", &stats::TableSummary::mean_drift_jaccard},
}}};

// One point of a table's curves (table_curves; table_id and kind, "coverage", "lru" or "drift",
// are the store's).
inline constexpr Record<stats::CurvePoint, 2> kTableCurveFields{"table_curves", {{
    {"x", "REAL NOT NULL", &stats::CurvePoint::x},
    {"y", "REAL NOT NULL", &stats::CurvePoint::y},
}}};

// A table's extra memory by kind as reported (table_extra; table_id is its table's).
inline constexpr Record<NamedCount, 2> kTableExtraFields{"table_extra", {{
    {"kind", "TEXT NOT NULL", &NamedCount::name},
    {"bytes", "INTEGER NOT NULL", &NamedCount::count},
}}};

// When a table's rows were first read (table_first_seen; table_id is its table's).
inline constexpr Record<FirstSeenSegment, 3> kFirstSeenFields{"table_first_seen", {{
    {"position", "INTEGER NOT NULL", &FirstSeenSegment::position},
    {"new_rows", "INTEGER NOT NULL", &FirstSeenSegment::new_rows},
    {"lookups", "INTEGER NOT NULL", &FirstSeenSegment::lookups},
}}};

// A table's weight snapshot (weight_snapshots; table_id is its table's, and the BLOBs rows,
// little-endian uint64 row ids, and vals, the values, are the store's own).
inline constexpr Record<WeightSnapshot, 5> kWeightSnapshotFields{"weight_snapshots", {{
    {"dtype", "TEXT NOT NULL", &WeightSnapshot::dtype},
    {"dim", "INTEGER NOT NULL", &WeightSnapshot::dim, nullptr, InPlan::kNo, 1, 1 << 24},
    {"table_rows", "INTEGER NOT NULL", &WeightSnapshot::table_rows},
    {"population", "INTEGER NOT NULL", &WeightSnapshot::population},
    {"hot_count", "INTEGER NOT NULL", &WeightSnapshot::hot_count},
}}};

// Names sharing one base pointer (ties).
inline constexpr Record<Tie, 3> kTieFields{"ties", {{
    {"session_id", "INTEGER NOT NULL", &Tie::session_id},
    {"table_name", "TEXT NOT NULL", &Tie::table},
    {"tied_with", "TEXT NOT NULL", &Tie::tied_with},
}}};

// A device allocation or free (memory_events): the largest row set of a recording.
inline constexpr Record<MemoryEvent, 8> kMemoryEventFields{"memory_events", {{
    {"session_id", "INTEGER NOT NULL", &MemoryEvent::session_id},
    {"time_ns", "INTEGER NOT NULL", &MemoryEvent::time_ns},
    {"bytes", "INTEGER NOT NULL", &MemoryEvent::bytes},
    {"address", "INTEGER NOT NULL", &MemoryEvent::address, nullptr, InPlan::kNo, kAnyBits},
    {"stream", "INTEGER NOT NULL", &MemoryEvent::stream, nullptr, InPlan::kNo, kAnyBits},
    {"device", "INTEGER NOT NULL", &MemoryEvent::device, nullptr, InPlan::kNo, kInt32Min, kInt32Max},
    {"kind", "TEXT NOT NULL", &MemoryEvent::kind},
    {"table_name", "TEXT NOT NULL", &MemoryEvent::table},
}}};

// Per kernel name (kernels; tables, the names of the tables its pointer arguments point into
// joined by '\n', is the store's own).
inline constexpr Record<KernelStat, 4> kKernelFields{"kernels", {{
    {"session_id", "INTEGER NOT NULL", &KernelStat::session_id},
    {"name", "TEXT NOT NULL", &KernelStat::name},
    {"launches", "INTEGER NOT NULL", &KernelStat::launches},
    {"total_ns", "INTEGER NOT NULL", &KernelStat::total_ns},
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
