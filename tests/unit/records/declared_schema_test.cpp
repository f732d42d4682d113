// The declarations of stored records (edo/model/tune_fields.h, recording_fields.h) are the
// schema the migrations make (db/src/schema.cpp): in a new file, in a file migrated from schema
// version 1, and the check itself notices a column that only one side has.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

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

// Every declared table and the columns the store keeps itself (ids and links).
std::vector<std::string> all_differences(SQLite::Database& d) {
  std::vector<std::string> out;
  auto add = [&](std::vector<std::string> more) { out.insert(out.end(), more.begin(), more.end()); };
  // A recording's tables: two declarations share the table.
  const std::vector<const char*> table_keys = {"id", "session_id", "base_address", "optimizer_kind"};
  add(schema_differences(d, model::kRecordedTableFields, plus_columns_of(model::kOptimizerParamFields, table_keys)));
  add(schema_differences(d, model::kOptimizerParamFields, plus_columns_of(model::kRecordedTableFields, table_keys)));
  add(schema_differences(d, model::kKernelTableFields, {"session_id", "kernel"}));
  add(schema_differences(d, model::kRangeFields, {}));
  add(schema_differences(d, model::kTuneRunFields, {"id", "notes"}));
  add(schema_differences(d, model::kTunePlanFields, {"id", "run_id"}));
  add(schema_differences(d, model::kTuneTableFields, {"run_id"}));
  add(schema_differences(d, model::kTuneCandidateFields, {"id", "run_id"}));
  add(schema_differences(d, model::kTuneChoiceFields, {"plan_id", "candidate_id"}));
  add(schema_differences(d, model::kTuneShardFields, {"plan_id", "table_name", "position"}));
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
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
  auto expect_corrupt = [&](const std::function<void()>& load, const std::string& says) {
    try {
      load();
      ADD_FAILURE() << "loaded; expected: " << says;
    } catch (const DbError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(path + ": truncated or corrupt edo database (", 0), 0u) << what;
      EXPECT_NE(what.find(says), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  expect_corrupt([&] { (void)store.load(); }, "ranges.count is -1, not a count");
  expect_corrupt([&] { (void)load_latest_tune_result(store); }, "tune_tables.rows is -5, not a count");
}

}  // namespace
}  // namespace edo::db
