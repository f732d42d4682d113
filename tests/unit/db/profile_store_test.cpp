// ProfileStore: round trips, repeated saves, and clear errors on files that are not
// (valid, current) edo databases.
#include "edo/db/profile_store.h"

#include <SQLiteCpp/Database.h>
#include <sqlite3.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "edo/db/tune_store.h"
#include "recordings.h"

namespace edo::db {
namespace {

using namespace edo::model;

using testing::sample_profile;
using testing::temp_path;

void expect_error_mentions(const std::string& path, const std::string& needle) {
  try {
    ProfileStore store(path, ProfileStore::Mode::kReadOnly);
    store.load();
    FAIL() << "expected DbError for " << path;
  } catch (const DbError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

// Builds `path` from a dump of an older version's file (tests/unit/db/fixtures/schema_vN.sql).
void write_fixture(const std::string& fixture, const std::string& path) {
  std::filesystem::remove(path);
  std::ifstream in(std::string(EDO_DB_FIXTURES "/") + fixture);
  ASSERT_TRUE(in) << EDO_DB_FIXTURES "/" << fixture;
  std::stringstream sql;
  sql << in.rdbuf();
  SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec(sql.str());
}

TEST(ProfileStore, RoundTripKeepsEverything) {
  const std::string path = temp_path("roundtrip.edodb");
  Profile p = sample_profile();
  {
    ProfileStore store(path, ProfileStore::Mode::kCreate);
    store.save(p);
  }
  for (const auto& t : p.tables) EXPECT_GT(t.id, 0);
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  Profile q = store.load();
  ASSERT_EQ(q.sessions.size(), 2u);
  EXPECT_EQ(q.sessions[0].command, p.sessions[0].command);
  EXPECT_EQ(q.sessions[0].rank, std::optional<int64_t>(0));
  EXPECT_FALSE(q.sessions[1].rank.has_value());
  EXPECT_EQ(q.sessions[0].exit_code, std::optional<int>(3));
  EXPECT_FALSE(q.sessions[1].exit_code.has_value());
  EXPECT_EQ(q.sessions[0].start_unix_ns, p.sessions[0].start_unix_ns);
  EXPECT_EQ(q.dropped_events(), 8u);
  ASSERT_EQ(q.tables.size(), 4u);
  for (size_t i = 0; i < q.tables.size(); ++i) {
    EXPECT_EQ(q.tables[i].name, p.tables[i].name);
    EXPECT_EQ(q.tables[i].rows, p.tables[i].rows);
    EXPECT_EQ(q.tables[i].base_address, p.tables[i].base_address);
    EXPECT_EQ(q.tables[i].weight_bytes, p.tables[i].weight_bytes);
    EXPECT_EQ(q.tables[i].optimizer_bytes, p.tables[i].optimizer_bytes);
    EXPECT_EQ(q.tables[i].grad_bytes, p.tables[i].grad_bytes);
    EXPECT_EQ(q.tables[i].aggregate.lookups(), p.tables[i].aggregate.lookups());
    EXPECT_EQ(q.tables[i].aggregate.unique_rows(), p.tables[i].aggregate.unique_rows());
  }
  EXPECT_EQ(q.tables[0].aggregate.count(3), 3u);
  EXPECT_EQ(q.tables[0].aggregate.count(2), 2u);
  EXPECT_EQ(q.tables[0].aggregate.count(4), 0u);
  ASSERT_EQ(q.ties.size(), 1u);
  EXPECT_EQ(q.ties[0].tied_with, "model.lm_head");
  ASSERT_EQ(q.memory_events.size(), 4u);
  EXPECT_EQ(q.memory_events[2].bytes, -64000);
  EXPECT_EQ(q.memory_events[3].stream, 7u);
  ASSERT_EQ(q.kernels.size(), 1u);
  EXPECT_EQ(q.kernels[0].tables, (std::vector<std::string>{"model.emb.user", "model.emb.item"}));
  ASSERT_EQ(q.kernels[0].per_table.size(), 2u);
  EXPECT_EQ(q.kernels[0].per_table[1].table, "model.emb.item");
  EXPECT_EQ(q.kernels[0].per_table[1].launches, 5u);
  EXPECT_EQ(q.kernels[0].per_table[1].total_ns, 9000u);
  ASSERT_EQ(q.ranges.size(), 1u);
  EXPECT_EQ(q.ranges[0].lookups, 9u);
  EXPECT_EQ(q.metadata.at("edo_version"), "test");
  // Peak of the running sum: 64000 + 1600 = 65600 before the free.
  EXPECT_EQ(q.peak_bytes(), 65600);
}

TEST(ProfileStore, RepeatedSavesUpdateInPlace) {
  const std::string path = temp_path("repeated.edodb");
  Profile p = sample_profile();
  ProfileStore store(path, ProfileStore::Mode::kCreate);
  store.save(p, /*with_summaries=*/false);
  // More lookups arrive, a table and an event are added, the session ends.
  stats::TableIngestor ing(1000, stats::StatsConfig{});
  std::vector<int64_t> more{7, 7, 8};
  ing.add(more.data(), more.size());
  ASSERT_TRUE(p.tables[0].aggregate.merge(ing.take_delta()));
  p.sessions[0].duration_ns = 9'000'000'000;
  p.memory_events.push_back({1, 50, 100, 0xb000, 0, 0, "cudaMalloc", ""});
  Table extra = p.tables[1];
  extra.id = 0;
  extra.name = "model.emb.extra";
  p.tables.push_back(extra);
  store.save(p);
  Profile q = store.load();
  ASSERT_EQ(q.tables.size(), 5u);
  EXPECT_EQ(q.tables[0].aggregate.lookups(), 9u);
  EXPECT_EQ(q.tables[0].aggregate.count(7), 2u);
  EXPECT_EQ(q.sessions[0].duration_ns, 9'000'000'000);
  EXPECT_EQ(q.memory_events.size(), 5u);
  EXPECT_EQ(q.ties.size(), 1u);
}

TEST(ProfileStore, SummariesAreStoredForSqlReaders) {
  const std::string path = temp_path("summaries.edodb");
  Profile p = sample_profile();
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(p); }
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT COUNT(*) FROM table_summary").getInt(), 4);
  EXPECT_GT(db.execAndGet("SELECT COUNT(*) FROM table_curves WHERE kind = 'lru'").getInt(), 0);
  // Full-cache LRU hit rate of "model.emb.user" (session 1): 1 - unique/lookups = 1 - 3/6.
  EXPECT_DOUBLE_EQ(db.execAndGet("SELECT lru_hit_100pct FROM table_summary WHERE table_id = 1").getDouble(), 0.5);
}

// Databases written before the one dtype vocabulary (edo/dtype.h) hold the tracer's old
// names; they read back under the new names, and the file itself is left as it was.
TEST(ProfileStore, OldDtypeNamesReadAsTheOneVocabulary) {
  const std::string path = temp_path("old-dtypes.edodb");
  Profile p = sample_profile();
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(p); }
  const char* old_names[] = {"f32", "f16", "f8e4m3", "u8"};
  const char* new_names[] = {"fp32", "fp16", "fp8_e4m3", "uint8"};
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    for (int id = 1; id <= 4; ++id) {
      SQLite::Statement u(db, "UPDATE tables SET dtype = ? WHERE id = ?");
      u.bind(1, old_names[id - 1]);
      u.bind(2, id);
      ASSERT_EQ(u.exec(), 1);
    }
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  const Profile q = store.load();
  ASSERT_EQ(q.tables.size(), 4u);
  for (const auto& t : q.tables) {
    ASSERT_GE(t.id, 1);
    ASSERT_LE(t.id, 4);
    EXPECT_EQ(t.dtype, new_names[t.id - 1]) << "table " << t.id;
  }
  EXPECT_EQ(dtype_size("f8e4m3"), 1u);
  EXPECT_EQ(dtype_size("fp8_e4m3"), 1u);
  EXPECT_EQ(dtype_size("bf16"), 2u);
  EXPECT_EQ(dtype_size("nonsense"), 0u);
}

TEST(ProfileStore, OutlineHasEverythingButTheStatistics) {
  const std::string path = temp_path("outline.edodb");
  Profile p = sample_profile();
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(p); }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  ProfileStore::Outline o = store.load_outline();
  ASSERT_EQ(o.profile.tables.size(), p.tables.size());
  ASSERT_EQ(o.profile.sessions.size(), 2u);
  EXPECT_EQ(o.profile.memory_events.size(), p.memory_events.size());
  EXPECT_EQ(o.profile.kernels.size(), 1u);
  EXPECT_EQ(o.profile.ranges.size(), 1u);
  EXPECT_EQ(o.profile.peak_bytes(), p.peak_bytes());
  EXPECT_EQ(o.profile.table_bytes(), p.table_bytes());
  for (size_t i = 0; i < p.tables.size(); ++i) {
    const Table& t = o.profile.tables[i];
    EXPECT_EQ(t.name, p.tables[i].name);
    EXPECT_EQ(t.rows, p.tables[i].rows);
    EXPECT_TRUE(t.aggregate.empty());
    EXPECT_EQ(o.lookups_by_table.at(t.id), p.tables[i].aggregate.lookups());
  }
}

TEST(ProfileStore, LoadReportsProgressPerTableAndCanBeAbandoned) {
  const std::string path = temp_path("progress.edodb");
  Profile p = sample_profile();
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(p); }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  std::vector<std::pair<size_t, size_t>> calls;
  Profile q = store.load([&](size_t done, size_t total) { calls.emplace_back(done, total); });
  ASSERT_EQ(calls.size(), 4u);
  for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i], std::make_pair(i + 1, size_t{4}));
  EXPECT_EQ(q.tables[0].aggregate.lookups(), 6u);
  struct Abandon {};
  EXPECT_THROW(store.load([](size_t done, size_t) { if (done == 2) throw Abandon{}; }), Abandon);
  // The store is still usable afterwards.
  EXPECT_EQ(store.load().tables.size(), 4u);
}

