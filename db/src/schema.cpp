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

void record_version(SQLite::Database& db, int version) {
  SQLite::Statement ins(db, "INSERT OR REPLACE INTO schema_migrations(version, applied_unix) VALUES (?, ?)");
  ins.bind(1, version);
  ins.bind(2, static_cast<int64_t>(std::time(nullptr)));
  ins.exec();
  SQLite::Statement meta(db, "INSERT OR REPLACE INTO edo_meta(key, value) VALUES ('schema_version', ?)");
  meta.bind(1, std::to_string(version));
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

// Every step after version 1, in order. A new file is version 1 plus all of them, so that a
// created file and a migrated one have the same schema.
void apply_steps(SQLite::Database& db, int from) {
  if (from < 2) migrate_to_v2(db);
}

}  // namespace

void create(SQLite::Database& db) {
  for (const char* sql : kSchemaV1) db.exec(sql);
  apply_steps(db, 1);
  SQLite::Statement tag(db, "INSERT INTO edo_meta(key, value) VALUES ('format', ?)");
  tag.bind(1, kFormatTag);
  tag.exec();
  record_version(db, kCurrentVersion);
}

int read_version(SQLite::Database& db, const std::string& path) {
  if (!db.tableExists("edo_meta")) {
    throw DbError(path + ": not an edo database (no edo_meta table); record one with 'edo record' or 'edo synth'");
  }
  SQLite::Statement fmt_q(db, "SELECT value FROM edo_meta WHERE key = 'format'");
  if (!fmt_q.executeStep() || fmt_q.getColumn(0).getString() != kFormatTag) {
    throw DbError(path + ": not an edo database (format tag missing); record one with 'edo record' or 'edo synth'");
  }
  SQLite::Statement ver_q(db, "SELECT value FROM edo_meta WHERE key = 'schema_version'");
  if (!ver_q.executeStep()) throw DbError(path + ": corrupt edo database (no schema version)");
  try {
    return std::stoi(ver_q.getColumn(0).getString());
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
