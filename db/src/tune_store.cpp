#include "edo/db/tune_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include "edo/model/tune_fields.h"
#include "open_safely.h"
#include "record_columns.h"
#include "text_lines.h"

namespace edo::db {
namespace {

using model::TuneCandidate;
using model::TuneChoice;
using model::TuneResult;
using model::TuneTable;

// Every column but the store's own keys comes from the declarations in edo/model/tune_fields.h.
constexpr const auto& kRuns = model::kTuneRunFields;
constexpr const auto& kPlans = model::kTunePlanFields;
constexpr const auto& kTables = model::kTuneTableFields;
constexpr const auto& kCandidates = model::kTuneCandidateFields;
constexpr const auto& kChoices = model::kTuneChoiceFields;
constexpr const auto& kShards = model::kTuneShardFields;

[[noreturn]] void corrupt(const ProfileStore& store, const std::string& what) {
  throw DbError(store.path() + ": truncated or corrupt edo database (" + what + "); run 'edo tune' again");
}

void write_choices(SQLite::Database& d, const TuneResult& r, int64_t plan_id, const std::map<size_t, int64_t>& candidate_ids) {
  SQLite::Statement choice(d, insert_sql(kChoices, {"plan_id", "candidate_id"}));
  SQLite::Statement shard(d, insert_sql(kShards, {"plan_id", "table_name", "position"}));
  for (const TuneChoice& c : r.choices) {
    choice.reset();
    choice.bind(":plan_id", plan_id);
    auto it = c.candidate >= 0 ? candidate_ids.find(static_cast<size_t>(c.candidate)) : candidate_ids.end();
    if (it != candidate_ids.end()) choice.bind(":candidate_id", it->second);
    else choice.bind(":candidate_id");  // kept as recorded, not tuned
    bind_fields(choice, c, kChoices, 2);
    choice.exec();
    shard.reset();  // a statement binds only between runs
    shard.bind(":plan_id", plan_id);
    shard.bind(":table_name", c.table);
    for (size_t i = 0; i < c.shards.size(); ++i) {
      shard.reset();
      shard.bind(":position", static_cast<int64_t>(i));
      bind_fields(shard, c.shards[i], kShards, 3);
      shard.exec();
    }
  }
}

void write_plan(SQLite::Database& d, const TuneResult& r, const std::map<size_t, int64_t>& candidate_ids) {
  SQLite::Statement plan(d, insert_sql(kPlans, {"run_id"}));
  plan.bind(":run_id", r.run_id);
  bind_fields(plan, r, kPlans, 1);
  plan.exec();
  const int64_t plan_id = d.getLastInsertRowid();
  write_choices(d, r, plan_id, candidate_ids);
  insert_rows(d, model::kTuneFrontierFields, r.frontier, {{"plan_id", plan_id}});
}

// The run's row (its notes one per line) and its tables; sets r.run_id.
void write_run(SQLite::Database& d, TuneResult& r) {
  SQLite::Statement run(d, insert_sql(kRuns, {"notes"}));
  run.bind(":notes", join_lines(r.notes));
  bind_fields(run, r, kRuns, 1);
  run.exec();
  r.run_id = d.getLastInsertRowid();
  insert_rows(d, kTables, r.tables, {{"run_id", r.run_id}});
}

// Every candidate; sets each one's id.
void write_candidates(SQLite::Database& d, TuneResult& r) {
  SQLite::Statement cand(d, insert_sql(kCandidates, {"run_id"}));
  cand.bind(":run_id", r.run_id);
  for (TuneCandidate& c : r.candidates) {
    cand.reset();
    bind_fields(cand, c, kCandidates, 1);
    cand.exec();
    c.id = d.getLastInsertRowid();
  }
}

std::map<size_t, int64_t> candidate_ids_of(const TuneResult& r) {
  std::map<size_t, int64_t> ids;
  for (size_t i = 0; i < r.candidates.size(); ++i) ids[i] = r.candidates[i].id;
  return ids;
}

void require_writable(const ProfileStore& store) {
  if (store.mode() == ProfileStore::Mode::kReadOnly) throw DbError(store.path() + ": opened read-only, cannot save tune results");
}

void load_run(const ProfileStore& store, int64_t run_id, TuneResult& r) {
  SQLite::Statement run(store.database(), select_sql(kRuns, {"id", "notes"}) + " WHERE id = :id");
  run.bind(":id", run_id);
  if (!run.executeStep()) throw DbError(store.path() + ": no tune run " + std::to_string(run_id) + "; run 'edo tune' first");
  FieldReader(run, kRuns).read(run, r);
  r.run_id = run.getColumn("id").getInt64();
  r.notes = split_lines(run.getColumn("notes").getString(), /*keep_empty=*/true);
  if (r.timing_device.empty()) r.timing_device = r.device;  // runs before schema 7: measured on their device
}

void load_tune_tables(const ProfileStore& store, TuneResult& r) {
  SQLite::Statement tables(store.database(), select_sql(kTables, {}) + " WHERE run_id = :run_id ORDER BY rowid");
  tables.bind(":run_id", r.run_id);
  const FieldReader reader(tables, kTables);
  while (tables.executeStep()) reader.read(tables, r.tables.emplace_back());
}

// Returns candidate id -> index into r.candidates.
std::map<int64_t, int64_t> load_candidates(const ProfileStore& store, TuneResult& r) {
  std::map<int64_t, int64_t> index_of;
  SQLite::Statement cand(store.database(), select_sql(kCandidates, {"id"}) + " WHERE run_id = :run_id ORDER BY id");
  cand.bind(":run_id", r.run_id);
  const FieldReader reader(cand, kCandidates);
  while (cand.executeStep()) {
    TuneCandidate& c = r.candidates.emplace_back();
    reader.read(cand, c);
    c.id = cand.getColumn("id").getInt64();
    index_of[c.id] = static_cast<int64_t>(r.candidates.size() - 1);
  }
  return index_of;
}

void load_choices(const ProfileStore& store, int64_t plan_id, const std::map<int64_t, int64_t>& index_of, TuneResult& r) {
  SQLite::Database& d = store.database();
  SQLite::Statement choices(d, select_sql(kChoices, {"candidate_id"}) + " WHERE plan_id = :plan_id ORDER BY rowid");
  SQLite::Statement shards(d, select_sql(kShards, {}) + " WHERE plan_id = :plan_id AND table_name = :table_name ORDER BY position");
  const FieldReader choice_reader(choices, kChoices);
  const FieldReader shard_reader(shards, kShards);
  choices.bind(":plan_id", plan_id);
  shards.bind(":plan_id", plan_id);
  while (choices.executeStep()) {
    TuneChoice& c = r.choices.emplace_back();
    choice_reader.read(choices, c);
    if (const SQLite::Column id = choices.getColumn("candidate_id"); !id.isNull()) {
      auto it = index_of.find(id.getInt64());
      if (it == index_of.end()) corrupt(store, "plan choice of '" + c.table + "' refers to an unknown candidate");
      c.candidate = it->second;
    }
    shards.reset();
    shards.bind(":table_name", c.table);
    while (shards.executeStep()) {
      model::TuneShard& s = c.shards.emplace_back();
      shard_reader.read(shards, s);
      if (s.device >= r.devices) corrupt(store, "a shard of '" + c.table + "' is on device " + std::to_string(s.device));
    }
  }
}

// The run's latest plan, its choices and its frontier (a run without a plan, which should not
// happen: candidates only).
void load_plan(const ProfileStore& store, const std::map<int64_t, int64_t>& index_of, TuneResult& r) {
  SQLite::Database& d = store.database();
  SQLite::Statement plan(d, select_sql(kPlans, {"id"}) + " WHERE run_id = :run_id ORDER BY id DESC LIMIT 1");
  plan.bind(":run_id", r.run_id);
  if (!plan.executeStep()) return;
  FieldReader(plan, kPlans).read(plan, r);
  const int64_t plan_id = plan.getColumn("id").getInt64();
  load_choices(store, plan_id, index_of, r);
  SQLite::Statement frontier(d, select_sql(model::kTuneFrontierFields, {}) + " WHERE plan_id = :plan_id ORDER BY device_bytes, rowid");
  frontier.bind(":plan_id", plan_id);
  const FieldReader point_reader(frontier, model::kTuneFrontierFields);
  while (frontier.executeStep()) point_reader.read(frontier, r.frontier.emplace_back());
}

}  // namespace

void save_tune_result(ProfileStore& store, TuneResult& r) {
  require_writable(store);
  try {
    SQLite::Database& d = store.database();
    SQLite::Transaction txn(d);
    write_run(d, r);
    write_candidates(d, r);
    write_plan(d, r, candidate_ids_of(r));
    txn.commit();
  } catch (const DbError&) {
    throw;
  } catch (const SQLite::Exception& e) {
    throw DbError(store.path() + ": cannot write tune results: " + write_failure(store.database(), e));
  }
}

void save_tune_plan(ProfileStore& store, const TuneResult& r) {
  require_writable(store);
  if (r.run_id <= 0) throw DbError(store.path() + ": internal error: a plan for a run that was never saved");
  try {
    SQLite::Database& d = store.database();
    SQLite::Transaction txn(d);
    write_plan(d, r, candidate_ids_of(r));
    txn.commit();
  } catch (const SQLite::Exception& e) {
    throw DbError(store.path() + ": cannot write tune results: " + write_failure(store.database(), e));
  }
}

std::vector<int64_t> tune_run_ids(const ProfileStore& store) {
  std::vector<int64_t> ids;
  try {
    SQLite::Statement q(store.database(), "SELECT id FROM tune_runs ORDER BY id");
    while (q.executeStep()) ids.push_back(q.getColumn("id").getInt64());
  } catch (const SQLite::Exception& e) {
    corrupt(store, e.what());
  }
  return ids;
}

TuneResult load_tune_result(const ProfileStore& store, int64_t run_id) {
  TuneResult r;
  try {
    load_run(store, run_id, r);
    load_tune_tables(store, r);
    const auto index_of = load_candidates(store, r);
    load_plan(store, index_of, r);
  } catch (const OutOfRange& e) {
    corrupt(store, e.what());
  } catch (const DbError&) {
    throw;
  } catch (const SQLite::Exception& e) {
    corrupt(store, e.what());
  }
  return r;
}

std::optional<TuneResult> load_latest_tune_result(const ProfileStore& store) {
  const auto ids = tune_run_ids(store);
  if (ids.empty()) return std::nullopt;
  return load_tune_result(store, ids.back());
}

std::vector<TuneRunSummary> list_tune_runs(const ProfileStore& store) {
  std::vector<TuneRunSummary> out;
  auto u64 = [](const SQLite::Column& c) { return c.getInt64() < 0 ? uint64_t{0} : static_cast<uint64_t>(c.getInt64()); };
  auto word = [&]<class E>(const SQLite::Column& c, E& out) {
    const std::optional<E> e = model::from_string<E>(c.getString());
    if (!e) corrupt(store, std::string(c.getName()) + " is \"" + c.getString() + "\", not " + model::allowed_words<E>());
    out = *e;
  };
  try {
    SQLite::Statement q(store.database(),
        "SELECT r.id AS run_id, r.created_unix AS created_unix, r.backend AS backend, r.device AS device,"
        " r.complete AS complete, r.stop_reason AS stop_reason, r.timing_kind AS timing_kind, r.timing_device AS timing_device,"
        " p.budget_bytes AS budget_bytes, p.feasible AS feasible, p.plan_device_bytes AS plan_device_bytes,"
        " p.plan_step_us AS plan_step_us, p.objective AS objective, p.min_feasible_bytes AS min_feasible_bytes,"
        " p.devices AS devices FROM tune_runs r"
        " JOIN tune_plans p ON p.id = (SELECT MAX(id) FROM tune_plans WHERE run_id = r.id) ORDER BY r.id");
    while (q.executeStep()) {
      TuneRunSummary s;
      s.run_id = q.getColumn("run_id").getInt64();
      s.created_unix = q.getColumn("created_unix").getInt64();
      s.backend = q.getColumn("backend").getString();
      s.device = q.getColumn("device").getString();
      s.complete = q.getColumn("complete").getInt() != 0;
      word(q.getColumn("stop_reason"), s.stop_reason);
      s.budget_bytes = u64(q.getColumn("budget_bytes"));
      s.feasible = q.getColumn("feasible").getInt() != 0;
      s.plan_device_bytes = u64(q.getColumn("plan_device_bytes"));
      s.plan_step_us = q.getColumn("plan_step_us").getDouble();
      word(q.getColumn("objective"), s.objective);
      s.min_feasible_bytes = u64(q.getColumn("min_feasible_bytes"));
      word(q.getColumn("timing_kind"), s.timing_kind);
      s.timing_device = q.getColumn("timing_device").getString();
      if (s.timing_device.empty()) s.timing_device = s.device;
      s.devices = static_cast<uint32_t>(std::clamp<int64_t>(q.getColumn("devices").getInt64(), 1, 65536));
      out.push_back(std::move(s));
    }
  } catch (const SQLite::Exception& e) {
    corrupt(store, e.what());
  }
  return out;
}

std::optional<TuneResult> load_latest_good_tune_result(const ProfileStore& store) {
  const auto runs = list_tune_runs(store);
  for (auto it = runs.rbegin(); it != runs.rend(); ++it)
    if (it->feasible) return load_tune_result(store, it->run_id);
  return std::nullopt;
}

}  // namespace edo::db