TEST(ProfileStore, MissingFile) { expect_error_mentions(temp_path("does-not-exist.edodb"), "no such file"); }

TEST(ProfileStore, EmptyFile) {
  const std::string path = temp_path("empty.edodb");
  std::ofstream(path).close();
  expect_error_mentions(path, "empty file");
}

TEST(ProfileStore, NotSqlite) {
  const std::string path = temp_path("text.edodb");
  std::ofstream(path) << "this is a text file, not a database\n" << std::string(5000, 'x');
  expect_error_mentions(path, "not an edo database");
}

// Issue 30 §8: a write SQLite refuses for a reason that is not the disk ("not authorized", what
// a planted trigger calling load_extension met) was called "check free disk space".
TEST(ProfileStore, ARefusedWriteIsNotCalledADiskProblem) {
  const std::string path = temp_path("refused.edodb");
  std::filesystem::remove(path);
  ProfileStore store(path, ProfileStore::Mode::kCreate);
  sqlite3_set_authorizer(
      store.database().getHandle(),
      [](void*, int action, const char*, const char*, const char*, const char*) { return action == SQLITE_INSERT ? SQLITE_DENY : SQLITE_OK; },
      nullptr);
  Profile p = sample_profile();
  try {
    store.save(p);
    FAIL() << "expected DbError";
  } catch (const DbError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("refused the write"), std::string::npos) << what;
    EXPECT_EQ(what.find("disk space"), std::string::npos) << what;
  }
  sqlite3_set_authorizer(store.database().getHandle(), nullptr, nullptr);
}

