#include "schema.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <ctime>
#include <string>

#include "edo/db/profile_store.h"

namespace edo::db::schema {
namespace {

// Version 1 (later versions: the steps in apply_steps). Each statement is one table;
// comments say what the columns mean.
const char* const kSchemaV1[] = {
    // Identifies the file and its schema version.
    "CREATE TABLE edo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_unix INTEGER NOT NULL)",
    // One row per traced process (or synth run).
    "CREATE TABLE sessions (id INTEGER PRIMARY KEY, command TEXT NOT NULL, host TEXT NOT NULL,"
    " pid INTEGER NOT NULL, parent_pid INTEGER NOT NULL, rank INTEGER, local_rank INTEGER,"
    " start_unix_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL, exit_code INTEGER,"
    " gpus TEXT NOT NULL, source TEXT NOT NULL, dropped_events INTEGER NOT NULL,"
    " steps INTEGER NOT NULL)",
    // One row per embedding table per session.
    "CREATE TABLE tables (id INTEGER PRIMARY KEY,"
    " session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL, rows INTEGER NOT NULL, dim INTEGER NOT NULL, dtype TEXT NOT NULL,"
    " device TEXT NOT NULL, base_address INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " extra_bytes INTEGER NOT NULL, UNIQUE(session_id, name))",
    // Access statistics: the mergeable aggregate (edo::stats::TableAggregate::serialize():
    // exact counts or count-min sketch + top-K, unique-row estimator, stack-distance
    // histogram, drift windows) plus the headline numbers for plain SQL readers.
    "CREATE TABLE table_stats (table_id INTEGER PRIMARY KEY REFERENCES tables(id) ON DELETE CASCADE,"
    " counts_mode TEXT NOT NULL, lookups INTEGER NOT NULL, unique_rows INTEGER NOT NULL,"
    " out_of_range INTEGER NOT NULL, aggregate BLOB NOT NULL)",
    // Derived summaries, written by the final save (absent after an interrupted recording;
    // readers recompute them from table_stats.aggregate).
    "CREATE TABLE table_summary (table_id INTEGER PRIMARY KEY REFERENCES tables(id) ON DELETE CASCADE,"
    " zipf_alpha REAL, zipf_fit_error REAL, coverage_top_0_1pct REAL, coverage_top_1pct REAL,"
    " coverage_top_10pct REAL, lru_hit_1pct REAL, lru_hit_10pct REAL, lru_hit_50pct REAL,"
    " lru_hit_100pct REAL, mean_drift_jaccard REAL)",
    // Curves: kind = 'coverage' (x = top k rows, y = share of lookups), 'lru' (x = cache
    // rows, y = hit rate), 'drift' (x = window index, y = Jaccard with the previous window).
    "CREATE TABLE table_curves (table_id INTEGER NOT NULL REFERENCES tables(id) ON DELETE CASCADE,"
    " kind TEXT NOT NULL, x REAL NOT NULL, y REAL NOT NULL)",
    "CREATE INDEX table_curves_by_table ON table_curves(table_id, kind)",
    // Names sharing one base pointer (tied weights).
    "CREATE TABLE ties (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    " table_name TEXT NOT NULL, tied_with TEXT NOT NULL, UNIQUE(session_id, table_name, tied_with))",
    // Device allocation (bytes > 0) and free (bytes < 0) events.
    "CREATE TABLE memory_events (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    " time_ns INTEGER NOT NULL, bytes INTEGER NOT NULL, address INTEGER NOT NULL,"
    " stream INTEGER NOT NULL, device INTEGER NOT NULL, kind TEXT NOT NULL, table_name TEXT NOT NULL)",
    "CREATE INDEX memory_events_by_session ON memory_events(session_id, time_ns)",
    // Per kernel name: launches, total GPU time, tables its pointer arguments point into
    // (tables: names joined by '\n').
    "CREATE TABLE kernels (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL, launches INTEGER NOT NULL, total_ns INTEGER NOT NULL, tables TEXT NOT NULL)",
    // Per NVTX range name.
    "CREATE TABLE ranges (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL, count INTEGER NOT NULL, total_ns INTEGER NOT NULL,"
    " lookups INTEGER NOT NULL, alloc_bytes INTEGER NOT NULL)",
    "CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    // Tuner output (filled by `edo tune`): one row per table x candidate strategy, and plans.
    "CREATE TABLE tune_candidates (id INTEGER PRIMARY KEY, table_name TEXT NOT NULL,"
    " strategy TEXT NOT NULL, params TEXT NOT NULL, memory_bytes INTEGER NOT NULL,"
    " lookup_us_per_step REAL, error REAL, needs_retraining INTEGER NOT NULL, hit_rate REAL,"
    " backend TEXT NOT NULL)",
    "CREATE TABLE tune_plans (id INTEGER PRIMARY KEY, created_unix INTEGER NOT NULL,"
    " budget_bytes INTEGER NOT NULL, error_limit REAL, total_bytes INTEGER NOT NULL,"
    " total_us_per_step REAL, plan_json TEXT NOT NULL)",
};

