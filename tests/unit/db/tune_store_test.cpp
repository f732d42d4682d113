// Schema v3 (tuner): v1 and v2 files migrate forward keeping their data; extra bytes by kind and
// weight snapshots round-trip through save/load; tune runs, candidates, plans and frontiers
// round-trip; hostile rows give one-line errors.
#include "edo/db/tune_store.h"

#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "edo/db/weight_store.h"
#include "edo/model/strategy_params_json.h"
#include "recordings.h"

namespace edo::db {
namespace {

using namespace edo::model;
using testing::sample_profile;
using testing::temp_path;

std::string fixture(const std::string& name) { return std::string(EDO_FIXTURES_DIR) + "/db/" + name; }

TEST(SchemaMigration, V1FileMigratesForwardAndKeepsItsData) {
  const std::string path = temp_path("v1.edodb");
  std::filesystem::copy_file(fixture("v1-synth.edodb"), path, std::filesystem::copy_options::overwrite_existing);
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    ASSERT_EQ(raw.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(), "1");
  }
  {
    ProfileStore store(path, ProfileStore::Mode::kReadOnly);  // old files are upgraded when opened
    Profile p = store.load();
    ASSERT_EQ(p.tables.size(), 2u);
    EXPECT_EQ(p.tables[0].name, "synth.table_0");
    EXPECT_EQ(p.tables[0].aggregate.lookups(), 5000u);
    EXPECT_TRUE(p.tables[0].extra_by_kind.empty());
    EXPECT_FALSE(load_latest_tune_result(store).has_value());
    EXPECT_TRUE(load_weight_snapshots(store).empty());
  }
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
            std::to_string(current_schema_version()));
  EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM schema_migrations WHERE version = " +
                           std::to_string(current_schema_version())).getInt(), 1);
  for (const char* t : {"table_extra", "weight_snapshots", "tune_runs", "tune_candidates", "tune_plans", "tune_choices", "tune_frontier"})
    EXPECT_TRUE(raw.tableExists(t)) << t;
  // The v1 placeholders were empty: dropped, not renamed.
  EXPECT_FALSE(raw.tableExists("tune_candidates_v1"));
  // The migrated file takes new data.
  ProfileStore rw(path, ProfileStore::Mode::kReadWrite);
  TuneResult r;
  r.backend = "cpu";
  save_tune_result(rw, r);
  EXPECT_GT(r.run_id, 0);
}

// Version 2 (the bytes split) is version 1 with three column changes; a file of that version
// migrates to 3 with its tables' bytes intact.
TEST(SchemaMigration, V2FileMigratesForward) {
  const std::string path = temp_path("v2.edodb");
  std::filesystem::copy_file(fixture("v1-synth.edodb"), path, std::filesystem::copy_options::overwrite_existing);
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec("ALTER TABLE tables RENAME COLUMN bytes TO weight_bytes");
    raw.exec("ALTER TABLE tables RENAME COLUMN extra_bytes TO optimizer_bytes");
    raw.exec("ALTER TABLE tables ADD COLUMN grad_bytes INTEGER NOT NULL DEFAULT 0");
    raw.exec("UPDATE tables SET optimizer_bytes = 77, grad_bytes = 5 WHERE name = 'synth.table_1'");
    raw.exec("UPDATE edo_meta SET value = '2' WHERE key = 'schema_version'");
  }
  ProfileStore store(path, ProfileStore::Mode::kReadWrite);
  Profile p = store.load();
  ASSERT_EQ(p.tables.size(), 2u);
  EXPECT_EQ(p.tables[1].weight_bytes, 1000u * 8 * 4);
  EXPECT_EQ(p.tables[1].optimizer_bytes, 77u);
  EXPECT_EQ(p.tables[1].grad_bytes, 5u);
  EXPECT_TRUE(store.database().tableExists("weight_snapshots"));
  TuneResult r;
  r.backend = "cpu";
  save_tune_result(store, r);
  EXPECT_EQ(tune_run_ids(store).size(), 1u);
}