// Issue 30 §8: objects edo did not create are refused on open, naming them; a file edo wrote opens.
TEST(ProfileStore, ForeignSchemaObjectsAreRefused) {
  for (const std::string sql : {"CREATE TRIGGER t1 AFTER INSERT ON metadata BEGIN DELETE FROM tables; END",
                                "CREATE VIEW v1 AS SELECT 1", "CREATE TABLE extra_stuff (x)",
                                "CREATE INDEX idx_evil ON tables(name)"}) {
    const std::string path = temp_path("foreign.edodb");
    std::filesystem::remove(path);
    {
      ProfileStore store(path, ProfileStore::Mode::kCreate);
      Profile p = sample_profile();
      store.save(p);
    }
    {
      SQLite::Database d(path, SQLite::OPEN_READWRITE);
      d.exec(sql);
    }
    for (auto mode : {ProfileStore::Mode::kReadOnly, ProfileStore::Mode::kReadWrite}) {
      try {
        ProfileStore store(path, mode);
        FAIL() << "opened despite: " << sql;
      } catch (const DbError& e) {
        EXPECT_NE(std::string(e.what()).find("holds SQL objects edo did not create"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(ProfileStore, SqliteButNotEdo) {
  const std::string path = temp_path("other.sqlite");
  std::filesystem::remove(path);
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("CREATE TABLE t (x INTEGER)");
  }
  expect_error_mentions(path, "not an edo database");
}

TEST(ProfileStore, Version4FilesAreMigratedToPerKernelTableFigures) {
  // A schema-4 file (before kernel_tables): made from a current one by undoing step 5.
  const std::string path = temp_path("v4.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("DROP TABLE kernel_tables");
    db.exec("DELETE FROM schema_migrations WHERE version >= 5");
    db.exec("UPDATE edo_meta SET value = '4' WHERE key = 'schema_version'");
  }
  Profile q = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(q.kernels.size(), 1u);
  EXPECT_EQ(q.kernels[0].launches, 12u);
  EXPECT_TRUE(q.kernels[0].per_table.empty()) << "a version-4 file has no per-table figures";
  {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    EXPECT_TRUE(db.tableExists("kernel_tables"));
    EXPECT_EQ(db.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
              std::to_string(current_schema_version()));
  }
  q.kernels[0].per_table = {{"model.emb.user", 12, 34000}};
  ProfileStore(path, ProfileStore::Mode::kReadWrite).save(q);
  q = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(q.kernels[0].per_table.size(), 1u);
  EXPECT_EQ(q.kernels[0].per_table[0].total_ns, 34000u);
}

TEST(ProfileStore, NewerSchemaIsRefusedWithUpgradeHint) {
  const std::string path = temp_path("newer.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("UPDATE edo_meta SET value = '999' WHERE key = 'schema_version'");
  }
  expect_error_mentions(path, "newer edo");
}

TEST(ProfileStore, TruncatedFilesGiveAnErrorNotACrash) {
  const std::string path = temp_path("full.edodb");
  Profile p = sample_profile();
  // Make the file span many pages so that truncation cuts through table data.
  stats::TableIngestor ing(200000, stats::StatsConfig{});
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < 200000; i += 3) idx.push_back(i);
  ing.add(idx.data(), idx.size());
  p.tables[1].rows = 200000;
  p.tables[1].aggregate = ing.take_delta();
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(p); }
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 16384u);
  int errors = 0;
  for (uintmax_t cut : {uintmax_t{100}, uintmax_t{4096}, size / 3, size / 2, size - 4096}) {
    const std::string cut_path = temp_path("cut.edodb");
    std::filesystem::copy_file(path, cut_path, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(cut_path, cut);
    try {
      ProfileStore store(cut_path, ProfileStore::Mode::kReadOnly);
      store.load();
    } catch (const DbError& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find(cut_path), std::string::npos);
    }
  }
  EXPECT_GE(errors, 4);  // every cut that loses data is reported
}

TEST(ProfileStore, SaveRejectsSessionsWithoutIds) {
  const std::string path = temp_path("noid.edodb");
  Profile p = sample_profile();
  p.sessions[1].id = 0;
  ProfileStore store(path, ProfileStore::Mode::kCreate);
  EXPECT_THROW(store.save(p), DbError);
}

// A file written by schema version 1, where tables.bytes held the weights and extra_bytes the
// optimizer state and gradients together: opening it migrates it in place to the split fields.
TEST(ProfileStore, SchemaV1FileMigratesToTheBytesSplit) {
  const std::string path = temp_path("v1.edodb");
  std::filesystem::remove(path);
  {
    std::ifstream in(EDO_DB_FIXTURES "/schema_v1.sql");
    ASSERT_TRUE(in) << EDO_DB_FIXTURES "/schema_v1.sql";
    std::stringstream sql;
    sql << in.rdbuf();
    SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec(sql.str());
  }
  Profile p = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(p.tables.size(), 2u);
  EXPECT_EQ(p.tables[0].weight_bytes, 64000u);
  EXPECT_EQ(p.tables[0].optimizer_bytes, 192000u);  // version 1 could not tell gradients apart
  EXPECT_EQ(p.tables[0].grad_bytes, 0u);
  EXPECT_EQ(p.tables[1].weight_bytes, 1600u);
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
            std::to_string(current_schema_version()));
  EXPECT_EQ(db.execAndGet("SELECT COUNT(*) FROM schema_migrations").getInt(), 2);
  // The migrated file takes new saves like a file created by this version.
  p.tables[0].grad_bytes = 64000;
  ProfileStore(path, ProfileStore::Mode::kReadWrite).save(p);
  EXPECT_EQ(ProfileStore(path, ProfileStore::Mode::kReadOnly).load().tables[0].grad_bytes, 64000u);
}

// Every loss counter of a session is stored by name; a later save replaces a session's
// counters (absolute values), it does not add to them.
TEST(ProfileStore, DropCountersRoundTripAndSavesReplaceThem) {
  const std::string path = temp_path("drops.edodb");
  Profile p = sample_profile();
  p.sessions[0].drops = {{"batches", 3}, {"indices", 3000}, {"ended_without_final_flush", 1}};
  p.sessions[1].drops = {{"unsent_flushes", 2}};
  ProfileStore store(path, ProfileStore::Mode::kCreate);
  store.save(p, false);
  Profile q = store.load();
  EXPECT_EQ(q.sessions[0].drops, p.sessions[0].drops);
  EXPECT_EQ(q.sessions[1].drops, p.sessions[1].drops);
  EXPECT_EQ(q.drops().at("batches"), 3u);
  p.sessions[0].drops = {{"batches", 5}};
  store.save(p, false);
  q = store.load();
  EXPECT_EQ(q.sessions[0].drops, (std::map<std::string, uint64_t>{{"batches", 5}}));
  EXPECT_EQ(q.sessions[1].drops, p.sessions[1].drops);
}

// A file written by schema version 2 (no session_drops table) opens, migrates in place, keeps
// its dropped_events total and takes drop counters from then on.
TEST(ProfileStore, SchemaV2FileMigratesToSessionDrops) {
  const std::string path = temp_path("v2.edodb");
  std::filesystem::remove(path);
  {
    std::ifstream in(EDO_DB_FIXTURES "/schema_v2.sql");
    ASSERT_TRUE(in) << EDO_DB_FIXTURES "/schema_v2.sql";
    std::stringstream sql;
    sql << in.rdbuf();
    SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec(sql.str());
    EXPECT_FALSE(db.tableExists("session_drops"));
  }
  Profile p = ProfileStore(path, ProfileStore::Mode::kReadWrite).load();
  ASSERT_EQ(p.sessions.size(), 1u);
  EXPECT_TRUE(p.sessions[0].drops.empty());
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].aggregate.lookups(), 200u);
  {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    EXPECT_TRUE(db.tableExists("session_drops"));
    EXPECT_EQ(db.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
              std::to_string(current_schema_version()));
  }
  p.sessions[0].drops["memory_events"] = 4;
  ProfileStore(path, ProfileStore::Mode::kReadWrite).save(p);
  EXPECT_EQ(ProfileStore(path, ProfileStore::Mode::kReadOnly).load().sessions[0].drops.at("memory_events"), 4u);
}