// Version 3 (tuner): per-kind extra bytes (the optimizer-state lever needs to know which
// optimizer a table has), weight snapshots (`edo record --weights`), and the tuner's results
// (runs, every candidate, plans, their choices and Pareto frontiers). Version 1 had two
// placeholder tune tables that no edo wrote: migrate_to_v3() drops them when empty and renames
// them (*_v1) otherwise, so nothing is lost.
const char* const kStepV3[] = {
    "CREATE TABLE table_extra (table_id INTEGER NOT NULL REFERENCES tables(id) ON DELETE CASCADE,"
    " kind TEXT NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY (table_id, kind))",
    // rows: little-endian uint64 row ids (hot rows first); vals: rows x dim elements of dtype.
    "CREATE TABLE weight_snapshots (table_id INTEGER PRIMARY KEY REFERENCES tables(id) ON DELETE CASCADE,"
    " dtype TEXT NOT NULL, dim INTEGER NOT NULL, table_rows INTEGER NOT NULL, population INTEGER NOT NULL,"
    " hot_count INTEGER NOT NULL, rows BLOB NOT NULL, vals BLOB NOT NULL)",
    // One `edo tune` run: the machine, the options and how far it got (notes: caveats, one per line).
    "CREATE TABLE tune_runs (id INTEGER PRIMARY KEY, created_unix INTEGER NOT NULL, backend TEXT NOT NULL,"
    " device TEXT NOT NULL, weights TEXT NOT NULL, budget_bytes INTEGER NOT NULL, max_error REAL,"
    " tables_glob TEXT NOT NULL, seed INTEGER NOT NULL, time_limit_s REAL NOT NULL, elapsed_s REAL NOT NULL,"
    " complete INTEGER NOT NULL, stop_reason TEXT NOT NULL, candidates_total INTEGER NOT NULL,"
    " candidates_measured INTEGER NOT NULL, notes TEXT NOT NULL)",
    // The tables as the run saw them (baseline).
    "CREATE TABLE tune_tables (run_id INTEGER NOT NULL REFERENCES tune_runs(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL, rows INTEGER NOT NULL, dim INTEGER NOT NULL, dtype TEXT NOT NULL,"
    " device_bytes INTEGER NOT NULL, lookups_per_step REAL NOT NULL, tuned INTEGER NOT NULL,"
    " shares_with TEXT NOT NULL, weights TEXT NOT NULL, optimizer TEXT NOT NULL)",
    // Every candidate (measured or not: note says why). params: JSON object.
    "CREATE TABLE tune_candidates (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES tune_runs(id)"
    " ON DELETE CASCADE, table_name TEXT NOT NULL, strategy TEXT NOT NULL, spec TEXT NOT NULL,"
    " params TEXT NOT NULL, optimizer TEXT NOT NULL, device_bytes INTEGER NOT NULL, host_bytes INTEGER NOT NULL,"
    " step_us REAL, error REAL, hit_rate REAL, recorded_hit_rate REAL, needs_retraining INTEGER NOT NULL,"
    " measured INTEGER NOT NULL, measured_rows INTEGER NOT NULL, note TEXT NOT NULL)",
    "CREATE INDEX tune_candidates_by_run ON tune_candidates(run_id, table_name)",
    // A plan under one budget and error limit (max_error NULL: none).
    "CREATE TABLE tune_plans (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES tune_runs(id)"
    " ON DELETE CASCADE, created_unix INTEGER NOT NULL, budget_bytes INTEGER NOT NULL, max_error REAL,"
    " feasible INTEGER NOT NULL, min_feasible_bytes INTEGER NOT NULL, baseline_device_bytes INTEGER NOT NULL,"
    " baseline_host_bytes INTEGER NOT NULL, baseline_step_us REAL NOT NULL, plan_device_bytes INTEGER NOT NULL,"
    " plan_host_bytes INTEGER NOT NULL, plan_step_us REAL NOT NULL)",
    // The plan's choice per table (candidate_id NULL: kept as recorded, not tuned).
    "CREATE TABLE tune_choices (plan_id INTEGER NOT NULL REFERENCES tune_plans(id) ON DELETE CASCADE,"
    " table_name TEXT NOT NULL, candidate_id INTEGER, shares_with TEXT NOT NULL, device_bytes INTEGER NOT NULL,"
    " host_bytes INTEGER NOT NULL, step_us REAL NOT NULL, why TEXT NOT NULL)",
    "CREATE TABLE tune_frontier (plan_id INTEGER NOT NULL REFERENCES tune_plans(id) ON DELETE CASCADE,"
    " device_bytes INTEGER NOT NULL, step_us REAL NOT NULL)",
};