TEST(SchemaMigration, RowsInV1TunePlaceholdersAreKeptUnderAnotherName) {
  const std::string path = temp_path("v1-rows.edodb");
  std::filesystem::copy_file(fixture("v1-synth.edodb"), path, std::filesystem::copy_options::overwrite_existing);
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec("INSERT INTO tune_plans(created_unix, budget_bytes, total_bytes, plan_json) VALUES (1, 2, 3, '{}')");
  }
  { ProfileStore store(path, ProfileStore::Mode::kReadOnly); }
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM tune_plans_v1").getInt(), 1);
  EXPECT_FALSE(raw.tableExists("tune_candidates_v1"));
}

TEST(TableExtras, ByKindRoundTrips) {
  const std::string path = temp_path("extras.edodb");
  Profile p = sample_profile();
  p.tables[0].extra_by_kind = {{"adam.exp_avg", 4000}, {"adam.exp_avg_sq", 4000}, {"grad", 4000}};
  p.tables[0].optimizer_bytes = 8000;
  p.tables[0].grad_bytes = 4000;
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(p); }
  Profile q = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  EXPECT_EQ(q.tables[0].extra_by_kind, p.tables[0].extra_by_kind);
  EXPECT_TRUE(q.tables[1].extra_by_kind.empty());
}

WeightSnapshot snapshot_of(const Table& t, std::vector<uint64_t> rows, uint64_t hot, uint64_t population) {
  WeightSnapshot w;
  w.session_id = t.session_id;
  w.table = t.name;
  w.dtype = "f32";
  w.dim = t.dim;
  w.table_rows = t.rows;
  w.population = population;
  w.hot_count = hot;
  w.rows = std::move(rows);
  for (size_t i = 0; i < w.rows.size() * t.dim; ++i) {
    const float v = 0.25f * static_cast<float>(i) - 3.0f;
    w.values.append(reinterpret_cast<const char*>(&v), 4);
  }
  return w;
}

TEST(WeightSnapshots, RoundTripAndRewriteOnlyWhenChanged) {
  const std::string path = temp_path("weights.edodb");
  Profile p = sample_profile();
  p.weights.push_back(snapshot_of(p.tables[0], {3, 2, 7, 900}, 2, 998));
  ProfileStore store(path, ProfileStore::Mode::kCreate);
  store.save(p);
  auto w = load_weight_snapshots(store);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].table, p.tables[0].name);
  EXPECT_EQ(w[0].rows, (std::vector<uint64_t>{3, 2, 7, 900}));
  EXPECT_EQ(w[0].hot_count, 2u);
  EXPECT_EQ(w[0].population, 998u);
  EXPECT_EQ(w[0].values, p.weights[0].values);
  EXPECT_DOUBLE_EQ(w[0].inclusion_weight(0), 1.0);
  EXPECT_DOUBLE_EQ(w[0].inclusion_weight(3), 499.0);
  EXPECT_TRUE(load_weight_snapshots(store, "no.such.table").empty());
  EXPECT_EQ(load_weight_snapshots(store, p.tables[0].name).size(), 1u);
  // load() leaves the large snapshots out.
  EXPECT_TRUE(store.load().weights.empty());
  // Unchanged revision: not written again (a raw edit survives); a new revision replaces it.
  store.database().exec("UPDATE weight_snapshots SET population = 5");
  store.save(p);
  EXPECT_EQ(load_weight_snapshots(store)[0].population, 5u);
  p.weights[0].revision += 1;
  store.save(p);
  EXPECT_EQ(load_weight_snapshots(store)[0].population, 998u);
}