// A file written by schema version 3 (the tuner's tables, no session_drops), with a tune run in
// it: it opens, migrates in place, keeps its profile and its tune run, and takes drop counters.
TEST(ProfileStore, SchemaV3FileMigratesToSessionDrops) {
  const std::string path = temp_path("v3.edodb");
  write_fixture("schema_v3.sql", path);
  int64_t candidates = 0;
  {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    ASSERT_EQ(db.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(), "3");
    ASSERT_FALSE(db.tableExists("session_drops"));
    candidates = db.execAndGet("SELECT COUNT(*) FROM tune_candidates").getInt64();
    ASSERT_GT(candidates, 0);
  }
  {
    ProfileStore store(path, ProfileStore::Mode::kReadOnly);  // old files are upgraded when opened
    Profile p = store.load();
    ASSERT_EQ(p.sessions.size(), 1u);
    EXPECT_TRUE(p.sessions[0].drops.empty());
    EXPECT_EQ(p.sessions[0].dropped_events, 0u);
    ASSERT_EQ(p.tables.size(), 1u);
    EXPECT_EQ(p.tables[0].name, "synth.table_0");
    EXPECT_EQ(p.tables[0].aggregate.lookups(), 200u);
    const auto tuned = load_latest_tune_result(store);
    ASSERT_TRUE(tuned.has_value());
    EXPECT_EQ(static_cast<int64_t>(tuned->candidates.size()), candidates);
  }
  {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    EXPECT_TRUE(db.tableExists("session_drops"));
    EXPECT_EQ(db.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
              std::to_string(current_schema_version()));
    EXPECT_EQ(db.execAndGet("SELECT COUNT(*) FROM schema_migrations WHERE version IN (3, " +
                            std::to_string(current_schema_version()) + ")").getInt(), 2);
  }
  Profile p = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  p.sessions[0].drops["unsent_bytes"] = 4096;
  ProfileStore(path, ProfileStore::Mode::kReadWrite).save(p);
  EXPECT_EQ(ProfileStore(path, ProfileStore::Mode::kReadOnly).load().sessions[0].drops.at("unsent_bytes"), 4096u);
}

