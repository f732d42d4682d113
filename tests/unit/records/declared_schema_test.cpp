// The declarations of stored records (edo/model/tune_fields.h, recording_fields.h) are the
// schema the migrations make (db/src/schema.cpp), every table of it: in a new file, in a file
// migrated from schema version 1, and the check itself notices a column that only one side has.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>

#include "edo/db/profile_store.h"
#include "edo/db/tune_store.h"
#include "edo/model/recording_fields.h"
#include "edo/model/tune_fields.h"
#include "record_columns.h"
#include "recordings.h"

namespace edo::db {
namespace {

// `keys` and the columns of `other`, a declaration of other columns of the same table.
template <class R, size_t N>
std::vector<const char*> plus_columns_of(const model::Record<R, N>& other, std::vector<const char*> keys) {
  for (const auto& f : other.fields) keys.push_back(f.column);
  return keys;
}

// Every declared table and the columns the store keeps itself (ids, links, BLOBs), and the
// tables no declaration covers.
std::vector<std::string> all_differences(SQLite::Database& d) {
  std::vector<std::string> out;
  std::set<std::string> covered;
  auto add = [&](const char* table, std::vector<std::string> more) {
    covered.insert(table);
    out.insert(out.end(), more.begin(), more.end());
  };
  auto check = [&](const auto& rec, const std::vector<const char*>& keys) { add(rec.table, schema_differences(d, rec, keys)); };
  // A recording's tables: two declarations share the table.
  const std::vector<const char*> table_keys = {"id", "session_id", "optimizer_kind"};
  check(model::kRecordedTableFields, plus_columns_of(model::kOptimizerParamFields, table_keys));
  check(model::kOptimizerParamFields, plus_columns_of(model::kRecordedTableFields, table_keys));
  check(model::kSessionFields, {"id"});
  check(model::kSessionDropFields, {"session_id"});
  check(model::kSessionIdentityFields, {"session_id"});
  check(model::kStepLossFields, {"session_id", "position", "nonfinite"});
  check(model::kMetadataFields, {});
  check(model::kTableStatisticsFields, {"table_id", "aggregate"});
  check(model::kTableSummaryFields, {"table_id", "zipf_alpha", "zipf_fit_error"});
  check(model::kTableCurveFields, {"table_id", "kind"});
  check(model::kTableExtraFields, {"table_id"});
  check(model::kFirstSeenFields, {"table_id"});
  check(model::kWeightSnapshotFields, {"table_id", "rows", "vals"});
  check(model::kTieFields, {});
  check(model::kMemoryEventFields, {});
  check(model::kKernelFields, {"tables"});
  check(model::kKernelTableFields, {"session_id", "kernel"});
  check(model::kRangeFields, {});
  check(model::kTuneRunFields, {"id", "notes"});
  check(model::kTunePlanFields, {"id", "run_id"});
  check(model::kTuneTableFields, {"run_id"});
  check(model::kTuneCandidateFields, {"id", "run_id"});
  check(model::kTuneChoiceFields, {"plan_id", "candidate_id"});
  check(model::kTuneShardFields, {"plan_id", "table_name", "position"});
  check(model::kTuneFrontierFields, {"plan_id"});
  // The file's own (its format tag and versions) and the v1 tune tables a migration set aside.
  for (const char* own : {"edo_meta", "schema_migrations", "tune_candidates_v1", "tune_plans_v1"}) covered.insert(own);
  SQLite::Statement tables(d, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
  while (tables.executeStep())
    if (!covered.count(tables.getColumn("name").getString()))
      out.push_back(tables.getColumn("name").getString() + ": a table no declaration covers");
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// `load` refuses the file at `path` as corrupt, in one line that names it and says `says`.
void expect_corrupt(const std::string& path, const std::function<void()>& load, const std::string& says) {
  try {
    load();
    ADD_FAILURE() << "loaded; expected: " << says;
  } catch (const DbError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path + ": truncated or corrupt edo database (", 0), 0u) << what;
    EXPECT_NE(what.find(says), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(DeclaredSchema, ANewFileHasExactlyTheDeclaredColumns) {
  ProfileStore store = ProfileStore::in_memory();
  EXPECT_EQ(joined(all_differences(store.database())), "");
}

TEST(DeclaredSchema, AFileMigratedFromVersionOneHasExactlyTheDeclaredColumns) {
  const std::string path = testing::temp_path("declared-v1.edodb");
  std::filesystem::copy_file(std::string(EDO_FIXTURES_DIR) + "/db/v1-synth.edodb", path,
                             std::filesystem::copy_options::overwrite_existing);
  ProfileStore store(path, ProfileStore::Mode::kReadWrite);  // migrated when opened
  EXPECT_EQ(joined(all_differences(store.database())), "");
}

TEST(DeclaredSchema, TheCheckNamesAColumnOnlyOneSideHasAndATypeThatDiffers) {
  ProfileStore store = ProfileStore::in_memory();
  SQLite::Database& d = store.database();
  d.exec("ALTER TABLE tune_shards ADD COLUMN weight REAL");
  EXPECT_EQ(joined(schema_differences(d, model::kTuneShardFields, {"plan_id", "table_name", "position"})),
            "tune_shards.weight: in the database (REAL) but not declared\n");
  // A declaration whose default is not the migration's.
  model::Record<model::TuneShard, 1> wrong{"tune_shards", {{{"size", "INTEGER NOT NULL DEFAULT 0", &model::TuneShard::size}}}};
  const auto diff = schema_differences(d, wrong, {"plan_id", "table_name", "position", "device", "first", "device_bytes",
                                                  "lookups_per_step", "weight"});
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0], "tune_shards.size: declared INTEGER NOT NULL DEFAULT 0, the migrations made INTEGER NOT NULL");
}

// A value read back outside its declared range is a corrupt file, said in one line that names
// the file and the column: a recording's range and a tune run's table.
TEST(DeclaredSchema, ANegativeCountReadBackIsACorruptFile) {
  const std::string path = testing::temp_path("negative-count.edodb");
  {
    ProfileStore store(path, ProfileStore::Mode::kCreate);
    model::Profile p = testing::sample_profile();
    ASSERT_FALSE(p.ranges.empty());
    store.save(p);
    model::TuneResult r;
    r.backend = "cpu";
    model::TuneTable t;
    t.name = "t";
    t.rows = 10;
    r.tables.push_back(t);
    save_tune_result(store, r);
  }
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec("UPDATE ranges SET count = -1");
    raw.exec("UPDATE tune_tables SET rows = -5");
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  expect_corrupt(path, [&] { (void)store.load(); }, "ranges.count is -1, not a count");
  expect_corrupt(path, [&] { (void)load_latest_tune_result(store); }, "tune_tables.rows is -5, not a count");
}

// What the new member types say: an address or stream handle keeps all 64 bits (kAnyBits), an
// optional number its absence (NULL), a negative exit code and device index their sign.
TEST(DeclaredSchema, AddressesKeepEveryBitAndOptionalNumbersTheirAbsence) {
  ProfileStore store = ProfileStore::in_memory();
  model::Profile p = testing::sample_profile();
  p.memory_events[0].address = 0xffff800000001000ULL;
  p.memory_events[0].stream = UINT64_MAX;
  p.memory_events[0].device = -1;
  p.tables[0].base_address = 0x8000000000000000ULL;
  p.sessions[0].exit_code = -11;
  p.sessions[0].identity.world_size = 4;
  p.sessions[0].identity.clock_shift_ns = -5;
  store.save(p);
  const model::Profile back = store.load();
  ASSERT_EQ(back.memory_events.size(), p.memory_events.size());
  EXPECT_EQ(back.memory_events[0].address, 0xffff800000001000ULL);
  EXPECT_EQ(back.memory_events[0].stream, UINT64_MAX);
  EXPECT_EQ(back.memory_events[0].device, -1);
  EXPECT_EQ(back.tables[0].base_address, 0x8000000000000000ULL);
  ASSERT_EQ(back.sessions.size(), 2u);
  EXPECT_EQ(back.sessions[0].exit_code, std::optional<int>(-11));
  EXPECT_EQ(back.sessions[0].rank, std::optional<int64_t>(0));
  EXPECT_FALSE(back.sessions[1].rank.has_value());
  EXPECT_FALSE(back.sessions[1].exit_code.has_value());
  EXPECT_EQ(back.sessions[0].identity.world_size, std::optional<int64_t>(4));
  EXPECT_FALSE(back.sessions[0].identity.group_rank.has_value());
  EXPECT_EQ(back.sessions[0].identity.clock_shift_ns, -5);
}

// A negative drop count in a file: corrupt, said in one line naming the file, the session and
// the column. A device index or exit code beyond 32 bits saturates (HostileDatabase.* shows such
// a file whole).
TEST(DeclaredSchema, ANegativeDropCountIsCorruptAnIndexBeyond32BitsSaturates) {
  const std::string path = testing::temp_path("outside-type.edodb");
  {
    ProfileStore store(path, ProfileStore::Mode::kCreate);
    model::Profile p = testing::sample_profile();
    store.save(p);
  }
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec("UPDATE memory_events SET device = 4294967296 WHERE time_ns = 10");
    raw.exec("UPDATE sessions SET exit_code = -99999999999 WHERE id = 1");
  }
  {
    const model::Profile back = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
    EXPECT_EQ(back.memory_events.at(0).device, INT32_MAX);
    EXPECT_EQ(back.sessions.at(0).exit_code, std::optional<int>(INT32_MIN));
  }
  SQLite::Database(path, SQLite::OPEN_READWRITE).exec("UPDATE sessions SET dropped_events = -2 WHERE id = 2");
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  expect_corrupt(path, [&] { (void)store.load(); }, "session 2: sessions.dropped_events is -2, not a count");
}

}  // namespace
}  // namespace edo::db