TEST(WeightSnapshots, CorruptSnapshotIsAOneLineError) {
  const std::string path = temp_path("weights-bad.edodb");
  Profile p = sample_profile();
  p.weights.push_back(snapshot_of(p.tables[0], {3, 2}, 2, 0));
  {
    ProfileStore store(path, ProfileStore::Mode::kCreate);
    store.save(p);
    store.database().exec("UPDATE weight_snapshots SET hot_count = 99");
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  try {
    load_weight_snapshots(store);
    FAIL();
  } catch (const DbError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("weight snapshot"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

TuneResult sample_result() {
  TuneResult r;
  r.created_unix = 1700000000;
  r.backend = "cpu";
  r.device = "Fake CPU @ 3 GHz";
  r.weights = "synthetic";
  r.budget_bytes = 1 << 20;
  r.max_error = 0.05;
  r.tables_glob = "model.*";
  r.seed = 7;
  r.time_limit_s = 60;
  r.elapsed_s = 12.5;
  r.complete = false;
  r.stop_reason = edo::model::StopReason::kTimeLimit;
  r.candidates_total = 3;
  r.candidates_measured = 2;
  r.tables.push_back({"model.emb.user", 1000, 16, "f32", 64000, 512, true, "", "synthetic", "adam", true});
  r.tables.push_back({"model.lm_head", 1000, 16, "f32", 0, 100, true, "model.emb.user", "synthetic", ""});
  r.notes = {"weights: synthetic (no snapshot recorded)", "offload transfers modelled"};
  TuneCandidate a;
  a.table = "model.emb.user";
  a.strategy = "fp32";
  a.spec = "fp32";
  a.device_bytes = 64000;
  a.step_us = 10;
  a.error = 0;
  a.measured = true;
  a.measured_rows = 1000;
  TuneCandidate b = a;
  b.strategy = "offload";
  b.spec = "offload:cache=0.1:policy=lru";
  b.params = edo::model::params_from_text(R"({"cache":0.1,"policy":"lru"})");  // "cache": a key this edo does not know
  b.device_bytes = 10400;
  b.host_bytes = 64000;
  b.step_us = 14;
  b.error = 0;
  b.hit_rate = 0.8;
  b.recorded_hit_rate = 0.82;
  TuneCandidate c = a;
  c.strategy = "pq";
  c.spec = "pq:m=4";
  c.measured = false;
  c.step_us = NAN;
  c.error = NAN;
  c.note = "not measured: time limit";
  r.candidates = {a, b, c};
  r.feasible = true;
  r.min_feasible_bytes = 10400;
  r.baseline_device_bytes = 64000;
  r.baseline_step_us = 10;
  r.plan_device_bytes = 10400;
  r.plan_host_bytes = 64000;
  r.plan_step_us = 14;
  r.choices.push_back({"model.emb.user", 1, "", 10400, 64000, 11.5, "offload: saves 52 KiB, +4 us", "", {}});
  r.choices.push_back({"model.lm_head", 1, "model.emb.user", 0, 0, 2.5, "tied: follows model.emb.user", "", {}});
  r.frontier = {{10400, 14}, {64000, 10}};
  return r;
}

// Turns the file at `path` back into one of schema `version`, as an older edo wrote it: each
// "table.column" of `drop` dropped (a bare name drops the table), the later migrations
// forgotten. Opening it again migrates it forward.
void as_schema_version(const std::string& path, int version, const std::vector<std::string>& drop) {
  SQLite::Database db(path, SQLite::OPEN_READWRITE);
  for (const auto& d : drop) {
    const auto dot = d.find('.');
    db.exec(dot == std::string::npos ? "DROP TABLE " + d
                                     : "ALTER TABLE " + d.substr(0, dot) + " DROP COLUMN " + d.substr(dot + 1));
  }
  db.exec("DELETE FROM schema_migrations WHERE version > " + std::to_string(version));
  db.exec("UPDATE edo_meta SET value = '" + std::to_string(version) + "' WHERE key = 'schema_version'");
}

TEST(TuneStore, RoundTripKeepsEverything) {
  const std::string path = temp_path("tune.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
  }
  ASSERT_GT(r.run_id, 0);
  for (const auto& c : r.candidates) EXPECT_GT(c.id, 0);
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  auto q = load_latest_tune_result(store);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->run_id, r.run_id);
  EXPECT_EQ(q->backend, "cpu");
  EXPECT_EQ(q->device, r.device);
  EXPECT_EQ(q->weights, "synthetic");
  EXPECT_EQ(q->budget_bytes, r.budget_bytes);
  EXPECT_DOUBLE_EQ(q->max_error, 0.05);
  EXPECT_EQ(q->tables_glob, "model.*");
  EXPECT_FALSE(q->complete);
  EXPECT_EQ(edo::model::to_string(q->stop_reason), "time limit");
  EXPECT_EQ(q->candidates_measured, 2u);
  ASSERT_EQ(q->tables.size(), 2u);
  EXPECT_EQ(q->tables[1].shares_with, "model.emb.user");
  EXPECT_DOUBLE_EQ(q->tables[0].lookups_per_step, 512);
  EXPECT_EQ(q->tables[0].optimizer, "adam");
  EXPECT_EQ(q->notes, r.notes);
  ASSERT_EQ(q->candidates.size(), 3u);
  EXPECT_EQ(q->candidates[1].spec, "offload:cache=0.1:policy=lru");
  EXPECT_EQ(q->candidates[1].params.policy, "lru");
  EXPECT_EQ(edo::model::params_to_text(q->candidates[1].params), R"({"cache":0.1,"policy":"lru"})") << "unknown keys kept, in order";
  EXPECT_EQ(q->candidates[1].host_bytes, 64000u);
  EXPECT_EQ(q->candidates[1].hit_rate, std::optional<double>(0.8));
  EXPECT_EQ(q->candidates[1].recorded_hit_rate, std::optional<double>(0.82));
  EXPECT_FALSE(q->candidates[0].hit_rate.has_value());
  EXPECT_TRUE(std::isnan(q->candidates[2].step_us));
  EXPECT_FALSE(q->candidates[2].measured);
  EXPECT_EQ(q->candidates[2].params, edo::model::StrategyParams{});
  EXPECT_TRUE(q->feasible);
  EXPECT_EQ(q->plan_device_bytes, 10400u);
  ASSERT_EQ(q->choices.size(), 2u);
  EXPECT_EQ(q->choices[0].candidate, 1);
  EXPECT_EQ(q->choices[1].shares_with, "model.emb.user");
  EXPECT_EQ(q->choices[0].why, r.choices[0].why);
  EXPECT_EQ(q->frontier, r.frontier);
}

TEST(TuneStore, NoLimitAndANewPlanForTheSameRun) {
  const std::string path = temp_path("tune2.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  ProfileStore store(path, ProfileStore::Mode::kReadWrite);
  TuneResult r = sample_result();
  r.max_error = INFINITY;
  save_tune_result(store, r);
  EXPECT_TRUE(std::isinf(load_tune_result(store, r.run_id).max_error));
  r.budget_bytes = 1 << 30;
  r.choices[0].candidate = 0;
  r.frontier.clear();
  save_tune_plan(store, r);
  TuneResult q = load_tune_result(store, r.run_id);
  EXPECT_EQ(q.budget_bytes, 1u << 30);
  EXPECT_EQ(q.choices[0].candidate, 0);
  EXPECT_TRUE(q.frontier.empty());
  EXPECT_EQ(tune_run_ids(store).size(), 1u);
  EXPECT_THROW(load_tune_result(store, 999), DbError);
}

// Schema step 6: each plan records its objective (plans of older files were 'speed') and each
// candidate its step-time interval (unknown in older files).
TEST(TuneStore, ThePlanRecordsItsObjectiveAndOlderPlansWereSpeed) {
  const std::string path = temp_path("tune-objective.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  r.objective = edo::model::Objective::kLeastChange;
  r.candidates[0].step_us_lo = 9.5;
  r.candidates[0].step_us_hi = 10.75;
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
    const TuneResult q = load_tune_result(store, r.run_id);
    EXPECT_EQ(edo::model::to_string(q.objective), "least-change");
    EXPECT_EQ(q.candidates[0].step_us_lo, 9.5);
    EXPECT_EQ(q.candidates[0].step_us_hi, 10.75);
    EXPECT_TRUE(std::isnan(q.candidates[1].step_us_lo)) << "unknown stays unknown";
    r.objective = edo::model::Objective::kSpeed;
    save_tune_plan(store, r);
    EXPECT_EQ(edo::model::to_string(load_tune_result(store, r.run_id).objective), "speed") << "a run's latest plan";
  }
  {
    // A schema-5 file: the column did not exist; migrating adds it as 'speed'.
    as_schema_version(path, 5, {"tune_plans.objective", "tune_candidates.step_us_lo", "tune_candidates.step_us_hi"});
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  EXPECT_EQ(edo::model::to_string(load_tune_result(store, r.run_id).objective), "speed");
  EXPECT_TRUE(std::isnan(load_tune_result(store, r.run_id).candidates[0].step_us_lo));
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
            std::to_string(current_schema_version()));
}

// Schema step 7: what each candidate's step time covers and its forward, backward and update
// parts (issue 19 point 4); older runs have '' and NULL.
TEST(TuneStore, CandidatesKeepWhatTheirStepTimeCovers) {
  const std::string path = temp_path("tune-step-covers.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  r.candidates[0].step_covers = "forward+backward+adam update (dense gradient)";
  r.candidates[0].forward_us = 2.5;
  r.candidates[0].backward_us = 1.25;
  r.candidates[0].update_us = 6.25;
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
    const TuneResult q = load_tune_result(store, r.run_id);
    EXPECT_EQ(q.candidates[0].step_covers, "forward+backward+adam update (dense gradient)");
    EXPECT_EQ(q.candidates[0].forward_us, 2.5);
    EXPECT_EQ(q.candidates[0].backward_us, 1.25);
    EXPECT_EQ(q.candidates[0].update_us, 6.25);
    EXPECT_EQ(q.candidates[1].step_covers, "");
    EXPECT_TRUE(std::isnan(q.candidates[1].update_us)) << "not split stays not split";
  }
  {
    // A schema-6 file: the columns did not exist; migrating adds them empty.
    as_schema_version(path, 6, {"tune_candidates.step_covers", "tune_candidates.forward_us", "tune_candidates.backward_us",
                                "tune_candidates.update_us"});
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  const TuneResult old = load_tune_result(store, r.run_id);
  EXPECT_EQ(old.candidates[0].step_covers, "");
  EXPECT_TRUE(std::isnan(old.candidates[0].forward_us));
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
            std::to_string(current_schema_version()));
}

// Schema step 13: whether each tuned table trains. A table trained with plain SGD has no
// optimizer state and says so; a schema-12 file knew only the optimizer, and migrates to that.
TEST(TuneStore, ATableTrainedWithoutOptimizerStateIsKeptAsTraining) {
  const std::string path = temp_path("tune-training.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  r.tables.push_back({"model.emb.sgd", 500, 8, "f32", 16000, 10, true, "", "synthetic", "", true});
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
    const TuneResult q = load_tune_result(store, r.run_id);
    ASSERT_EQ(q.tables.size(), 3u);
    EXPECT_TRUE(q.tables[0].training) << "adam state recorded";
    EXPECT_FALSE(q.tables[1].training) << "no gradients, no state";
    EXPECT_TRUE(q.tables[2].training) << "plain SGD";
    EXPECT_EQ(q.tables[2].optimizer, "");
  }
  {
    as_schema_version(path, 12, {"tune_tables.training"});
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  const TuneResult old = load_tune_result(store, r.run_id);
  EXPECT_TRUE(old.tables[0].training);
  EXPECT_FALSE(old.tables[1].training);
  EXPECT_FALSE(old.tables[2].training) << "a schema-12 file knew only the optimizer";
  EXPECT_GE(current_schema_version(), 13);
}

// Schema step 10 (issue 19 point 6): each offload candidate's held-out hit rate (replayed from
// the recorded order) beside the recorded one; unknown in older files.
TEST(TuneStore, AnOffloadCandidatesHeldOutHitRateIsKeptAndOlderFilesHaveNone) {
  const std::string path = temp_path("tune-heldout.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  r.candidates[1].heldout_hit_rate = 0.0;
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
    const TuneResult q = load_tune_result(store, r.run_id);
    EXPECT_EQ(q.candidates[1].heldout_hit_rate, std::optional<double>(0.0)) << "a held-out 0 is not unknown";
    EXPECT_EQ(q.candidates[1].recorded_hit_rate, std::optional<double>(0.82));
    EXPECT_FALSE(q.candidates[0].heldout_hit_rate);
  }
  {
    // A schema-6 file: no such column; migrating adds it, empty.
    as_schema_version(path, 6, {"tune_candidates.heldout_hit_rate"});
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  const TuneResult old = load_tune_result(store, r.run_id);
  EXPECT_FALSE(old.candidates[1].heldout_hit_rate);
  EXPECT_EQ(old.candidates[1].recorded_hit_rate, std::optional<double>(0.82));
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
            std::to_string(current_schema_version()));
  EXPECT_GE(current_schema_version(), 10);
}

// Schema step 17 (issue 35 point 2): an ssd candidate's and choice's bytes on the SSD, the plan's
// total and its host and SSD budgets round-trip; a schema-16 file reads as nothing on the SSD
// and no host or SSD limit.
TEST(TuneStore, TheSsdTierAndPerTierBudgetsRoundTripAndOlderFilesHaveNone) {
  const std::string path = temp_path("tune-ssd.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  TuneCandidate s = r.candidates[0];
  s.strategy = "ssd";
  s.spec = "fp32";
  s.params = edo::model::params_from_text(
      R"({"device_cache_rows":10,"host_cache_rows":100,"device_hit_rate":0.5,"host_hit_rate":0.25,"ssd_reads_per_step":3})");
  s.device_bytes = 1000;
  s.host_bytes = 6400;
  s.ssd_bytes = 64000;
  r.candidates.push_back(s);
  r.host_budget_bytes = 8000;
  r.ssd_budget_bytes = 1 << 30;
  r.plan_ssd_bytes = 64000;
  r.choices[0].candidate = 3;
  r.choices[0].device_bytes = 1000;
  r.choices[0].host_bytes = 6400;
  r.choices[0].ssd_bytes = 64000;
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
    const TuneResult q = load_tune_result(store, r.run_id);
    ASSERT_EQ(q.candidates.size(), 4u);
    EXPECT_EQ(q.candidates[3].ssd_bytes, 64000u);
    EXPECT_EQ(model::tier_of(q.candidates[3]), "ssd");
    EXPECT_EQ(model::tier_of(q.candidates[1]), "host");
    EXPECT_EQ(model::tier_of(q.candidates[0]), "device");
    EXPECT_EQ(q.candidates[0].ssd_bytes, 0u);
    EXPECT_EQ(q.choices[0].ssd_bytes, 64000u);
    EXPECT_EQ(q.choices[0].candidate, 3);
    EXPECT_EQ(q.plan_ssd_bytes, 64000u);
    EXPECT_EQ(q.host_budget_bytes, 8000u);
    EXPECT_EQ(q.ssd_budget_bytes, uint64_t{1} << 30);
  }
  as_schema_version(path, 16, {"tune_candidates.ssd_bytes", "tune_choices.ssd_bytes", "tune_plans.plan_ssd_bytes",
                               "tune_plans.host_budget_bytes", "tune_plans.ssd_budget_bytes"});
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  const TuneResult old = load_tune_result(store, r.run_id);
  EXPECT_EQ(old.candidates[3].ssd_bytes, 0u);
  EXPECT_EQ(old.choices[0].ssd_bytes, 0u);
  EXPECT_EQ(old.plan_ssd_bytes, 0u);
  EXPECT_EQ(old.host_budget_bytes, 0u);
  EXPECT_EQ(old.ssd_budget_bytes, 0u);
  EXPECT_GE(current_schema_version(), 17);
}

// Schema step 11: each candidate records where its step time comes from (measured, a twin's,
// predicted from its class's representative); older files say nothing ('').
TEST(TuneStore, CandidatesRecordWhereTheirTimeComesFrom) {
  const std::string path = temp_path("tune-timing-source.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  r.candidates[0].timing_kind = edo::model::TimingKind::kMeasured;
  r.candidates[1].timing_kind = edo::model::TimingKind::kPredicted;
  r.candidates[1].timing_from = "model.emb.item";
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
    const TuneResult q = load_tune_result(store, r.run_id);
    EXPECT_EQ(edo::model::to_string(q.candidates[0].timing_kind), "measured");
    EXPECT_EQ(q.candidates[0].timing_from, "");
    EXPECT_EQ(edo::model::to_string(q.candidates[1].timing_kind), "predicted");
    EXPECT_EQ(q.candidates[1].timing_from, "model.emb.item");
  }
  {
    // A schema-6 file: the columns did not exist; migrating adds them empty (unknown).
    as_schema_version(path, 6, {"tune_candidates.timing_kind", "tune_candidates.timing_from"});
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  const TuneResult q = load_tune_result(store, r.run_id);
  EXPECT_EQ(edo::model::to_string(q.candidates[1].timing_kind), "");
  EXPECT_EQ(q.candidates[1].timing_from, "");
  EXPECT_EQ(q.candidates[1].step_us, r.candidates[1].step_us);
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
            std::to_string(current_schema_version()));
}

// A run that found no plan is listed but never replaces the last good plan.
TEST(TuneStore, AFailedRunNeverHidesTheLastGoodPlan) {
  const std::string path = temp_path("tune-runs.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  ProfileStore store(path, ProfileStore::Mode::kReadWrite);
  EXPECT_FALSE(load_latest_good_tune_result(store).has_value());
  TuneResult good = sample_result();
  save_tune_result(store, good);
  TuneResult bad = sample_result();
  bad.budget_bytes = 1000;
  bad.feasible = false;
  bad.choices.clear();
  bad.complete = true;
  bad.stop_reason = edo::model::StopReason::kNone;
  save_tune_result(store, bad);
  EXPECT_EQ(load_latest_tune_result(store)->run_id, bad.run_id);
  const auto kept = load_latest_good_tune_result(store);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->run_id, good.run_id);
  EXPECT_TRUE(kept->feasible);
  const auto runs = list_tune_runs(store);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run_id, good.run_id);
  EXPECT_TRUE(runs[0].feasible);
  EXPECT_FALSE(runs[0].complete);
  EXPECT_EQ(edo::model::to_string(runs[0].stop_reason), "time limit");
  EXPECT_EQ(runs[0].plan_device_bytes, 10400u);
  EXPECT_EQ(runs[1].run_id, bad.run_id);
  EXPECT_FALSE(runs[1].feasible);
  EXPECT_EQ(runs[1].budget_bytes, 1000u);
}

TEST(TuneStore, ReadOnlyStoreRefusesToWrite) {
  const std::string path = temp_path("tune3.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  TuneResult r = sample_result();
  EXPECT_THROW(save_tune_result(store, r), DbError);
}

TEST(TuneStore, DanglingChoiceIsAOneLineError) {
  const std::string path = temp_path("tune4.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
    store.database().exec("UPDATE tune_choices SET candidate_id = 12345");
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  try {
    load_tune_result(store, r.run_id);
    FAIL();
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown candidate"), std::string::npos) << e.what();
  }
}

// Schema step 12 (issue 22 point 3): a plan over several devices keeps its device count, each
// table's sharding and its shards in order, so that `edo export` from the file gives the plan
// `edo tune` printed; a schema-11 file migrates to a single-device plan.
TEST(TuneStore, APlanOverSeveralDevicesKeepsItsPlacement) {
  const std::string path = temp_path("tune-devices.edodb");
  { ProfileStore(path, ProfileStore::Mode::kCreate).save(*std::make_unique<Profile>(sample_profile())); }
  TuneResult r = sample_result();
  r.devices = 3;
  r.choices[0].sharding = "row_wise";
  r.choices[0].shards = {{2, 0, 500, 5200, 256.0}, {0, 500, 500, 5200, 256.0}};
  r.choices[1].sharding = "row_wise";
  r.choices[1].shards = {{2, 0, 500, 0, 0.0}, {0, 500, 500, 0, 0.0}};
  {
    ProfileStore store(path, ProfileStore::Mode::kReadWrite);
    save_tune_result(store, r);
    const TuneResult q = load_tune_result(store, r.run_id);
    EXPECT_EQ(q.devices, 3u);
    ASSERT_EQ(q.choices.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(q.choices[i].sharding, "row_wise");
      ASSERT_EQ(q.choices[i].shards.size(), 2u);
      for (size_t k = 0; k < 2; ++k) {
        const auto &a = q.choices[i].shards[k], &b = r.choices[i].shards[k];
        EXPECT_EQ(a.device, b.device);
        EXPECT_EQ(a.offset, b.offset);
        EXPECT_EQ(a.size, b.size);
        EXPECT_EQ(a.device_bytes, b.device_bytes);
        EXPECT_DOUBLE_EQ(a.lookups_per_step, b.lookups_per_step);
      }
    }
  }
  {
    // A schema-11 file: no device count, sharding or shards; migrating makes its plans
    // single-device ones.
    as_schema_version(path, 11, {"tune_shards", "tune_plans.devices", "tune_choices.sharding"});
  }
  ProfileStore store(path, ProfileStore::Mode::kReadOnly);
  const TuneResult old = load_tune_result(store, r.run_id);
  EXPECT_EQ(old.devices, 1u);
  ASSERT_EQ(old.choices.size(), 2u);
  EXPECT_TRUE(old.choices[0].sharding.empty());
  EXPECT_TRUE(old.choices[0].shards.empty());
  EXPECT_EQ(old.choices[0].device_bytes, 10400u);
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT value FROM edo_meta WHERE key = 'schema_version'").getString(),
            std::to_string(current_schema_version()));
  EXPECT_GE(current_schema_version(), 12);
}

}  // namespace
}  // namespace edo::db
