// Schema step 7 (issue 19 point 5): a tune run records whether its times were measured on its
// machine or modelled for another device; runs saved before read as measured on their device.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <memory>

#include "edo/db/tune_store.h"
#include "recordings.h"

namespace edo::db {
namespace {

using testing::sample_profile;
using testing::temp_path;

TEST(TuneTiming, ModelledTimesRoundTripAndOlderRunsReadAsMeasured) {
  const std::string path = temp_path("tune-timing.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<model::Profile>(sample_profile())); }
  model::TuneResult modelled, measured;
  modelled.backend = measured.backend = "cpu";
  modelled.device = measured.device = "Some CPU, 2 threads, avx2";
  modelled.timing_kind = edo::model::RunTiming::kModelled;
  modelled.timing_device = "NVIDIA H200";
  measured.timing_device = measured.device;
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, modelled);
    save_tune_result(store, measured);
    const model::TuneResult a = load_tune_result(store, modelled.run_id), b = load_tune_result(store, measured.run_id);
    EXPECT_EQ(edo::model::to_string(a.timing_kind), "modelled");
    EXPECT_EQ(a.timing_device, "NVIDIA H200");
    EXPECT_EQ(edo::model::to_string(b.timing_kind), "measured");
    EXPECT_EQ(b.timing_device, "Some CPU, 2 threads, avx2");
    const auto runs = list_tune_runs(store);
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(edo::model::to_string(runs[0].timing_kind), "modelled");
    EXPECT_EQ(runs[0].timing_device, "NVIDIA H200");
    EXPECT_EQ(edo::model::to_string(runs[1].timing_kind), "measured");
  }
  {
    // A schema-6 file: no timing columns; migrating adds them, its runs measured on their device.
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("ALTER TABLE tune_runs DROP COLUMN timing_kind");
    db.exec("ALTER TABLE tune_runs DROP COLUMN timing_device");
    db.exec("DELETE FROM schema_migrations WHERE version >= 7");
    db.exec("UPDATE edo_meta SET value = '6' WHERE key = 'schema_version'");
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  const model::TuneResult old = load_tune_result(store, modelled.run_id);
  EXPECT_EQ(edo::model::to_string(old.timing_kind), "measured");
  EXPECT_EQ(old.timing_device, "Some CPU, 2 threads, avx2");
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
            std::to_string(current_schema_version()));
}

}  // namespace
}  // namespace edo::db