void record_version(SQLite::Database& db, int version) {
  SQLite::Statement ins(db, "INSERT OR REPLACE INTO schema_migrations(version, applied_unix) VALUES (:version, :applied_unix)");
  ins.bind(":version", version);
  ins.bind(":applied_unix", static_cast<int64_t>(std::time(nullptr)));
  ins.exec();
  SQLite::Statement meta(db, "INSERT OR REPLACE INTO edo_meta(key, value) VALUES ('schema_version', :value)");
  meta.bind(":value", std::to_string(version));
  meta.exec();
}

// Version 2: `bytes` meant three things. tables.bytes becomes weight_bytes, extra_bytes
// (optimizer state and gradients together) becomes optimizer_bytes, and gradients get their
// own column. A version-1 file cannot tell its two extras apart: they stay in optimizer_bytes.
void migrate_to_v2(SQLite::Database& db) {
  db.exec("ALTER TABLE tables RENAME COLUMN bytes TO weight_bytes");
  db.exec("ALTER TABLE tables RENAME COLUMN extra_bytes TO optimizer_bytes");
  db.exec("ALTER TABLE tables ADD COLUMN grad_bytes INTEGER NOT NULL DEFAULT 0");
}

// Version 3 (tuner): see kStepV3. The v1 placeholder tune tables are dropped when empty and
// renamed (*_v1) otherwise.
void migrate_to_v3(SQLite::Database& db) {
  for (const char* old : {"tune_candidates", "tune_plans"}) {
    const bool empty = db.execAndGet(std::string("SELECT COUNT(*) FROM ") + old).getInt64() == 0;
    db.exec(empty ? std::string("DROP TABLE ") + old : std::string("ALTER TABLE ") + old + " RENAME TO " + old + "_v1");
  }
  for (const char* sql : kStepV3) db.exec(sql);
}

// Version 4: every loss counter of a session by name (edo/model/drops.h), beside the
// sessions.dropped_events total. Older files have none: their total stays where it was.
void migrate_to_v4(SQLite::Database& db) {
  db.exec("CREATE TABLE session_drops (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
          " name TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY(session_id, name))");
}

// Version 5: per (kernel, table), the launches of the kernel whose pointer arguments
// point into the table, and their GPU time (issue 9).
void migrate_to_v5(SQLite::Database& db) {
  db.exec("CREATE TABLE kernel_tables (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
          " kernel TEXT NOT NULL, table_name TEXT NOT NULL, launches INTEGER NOT NULL, total_ns INTEGER NOT NULL)");
}

// Version 6 (issue 19): what each tune plan optimises ("least-change" or "speed",
// edo/tuner/tuner.h; plans made before were all the fastest within the error limit: 'speed'),
// the interval of each candidate's step time (NULL: unknown, as in older runs), and when each
// table's rows were first read (edo/model/first_seen.h; no rows: unknown, as in older files).
// A file whose version was set back by hand (the tests of earlier steps do that) may have the
// columns already: the step adds each only when missing.
void add_column_if_missing(SQLite::Database& db, const char* table, const char* column, const char* type) {
  SQLite::Statement q(db, "SELECT COUNT(*) AS n FROM pragma_table_info(:table) WHERE name = :column");
  q.bind(":table", table);
  q.bind(":column", column);
  if (q.executeStep() && q.getColumn("n").getInt64() == 0)
    db.exec(std::string("ALTER TABLE ") + table + " ADD COLUMN " + column + " " + type);
}