// A created file has exactly the columns and indexes a file of every older version has once
// migrated: each step is complete on its own, whichever version a file starts from.
TEST(ProfileStore, CreatedAndMigratedSchemasAgree) {
  auto schema = [](const std::string& path) {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    SQLite::Statement q(db, "SELECT m.name, p.name, p.type, p.\"notnull\" FROM sqlite_master m, pragma_table_info(m.name) p"
                            " WHERE m.type = 'table' ORDER BY m.name, p.cid");
    std::vector<std::string> out;
    while (q.executeStep())
      out.push_back(q.getColumn(0).getString() + "." + q.getColumn(1).getString() + " " + q.getColumn(2).getString() +
                    (q.getColumn(3).getInt() ? " NOT NULL" : ""));
    SQLite::Statement idx(db, "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name");
    while (idx.executeStep()) out.push_back("index " + idx.getColumn(0).getString() + " ON " + idx.getColumn(1).getString());
    return out;
  };
  const std::string created = temp_path("created.edodb");
  { ProfileStore(created, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  for (const char* fixture : {"schema_v1.sql", "schema_v2.sql", "schema_v3.sql", "schema_v13.sql"}) {
    SCOPED_TRACE(fixture);
    const std::string migrated = temp_path(std::string("migrated-") + fixture + ".edodb");
    write_fixture(fixture, migrated);
    { ProfileStore(migrated, ProfileStore::Mode::kReadOnly).load(); }
    EXPECT_EQ(schema(created), schema(migrated));
  }
}

// Issue 29 (schema 14): step losses (NaN and the infinities too: SQLite alone would read a NaN
// back as NULL), optimizer hyperparameters and dense use survive a save and a load; a recording
// appends losses between saves, and a save of other losses replaces them.
void expect_same_losses(const std::vector<StepLoss>& a, const std::vector<StepLoss>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step) << i;
    if (std::isnan(a[i].loss)) EXPECT_TRUE(std::isnan(b[i].loss)) << i;
    else EXPECT_EQ(std::memcmp(&a[i].loss, &b[i].loss, sizeof(double)), 0) << i << ": " << a[i].loss << " vs " << b[i].loss;
  }
}

