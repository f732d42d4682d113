// "Adding a field to the plan touches one declaration and one migration" (docs/development.md
// "Adding a field"): a tuned table with one more field than TuneTable, declared as the tune
// tables' declaration plus one line, and its migration step (one ALTER TABLE). Through the same
// machinery as every tune record: the schema check, save and load by column name, the plan's
// JSON and YAML out and back in, with the type check of plan import.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include "edo/db/profile_store.h"
#include "edo/db/tune_store.h"
#include "edo/model/tune_fields.h"
#include "edo/tuner/plan_io.h"
#include "plan_document.h"
#include "plan_fields.h"
#include "record_columns.h"

namespace edo {
namespace {

using model::InPlan;

// The new field: how the table's bags are pooled.
struct PooledTable : model::TuneTable {
  std::string pooling = "sum";
};
// The one declaration line...
constexpr auto kPooledTableFields = model::extend<PooledTable>(
    model::kTuneTableFields,
    std::array{model::Field<PooledTable>{"pooling", "TEXT NOT NULL DEFAULT 'sum'", &PooledTable::pooling, nullptr, InPlan::kOptional}});
// ...and the migration step.
void migrate(SQLite::Database& d) { d.exec("ALTER TABLE tune_tables ADD COLUMN pooling TEXT NOT NULL DEFAULT 'sum'"); }

PooledTable pooled(const std::string& name, const std::string& pooling) {
  PooledTable t;
  t.name = name;
  t.rows = 1000;
  t.dim = 64;
  t.dtype = "fp32";
  t.device_bytes = 256000;
  t.lookups_per_step = 12.5;
  t.optimizer = "adam";
  t.training = true;
  t.weights = "recorded";
  t.pooling = pooling;
  return t;
}

void expect_same(const PooledTable& a, const PooledTable& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.device_bytes, b.device_bytes);
  EXPECT_EQ(a.lookups_per_step, b.lookups_per_step);
  EXPECT_EQ(a.optimizer, b.optimizer);
  EXPECT_EQ(a.training, b.training);
  EXPECT_EQ(a.pooling, b.pooling);
}

std::vector<PooledTable> load_tables(SQLite::Database& d, int64_t run_id) {
  SQLite::Statement q(d, db::select_sql(kPooledTableFields, {}) + " WHERE run_id = ? ORDER BY rowid");
  q.bind(1, run_id);
  const db::FieldReader reader(q, kPooledTableFields);
  std::vector<PooledTable> out;
  while (q.executeStep()) reader.read(q, out.emplace_back());
  return out;
}

TEST(AddingAField, TheSchemaCheckWantsItsMigrationAndThenAgrees) {
  db::ProfileStore store = db::ProfileStore::in_memory();
  const auto before = db::schema_differences(store.database(), kPooledTableFields, {"run_id"});
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0], "tune_tables.pooling: declared (TEXT NOT NULL DEFAULT 'sum') but not in the database: no migration adds it");
  migrate(store.database());
  EXPECT_TRUE(db::schema_differences(store.database(), kPooledTableFields, {"run_id"}).empty());
}

TEST(AddingAField, ItIsSavedAndLoadedAndOlderRowsReadItsDefault) {
  db::ProfileStore store = db::ProfileStore::in_memory();
  model::TuneResult older;  // saved before the field existed
  older.backend = "cpu";
  older.tables.push_back(pooled("old.table", "ignored"));
  db::save_tune_result(store, older);
  migrate(store.database());

  model::TuneResult run;
  run.backend = "cpu";
  db::save_tune_result(store, run);
  const std::vector<PooledTable> rows = {pooled("user", "mean"), pooled("item", "max")};
  db::insert_rows(store.database(), kPooledTableFields, rows, {{"run_id", run.run_id}});

  const auto loaded = load_tables(store.database(), run.run_id);
  ASSERT_EQ(loaded.size(), 2u);
  expect_same(loaded[0], rows[0]);
  expect_same(loaded[1], rows[1]);
  const auto old_rows = load_tables(store.database(), older.run_id);
  ASSERT_EQ(old_rows.size(), 1u);
  EXPECT_EQ(old_rows[0].name, "old.table");
  EXPECT_EQ(old_rows[0].pooling, "sum");  // the migration's default
  // The store's own load still reads a TuneTable from the wider table.
  EXPECT_EQ(db::load_tune_result(store, run.run_id).tables.at(1).name, "item");
  EXPECT_EQ(db::load_tune_result(store, older.run_id).tables.at(0).optimizer, "adam");
}

TEST(AddingAField, ItTravelsThroughThePlansJsonAndYaml) {
  const PooledTable t = pooled("user", "mean");
  nlohmann::ordered_json j;
  tuner::fields_to_json(j, t, kPooledTableFields);
  // Written after the declared keys before it, under its column's name.
  EXPECT_EQ(j.dump(), "{\"rows\":1000,\"dim\":64,\"dtype\":\"fp32\",\"recorded_device_bytes\":256000,\"lookups_per_step\":12.5,"
                      "\"recorded_optimizer\":\"adam\",\"training\":true,\"tuned\":true,\"pooling\":\"mean\"}");
  const std::string yaml = tuner::document_to_yaml(j, "");
  EXPECT_NE(yaml.find("\"pooling\": \"mean\""), std::string::npos) << yaml;
  for (const std::string& text : {j.dump(2), yaml}) {
    PooledTable back;
    back.name = "user";
    back.weights = "recorded";
    tuner::fields_from_json(tuner::plan_document_from_text(text), back, kPooledTableFields, "table \"user\"");
    expect_same(back, t);
  }
  // A plan without it (written before it existed) keeps the default; one with a wrong type is
  // refused with a line that names the key.
  PooledTable older;
  j.erase("pooling");
  tuner::fields_from_json(j, older, kPooledTableFields, "table \"user\"");
  EXPECT_EQ(older.pooling, "sum");
  j["pooling"] = 3;
  try {
    tuner::fields_from_json(j, older, kPooledTableFields, "table \"user\"");
    ADD_FAILURE() << "a number was taken as the pooling";
  } catch (const tuner::PlanError& e) {
    EXPECT_STREQ(e.what(), "not a valid edo plan: table \"user\": \"pooling\" is not text");
  }
}

}  // namespace
}  // namespace edo