void migrate_to_v6(SQLite::Database& db) {
  add_column_if_missing(db, "tune_plans", "objective", "TEXT NOT NULL DEFAULT 'speed'");
  add_column_if_missing(db, "tune_candidates", "step_us_lo", "REAL");
  add_column_if_missing(db, "tune_candidates", "step_us_hi", "REAL");
  db.exec("CREATE TABLE IF NOT EXISTS table_first_seen (table_id INTEGER NOT NULL REFERENCES tables(id) ON DELETE CASCADE,"
          " position INTEGER NOT NULL, new_rows INTEGER NOT NULL, lookups INTEGER NOT NULL, PRIMARY KEY (table_id, position))");
}

// Version 7 (issue 19 point 4): what each candidate's step time covers ("forward pooled bag",
// "forward+backward+adam update (dense gradient)", ...; '' in older runs: not recorded) and its
// forward, backward and update parts (NULL: not split).
void migrate_to_v7(SQLite::Database& db) {
  add_column_if_missing(db, "tune_candidates", "step_covers", "TEXT NOT NULL DEFAULT ''");
  add_column_if_missing(db, "tune_candidates", "forward_us", "REAL");
  add_column_if_missing(db, "tune_candidates", "backward_us", "REAL");
  add_column_if_missing(db, "tune_candidates", "update_us", "REAL");
}

// Version 8 (issue 22): where each process sits in a distributed job (edo/model/rank_identity.h),
// one row per session that has any of it: torchrun's run id, the rendezvous endpoint, world
// size, node index, ranks on its node, and the clock shift `edo merge --align start` applied.
void migrate_to_v8(SQLite::Database& db) {
  db.exec("CREATE TABLE IF NOT EXISTS session_identity (session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,"
          " job_id TEXT NOT NULL, master TEXT NOT NULL, world_size INTEGER, group_rank INTEGER, local_world_size INTEGER,"
          " clock_shift_ns INTEGER NOT NULL)");
}

// Version 9 (issue 19 point 5): whether a tune run's times were measured on its machine or
// modelled for a GPU that was not there (edo/tuner/device_model.h), and that device's name.
// Runs before were all measured on their own device ('' reads as the run's device).
void migrate_to_v9(SQLite::Database& db) {
  add_column_if_missing(db, "tune_runs", "timing_kind", "TEXT NOT NULL DEFAULT 'measured'");
  add_column_if_missing(db, "tune_runs", "timing_device", "TEXT NOT NULL DEFAULT ''");
}

// Version 10 (issue 19, caches from the real stream): each offload candidate's hit rate on the
// held-out part of the recorded order (NULL: not replayed, as in older runs). The order itself
// travels in each table's aggregate (table_stats.aggregate, byte format version 2: the ordered
// sample, docs/stats.md); older aggregates (version 1) have none and still decode.
void migrate_to_v10(SQLite::Database& db) { add_column_if_missing(db, "tune_candidates", "heldout_hit_rate", "REAL"); }

// Version 11 (issue 19 point 8): where each candidate's step time comes from: timing_kind
// 'measured' on its table, 'twin' (timed on timing_from, a table of the same shape and access
// counts) or 'predicted' (from timing_from, its class's measured representative); '' when not
// timed or stored before (older runs: unknown).
void migrate_to_v11(SQLite::Database& db) {
  add_column_if_missing(db, "tune_candidates", "timing_kind", "TEXT NOT NULL DEFAULT ''");
  add_column_if_missing(db, "tune_candidates", "timing_from", "TEXT NOT NULL DEFAULT ''");
}