TEST(ProfileStore, TrainingFactsRoundTripWithNonFiniteLosses) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::string path = temp_path("training-facts.edodb");
  Profile p = sample_profile();
  p.sessions[0].losses = {{0, 2.5}, {1, 0.693147180559945}, {2, 0.0}, {3, std::nan("")}, {4, inf}, {5, -inf}, {5, 1e-300}};
  p.sessions[1].losses = {{10, 1.0}};
  OptimizerParams adam;
  adam.kind = "adam";
  adam.lr = 1e-3;
  adam.eps = 1e-8;
  adam.beta1 = 0.9;
  adam.beta2 = 0.999;
  adam.weight_decay = 0.01;
  adam.maximize = true;
  p.tables[0].optimizer_params = adam;
  p.tables[2].dense_use = "the gradient reached 1000 of 1000 rows in a step whose lookups read 1";
  ProfileStore store(path, ProfileStore::Mode::kCreate);
  store.save(p);
  Profile q = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  expect_same_losses(p.sessions[0].losses, q.sessions[0].losses);
  expect_same_losses(p.sessions[1].losses, q.sessions[1].losses);
  ASSERT_TRUE(q.tables[0].optimizer_params.has_value());
  EXPECT_EQ(q.tables[0].optimizer_params->kind, "adam");
  EXPECT_EQ(q.tables[0].optimizer_params->lr, 1e-3);
  EXPECT_EQ(q.tables[0].optimizer_params->eps, 1e-8);
  EXPECT_EQ(q.tables[0].optimizer_params->beta1, 0.9);
  EXPECT_EQ(q.tables[0].optimizer_params->beta2, 0.999);
  EXPECT_EQ(q.tables[0].optimizer_params->weight_decay, 0.01);
  EXPECT_TRUE(q.tables[0].optimizer_params->maximize);
  EXPECT_FALSE(q.tables[1].optimizer_params.has_value());
  EXPECT_EQ(q.tables[2].dense_use, p.tables[2].dense_use);
  EXPECT_EQ(q.tables[0].dense_use, "");
  // Appended between saves (a recording's periodic save), then replaced by other values.
  p.sessions[0].losses.push_back({6, std::nan("")});
  p.sessions[0].losses.push_back({7, 0.125});
  p.tables[0].optimizer_params.reset();
  store.save(p);
  q = store.load();
  expect_same_losses(p.sessions[0].losses, q.sessions[0].losses);
  EXPECT_FALSE(q.tables[0].optimizer_params.has_value());
  p.sessions[0].losses = {{1, 3.0}, {2, -inf}};
  store.save(p);
  q = store.load();
  expect_same_losses(p.sessions[0].losses, q.sessions[0].losses);
  p.sessions[0].losses = {{1, 3.0}, {2, inf}, {3, 1.0}};  // the last stored one changed: all rewritten
  store.save(p);
  expect_same_losses(p.sessions[0].losses, store.load().sessions[0].losses);
}

// A schema-13 file (from the version-13 edo) opens as schema 14 with no losses, no optimizer
// and no dense use, and takes them afterwards.
TEST(ProfileStore, SchemaV13FileMigratesToTrainingFacts) {
  const std::string path = temp_path("v13.edodb");
  write_fixture("schema_v13.sql", path);
  Profile q = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(q.sessions.size(), 1u);
  ASSERT_EQ(q.tables.size(), 1u);
  EXPECT_EQ(q.tables[0].aggregate.lookups(), 200u);
  EXPECT_TRUE(q.sessions[0].losses.empty());
  EXPECT_FALSE(q.tables[0].optimizer_params.has_value());
  EXPECT_EQ(q.tables[0].dense_use, "");
  {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    EXPECT_TRUE(db.tableExists("session_losses"));
    EXPECT_EQ(db.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
              std::to_string(current_schema_version()));
    EXPECT_TRUE(db.execAndGet("SELECT COUNT(*) FROM pragma_table_info('tables') WHERE name = 'dense_use'").getInt() == 1);
  }
  q.sessions[0].losses = {{1, std::nan("")}};
  q.tables[0].optimizer_params = OptimizerParams{"sgd", 0.1, 0, 0, 0, 0, 0.9, 0, false};
  ProfileStore(path, ProfileStore::Mode::kReadWrite).save(q);
  Profile r = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  expect_same_losses(q.sessions[0].losses, r.sessions[0].losses);
  ASSERT_TRUE(r.tables[0].optimizer_params.has_value());
  EXPECT_EQ(r.tables[0].optimizer_params->momentum, 0.9);
}