// Version 12 (issue 22 point 3): plans over several devices (`edo tune --devices N`): how many
// devices a plan is for (budget_bytes per device; older plans: one), each choice's sharding
// ('' in a single-device plan) and its shards, one row each in shard order (device, first row
// or column, how many, bytes, lookups per step).
void migrate_to_v12(SQLite::Database& db) {
  add_column_if_missing(db, "tune_plans", "devices", "INTEGER NOT NULL DEFAULT 1");
  add_column_if_missing(db, "tune_choices", "sharding", "TEXT NOT NULL DEFAULT ''");
  db.exec("CREATE TABLE IF NOT EXISTS tune_shards (plan_id INTEGER NOT NULL REFERENCES tune_plans(id) ON DELETE CASCADE,"
          " table_name TEXT NOT NULL, position INTEGER NOT NULL, device INTEGER NOT NULL, first INTEGER NOT NULL,"
          " size INTEGER NOT NULL, device_bytes INTEGER NOT NULL, lookups_per_step REAL NOT NULL,"
          " PRIMARY KEY (plan_id, table_name, position))");
}

// Version 13: whether each tuned table trains (gradients or optimizer state recorded): a table
// trained by plain SGD has no optimizer state, and was taken for an inference table. Runs saved
// before knew the optimizer's state only.
void migrate_to_v13(SQLite::Database& db) {
  add_column_if_missing(db, "tune_tables", "training", "INTEGER NOT NULL DEFAULT 0");
  db.exec("UPDATE tune_tables SET training = 1 WHERE optimizer != ''");
}

// Version 14 (issue 29): what the PyTorch hooks saw of the training itself. The loss per step
// (session_losses, in the order noted: `position`; `loss` is NULL when not finite and
// `nonfinite` says which, 'nan', 'inf' or '-inf', since SQLite stores a NaN as NULL), each
// table's optimizer and hyperparameters (optimizer_kind NULL: not recorded, as in older files)
// and what read its weight whole (dense_use, '' when nothing did or older files).
void migrate_to_v14(SQLite::Database& db) {
  db.exec("CREATE TABLE IF NOT EXISTS session_losses (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
          " position INTEGER NOT NULL, step INTEGER NOT NULL, loss REAL, nonfinite TEXT NOT NULL DEFAULT '',"
          " PRIMARY KEY (session_id, position))");
  add_column_if_missing(db, "tables", "optimizer_kind", "TEXT");
  for (const char* c : {"optimizer_lr", "optimizer_eps", "optimizer_weight_decay", "optimizer_beta1", "optimizer_beta2",
                        "optimizer_momentum", "optimizer_initial_accumulator_value"})
    add_column_if_missing(db, "tables", c, "REAL NOT NULL DEFAULT 0");
  add_column_if_missing(db, "tables", "optimizer_maximize", "INTEGER NOT NULL DEFAULT 0");
  add_column_if_missing(db, "tables", "dense_use", "TEXT NOT NULL DEFAULT ''");
}

// Version 15 (issue 29): what keeps a plan from hurting its job. Per candidate whether its loss
// was measured on held-out lookups (validated) and why it is never offered (rejected: the
// job's optimizer simulated in its format went non-finite or lost its updates); per tuned table
// what read its weights whole (dense_use); per run whether unvalidated candidates were allowed.
// Older runs: every candidate validated, nothing rejected (they were planned that way).
void migrate_to_v15(SQLite::Database& db) {
  add_column_if_missing(db, "tune_candidates", "validated", "INTEGER NOT NULL DEFAULT 1");
  add_column_if_missing(db, "tune_candidates", "rejected", "TEXT NOT NULL DEFAULT ''");
  add_column_if_missing(db, "tune_tables", "dense_use", "TEXT NOT NULL DEFAULT ''");
  add_column_if_missing(db, "tune_runs", "allow_unvalidated", "INTEGER NOT NULL DEFAULT 0");
}

// Version 16 (issue 33): whether the user said the tuned run is a fine-tune (`edo tune
// --fine-tune`), which is what lets a plan freeze a table. Older runs: not a fine-tune.
void migrate_to_v16(SQLite::Database& db) {
  add_column_if_missing(db, "tune_runs", "fine_tune", "INTEGER NOT NULL DEFAULT 0");
}

// Version 17 (issue 35 point 2): a third memory tier. Each candidate's and each choice's bytes on
// the SSD (the ssd strategy keeps the whole table there behind a device and a host cache), the
// plan's total of them, and the host and SSD budgets the plan was made under (0: no limit).
// Older plans: nothing on the SSD, no host or SSD limit.
void migrate_to_v17(SQLite::Database& db) {
  add_column_if_missing(db, "tune_candidates", "ssd_bytes", "INTEGER NOT NULL DEFAULT 0");
  add_column_if_missing(db, "tune_choices", "ssd_bytes", "INTEGER NOT NULL DEFAULT 0");
  add_column_if_missing(db, "tune_plans", "plan_ssd_bytes", "INTEGER NOT NULL DEFAULT 0");
  add_column_if_missing(db, "tune_plans", "host_budget_bytes", "INTEGER NOT NULL DEFAULT 0");
  add_column_if_missing(db, "tune_plans", "ssd_budget_bytes", "INTEGER NOT NULL DEFAULT 0");
}

// Version 18 (issue 36 point 2): the reasons marked in a run's notes, a candidate's note and a
// choice's why (edo/model/tune_reasons.h), so that the dashboard words a stored run's advice
// with its own fields' names, and why a rejected candidate was rejected. Older runs: none marked
// (their texts read as stored), no cause ('': `rejected` says it in words).
void migrate_to_v18(SQLite::Database& db) {
  add_column_if_missing(db, "tune_runs", "note_reasons", "TEXT NOT NULL DEFAULT ''");
  add_column_if_missing(db, "tune_candidates", "note_reasons", "TEXT NOT NULL DEFAULT ''");
  add_column_if_missing(db, "tune_choices", "why_reasons", "TEXT NOT NULL DEFAULT ''");
  add_column_if_missing(db, "tune_candidates", "rejection", "TEXT NOT NULL DEFAULT ''");
}

// Every step after version 1, in order. A new file is version 1 plus all of them, so that a
// created file and a migrated one have the same schema.
void apply_steps(SQLite::Database& db, int from) {
  if (from < 2) migrate_to_v2(db);
  if (from < 3) migrate_to_v3(db);
  if (from < 4) migrate_to_v4(db);
  if (from < 5) migrate_to_v5(db);
  if (from < 6) migrate_to_v6(db);
  if (from < 7) migrate_to_v7(db);
  if (from < 8) migrate_to_v8(db);
  if (from < 9) migrate_to_v9(db);
  if (from < 10) migrate_to_v10(db);
  if (from < 11) migrate_to_v11(db);
  if (from < 12) migrate_to_v12(db);
  if (from < 13) migrate_to_v13(db);
  if (from < 14) migrate_to_v14(db);
  if (from < 15) migrate_to_v15(db);
  if (from < 16) migrate_to_v16(db);
  if (from < 17) migrate_to_v17(db);
  if (from < 18) migrate_to_v18(db);
}

}  // namespace

void create(SQLite::Database& db) {
  for (const char* sql : kSchemaV1) db.exec(sql);
  apply_steps(db, 1);
  SQLite::Statement tag(db, "INSERT INTO edo_meta(key, value) VALUES ('format', :value)");
  tag.bind(":value", kFormatTag);
  tag.exec();
  record_version(db, kCurrentVersion);
}

int read_version(SQLite::Database& db, const std::string& path) {
  if (!db.tableExists("edo_meta")) {
    throw DbError(path + ": not an edo database (no edo_meta table); record one with 'edo record' or 'edo synth'");
  }
  SQLite::Statement fmt_q(db, "SELECT value FROM edo_meta WHERE key = 'format'");
  if (!fmt_q.executeStep() || fmt_q.getColumn("value").getString() != kFormatTag) {
    throw DbError(path + ": not an edo database (format tag missing); record one with 'edo record' or 'edo synth'");
  }
  SQLite::Statement ver_q(db, "SELECT value FROM edo_meta WHERE key = 'schema_version'");
  if (!ver_q.executeStep()) throw DbError(path + ": corrupt edo database (no schema version)");
  try {
    return std::stoi(ver_q.getColumn("value").getString());
  } catch (const std::exception&) {
    throw DbError(path + ": corrupt edo database (schema version is not a number)");
  }
}

void migrate(SQLite::Database& db, int from) {
  // Forward migrations: the steps after `from` (see apply_steps), then the new version.
  apply_steps(db, from);
  if (from < kCurrentVersion) record_version(db, kCurrentVersion);
}

}  // namespace edo::db::schema