TEST(ProfileStore, CreateInMissingFolderNamesTheFolder) {
  try {
    ProfileStore store("/nonexistent-edo-dir/x.edodb", ProfileStore::Mode::kCreate);
    FAIL();
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos);
  }
}

// Runs the test body in a fresh folder of its own and goes back afterwards: relative paths
// must land there and nowhere else.
class InFreshFolder {
 public:
  explicit InFreshFolder(const std::string& name) : before_(std::filesystem::current_path()), dir_(temp_path(name)) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::filesystem::current_path(dir_);
  }
  ~InFreshFolder() {
    std::filesystem::current_path(before_);
    std::filesystem::remove_all(dir_);
  }
  // Every name in the folder, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path before_, dir_;
};

TEST(ProfileStore, InMemoryStoreRoundTripsAndTouchesNoFile) {
  InFreshFolder here("in-memory-folder");
  Profile p = sample_profile();
  {
    ProfileStore store = ProfileStore::in_memory();
    EXPECT_EQ(store.path(), "(in memory)");
    store.save(p);
    Profile q = store.load();
    ASSERT_EQ(q.tables.size(), p.tables.size());
    EXPECT_EQ(q.tables[0].name, p.tables[0].name);
    EXPECT_EQ(q.dropped_events(), p.dropped_events());
  }
  EXPECT_TRUE(here.entries().empty()) << "an in-memory store wrote " << here.entries().front();
}

// SQLite reads ":memory:" as a database in memory and "file:..." as a URI; an edo path always
// names a file, so a recording to either is kept and reads back.
TEST(ProfileStore, PathsSqliteWouldReadSpeciallyAreFiles) {
  InFreshFolder here("special-names-folder");
  for (const std::string name : {":memory:", "file:x.edodb?mode=memory", "file::memory:"}) {
    SCOPED_TRACE(name);
    Profile p = sample_profile();
    {
      ProfileStore store(name, ProfileStore::Mode::kCreate);
      store.save(p);
    }
    ASSERT_TRUE(std::filesystem::is_regular_file(name));
    EXPECT_GT(std::filesystem::file_size(name), 0u);
    EXPECT_TRUE(is_edo_database(name));
    ProfileStore again(name, ProfileStore::Mode::kReadOnly);
    EXPECT_EQ(again.load().tables.size(), p.tables.size());
  }
  EXPECT_EQ(here.entries(), (std::vector<std::string>{":memory:", "file::memory:", "file:x.edodb?mode=memory"}));
}

}  // namespace
}  // namespace edo::db
