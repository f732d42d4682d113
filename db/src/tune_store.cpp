#include "edo/db/tune_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include "open_safely.h"

namespace edo::db {
namespace {

using model::TuneCandidate;
using model::TuneChoice;
using model::TuneResult;
using model::TuneTable;

// NaN and infinities are not stored as numbers: NULL stands for "none" (not measured, no limit).
void bind_real(SQLite::Statement& s, int i, double v) {
  if (std::isfinite(v)) s.bind(i, v);
  else s.bind(i);
}
void bind_optional_real(SQLite::Statement& s, int i, const std::optional<double>& v) {
  if (v && std::isfinite(*v)) s.bind(i, *v);
  else s.bind(i);
}
double real_or(const SQLite::Column& c, double dflt) { return c.isNull() ? dflt : c.getDouble(); }
int64_t i64(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t u64(const SQLite::Column& c) {
  const int64_t v = c.getInt64();
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

[[noreturn]] void corrupt(const ProfileStore& store, const std::string& what) {
  throw DbError(store.path() + ": truncated or corrupt edo database (" + what + "); run 'edo tune' again");
}

void write_plan(SQLite::Database& d, const TuneResult& r, const std::map<size_t, int64_t>& candidate_ids) {
  SQLite::Statement plan(d,
      "INSERT INTO tune_plans(run_id, created_unix, budget_bytes, max_error, feasible, min_feasible_bytes,"
      " baseline_device_bytes, baseline_host_bytes, baseline_step_us, plan_device_bytes, plan_host_bytes, plan_step_us,"
      " objective, devices, plan_ssd_bytes, host_budget_bytes, ssd_budget_bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  plan.bind(13, r.objective);
  plan.bind(14, static_cast<int64_t>(r.devices));
  plan.bind(15, i64(r.plan_ssd_bytes));
  plan.bind(16, i64(r.host_budget_bytes));
  plan.bind(17, i64(r.ssd_budget_bytes));
  plan.bind(1, r.run_id);
  plan.bind(2, r.created_unix);
  plan.bind(3, i64(r.budget_bytes));
  bind_real(plan, 4, r.max_error);
  plan.bind(5, r.feasible ? 1 : 0);
  plan.bind(6, i64(r.min_feasible_bytes));
  plan.bind(7, i64(r.baseline_device_bytes));
  plan.bind(8, i64(r.baseline_host_bytes));
  plan.bind(9, std::isfinite(r.baseline_step_us) ? r.baseline_step_us : 0.0);
  plan.bind(10, i64(r.plan_device_bytes));
  plan.bind(11, i64(r.plan_host_bytes));
  plan.bind(12, std::isfinite(r.plan_step_us) ? r.plan_step_us : 0.0);
  plan.exec();
  const int64_t plan_id = d.getLastInsertRowid();
  SQLite::Statement choice(d,
      "INSERT INTO tune_choices(plan_id, table_name, candidate_id, shares_with, device_bytes, host_bytes, step_us, why,"
      " sharding, ssd_bytes) VALUES (?,?,?,?,?,?,?,?,?,?)");
  SQLite::Statement shard(d,
      "INSERT INTO tune_shards(plan_id, table_name, position, device, first, size, device_bytes, lookups_per_step)"
      " VALUES (?,?,?,?,?,?,?,?)");
  for (const TuneChoice& c : r.choices) {
    choice.reset();
    choice.bind(1, plan_id);
    choice.bind(2, c.table);
    auto it = c.candidate >= 0 ? candidate_ids.find(static_cast<size_t>(c.candidate)) : candidate_ids.end();
    if (it != candidate_ids.end()) choice.bind(3, it->second);
    else choice.bind(3);
    choice.bind(4, c.shares_with);
    choice.bind(5, i64(c.device_bytes));
    choice.bind(6, i64(c.host_bytes));
    choice.bind(7, std::isfinite(c.step_us) ? c.step_us : 0.0);
    choice.bind(8, c.why);
    choice.bind(9, c.sharding);
    choice.bind(10, i64(c.ssd_bytes));
    choice.exec();
    for (size_t i = 0; i < c.shards.size(); ++i) {
      const model::TuneShard& s = c.shards[i];
      shard.reset();
      shard.bind(1, plan_id);
      shard.bind(2, c.table);
      shard.bind(3, static_cast<int64_t>(i));
      shard.bind(4, static_cast<int64_t>(s.device));
      shard.bind(5, i64(s.offset));
      shard.bind(6, i64(s.size));
      shard.bind(7, i64(s.device_bytes));
      shard.bind(8, std::isfinite(s.lookups_per_step) ? s.lookups_per_step : 0.0);
      shard.exec();
    }
  }
  SQLite::Statement point(d, "INSERT INTO tune_frontier(plan_id, device_bytes, step_us) VALUES (?,?,?)");
  for (const auto& [bytes, us] : r.frontier) {
    point.reset();
    point.bind(1, plan_id);
    point.bind(2, i64(bytes));
    point.bind(3, us);
    point.exec();
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

}  // namespace

void save_tune_result(ProfileStore& store, TuneResult& r) {
  require_writable(store);
  try {
    SQLite::Database& d = store.database();
    SQLite::Transaction txn(d);
    SQLite::Statement run(d,
        "INSERT INTO tune_runs(created_unix, backend, device, weights, budget_bytes, max_error, tables_glob, seed,"
        " time_limit_s, elapsed_s, complete, stop_reason, candidates_total, candidates_measured, notes, timing_kind,"
        " timing_device, allow_unvalidated, fine_tune) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    run.bind(1, r.created_unix);
    run.bind(2, r.backend);
    run.bind(3, r.device);
    run.bind(4, r.weights);
    run.bind(5, i64(r.budget_bytes));
    bind_real(run, 6, r.max_error);
    run.bind(7, r.tables_glob);
    run.bind(8, i64(r.seed));
    run.bind(9, r.time_limit_s);
    run.bind(10, r.elapsed_s);
    run.bind(11, r.complete ? 1 : 0);
    run.bind(12, r.stop_reason);
    run.bind(13, i64(r.candidates_total));
    run.bind(14, i64(r.candidates_measured));
    std::string notes;
    for (const auto& n : r.notes) notes += (notes.empty() ? "" : "\n") + n;
    run.bind(15, notes);
    run.bind(16, r.timing_kind);
    run.bind(17, r.timing_device);
    run.bind(18, r.allow_unvalidated ? 1 : 0);
    run.bind(19, r.fine_tune ? 1 : 0);
    run.exec();
    r.run_id = d.getLastInsertRowid();
    SQLite::Statement table(d,
        "INSERT INTO tune_tables(run_id, name, rows, dim, dtype, device_bytes, lookups_per_step, tuned, shares_with,"
        " weights, optimizer, training, dense_use) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const TuneTable& t : r.tables) {
      table.reset();
      table.bind(1, r.run_id);
      table.bind(2, t.name);
      table.bind(3, i64(t.rows));
      table.bind(4, static_cast<int64_t>(t.dim));
      table.bind(5, t.dtype);
      table.bind(6, i64(t.device_bytes));
      table.bind(7, std::isfinite(t.lookups_per_step) ? t.lookups_per_step : 0.0);
      table.bind(8, t.tuned ? 1 : 0);
      table.bind(9, t.shares_with);
      table.bind(10, t.weights);
      table.bind(11, t.optimizer);
      table.bind(12, t.training ? 1 : 0);
      table.bind(13, t.dense_use);
      table.exec();
    }
    SQLite::Statement cand(d,
        "INSERT INTO tune_candidates(run_id, table_name, strategy, spec, params, optimizer, device_bytes, host_bytes,"
        " step_us, error, hit_rate, recorded_hit_rate, needs_retraining, measured, measured_rows, note, step_us_lo,"
        " step_us_hi, step_covers, forward_us, backward_us, update_us, heldout_hit_rate, timing_kind, timing_from, validated,"
        " rejected, ssd_bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (TuneCandidate& c : r.candidates) {
      cand.reset();
      cand.bind(1, r.run_id);
      cand.bind(2, c.table);
      cand.bind(3, c.strategy);
      cand.bind(4, c.spec);
      cand.bind(5, c.params_json.empty() ? std::string("{}") : c.params_json);
      cand.bind(6, c.optimizer);
      cand.bind(7, i64(c.device_bytes));
      cand.bind(8, i64(c.host_bytes));
      bind_real(cand, 9, c.step_us);
      bind_real(cand, 10, c.error);
      bind_optional_real(cand, 11, c.hit_rate);
      bind_optional_real(cand, 12, c.recorded_hit_rate);
      cand.bind(13, c.needs_retraining ? 1 : 0);
      cand.bind(14, c.measured ? 1 : 0);
      cand.bind(15, i64(c.measured_rows));
      cand.bind(16, c.note);
      bind_real(cand, 17, c.step_us_lo);
      bind_real(cand, 18, c.step_us_hi);
      cand.bind(19, c.step_covers);
      bind_real(cand, 20, c.forward_us);
      bind_real(cand, 21, c.backward_us);
      bind_real(cand, 22, c.update_us);
      bind_optional_real(cand, 23, c.heldout_hit_rate);
      cand.bind(24, c.timing_kind);
      cand.bind(25, c.timing_from);
      cand.bind(26, c.validated ? 1 : 0);
      cand.bind(27, c.rejected);
      cand.bind(28, i64(c.ssd_bytes));
      cand.exec();
      c.id = d.getLastInsertRowid();
    }
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
    while (q.executeStep()) ids.push_back(q.getColumn(0).getInt64());
  } catch (const SQLite::Exception& e) {
    corrupt(store, e.what());
  }
  return ids;
}

TuneResult load_tune_result(const ProfileStore& store, int64_t run_id) {
  TuneResult r;
  try {
    SQLite::Database& d = store.database();
    SQLite::Statement run(d,
        "SELECT id, created_unix, backend, device, weights, budget_bytes, max_error, tables_glob, seed, time_limit_s,"
        " elapsed_s, complete, stop_reason, candidates_total, candidates_measured, notes, timing_kind, timing_device,"
        " allow_unvalidated, fine_tune FROM tune_runs WHERE id = ?");
    run.bind(1, run_id);
    if (!run.executeStep()) throw DbError(store.path() + ": no tune run " + std::to_string(run_id) + "; run 'edo tune' first");
    r.run_id = run.getColumn(0).getInt64();
    r.created_unix = run.getColumn(1).getInt64();
    r.backend = run.getColumn(2).getString();
    r.device = run.getColumn(3).getString();
    r.weights = run.getColumn(4).getString();
    r.budget_bytes = u64(run.getColumn(5));
    r.max_error = real_or(run.getColumn(6), INFINITY);
    r.tables_glob = run.getColumn(7).getString();
    r.seed = u64(run.getColumn(8));
    r.time_limit_s = run.getColumn(9).getDouble();
    r.elapsed_s = run.getColumn(10).getDouble();
    r.complete = run.getColumn(11).getInt() != 0;
    r.stop_reason = run.getColumn(12).getString();
    r.candidates_total = u64(run.getColumn(13));
    r.allow_unvalidated = run.getColumn(18).getInt() != 0;
    r.fine_tune = run.getColumn(19).getInt() != 0;
    r.candidates_measured = u64(run.getColumn(14));
    r.timing_kind = run.getColumn(16).getString();
    r.timing_device = run.getColumn(17).getString();
    if (r.timing_device.empty()) r.timing_device = r.device;  // runs before schema 7: measured on their device
    {
      const std::string notes = run.getColumn(15).getString();
      size_t start = 0;
      while (start < notes.size()) {
        size_t end = notes.find('\n', start);
        if (end == std::string::npos) end = notes.size();
        r.notes.push_back(notes.substr(start, end - start));
        start = end + 1;
      }
    }

    SQLite::Statement tables(d,
        "SELECT name, rows, dim, dtype, device_bytes, lookups_per_step, tuned, shares_with, weights, optimizer, training,"
        " dense_use FROM tune_tables"
        " WHERE run_id = ? ORDER BY rowid");
    tables.bind(1, run_id);
    while (tables.executeStep()) {
      TuneTable t;
      t.name = tables.getColumn(0).getString();
      t.rows = u64(tables.getColumn(1));
      const int64_t dim = tables.getColumn(2).getInt64();
      if (dim < 0 || dim > (int64_t{1} << 24)) corrupt(store, "tune table '" + t.name + "' has dim " + std::to_string(dim));
      t.dim = static_cast<uint32_t>(dim);
      t.dtype = tables.getColumn(3).getString();
      t.device_bytes = u64(tables.getColumn(4));
      t.lookups_per_step = tables.getColumn(5).getDouble();
      t.tuned = tables.getColumn(6).getInt() != 0;
      t.shares_with = tables.getColumn(7).getString();
      t.weights = tables.getColumn(8).getString();
      t.optimizer = tables.getColumn(9).getString();
      t.training = tables.getColumn(10).getInt() != 0;
      t.dense_use = tables.getColumn(11).getString();
      r.tables.push_back(std::move(t));
    }

    std::map<int64_t, int64_t> index_of;  // candidate id -> index
    SQLite::Statement cand(d,
        "SELECT id, table_name, strategy, spec, params, optimizer, device_bytes, host_bytes, step_us, error, hit_rate,"
        " recorded_hit_rate, needs_retraining, measured, measured_rows, note, step_us_lo, step_us_hi, step_covers, forward_us,"
        " backward_us, update_us, heldout_hit_rate, timing_kind, timing_from, validated, rejected, ssd_bytes FROM tune_candidates"
        " WHERE run_id = ? ORDER BY id");
    cand.bind(1, run_id);
    while (cand.executeStep()) {
      TuneCandidate c;
      c.id = cand.getColumn(0).getInt64();
      c.table = cand.getColumn(1).getString();
      c.strategy = cand.getColumn(2).getString();
      c.spec = cand.getColumn(3).getString();
      c.params_json = cand.getColumn(4).getString();
      c.optimizer = cand.getColumn(5).getString();
      c.device_bytes = u64(cand.getColumn(6));
      c.host_bytes = u64(cand.getColumn(7));
      c.step_us = real_or(cand.getColumn(8), NAN);
      c.error = real_or(cand.getColumn(9), NAN);
      if (!cand.getColumn(10).isNull()) c.hit_rate = cand.getColumn(10).getDouble();
      if (!cand.getColumn(11).isNull()) c.recorded_hit_rate = cand.getColumn(11).getDouble();
      c.needs_retraining = cand.getColumn(12).getInt() != 0;
      c.measured = cand.getColumn(13).getInt() != 0;
      c.measured_rows = u64(cand.getColumn(14));
      c.note = cand.getColumn(15).getString();
      c.step_us_lo = real_or(cand.getColumn(16), NAN);
      c.step_us_hi = real_or(cand.getColumn(17), NAN);
      c.step_covers = cand.getColumn(18).getString();
      c.forward_us = real_or(cand.getColumn(19), NAN);
      c.backward_us = real_or(cand.getColumn(20), NAN);
      c.update_us = real_or(cand.getColumn(21), NAN);
      if (!cand.getColumn(22).isNull()) c.heldout_hit_rate = cand.getColumn(22).getDouble();
      c.timing_kind = cand.getColumn(23).getString();
      c.timing_from = cand.getColumn(24).getString();
      c.validated = cand.getColumn(25).getInt() != 0;
      c.rejected = cand.getColumn(26).getString();
      c.ssd_bytes = u64(cand.getColumn(27));
      index_of[c.id] = static_cast<int64_t>(r.candidates.size());
      r.candidates.push_back(std::move(c));
    }

    SQLite::Statement plan(d,
        "SELECT id, budget_bytes, max_error, feasible, min_feasible_bytes, baseline_device_bytes, baseline_host_bytes,"
        " baseline_step_us, plan_device_bytes, plan_host_bytes, plan_step_us, created_unix, objective, devices, plan_ssd_bytes, host_budget_bytes,"
        " ssd_budget_bytes FROM tune_plans"
        " WHERE run_id = ? ORDER BY id DESC LIMIT 1");
    plan.bind(1, run_id);
    if (!plan.executeStep()) return r;  // a run without a plan (should not happen): candidates only
    const int64_t plan_id = plan.getColumn(0).getInt64();
    r.budget_bytes = u64(plan.getColumn(1));
    r.max_error = real_or(plan.getColumn(2), INFINITY);
    r.feasible = plan.getColumn(3).getInt() != 0;
    r.min_feasible_bytes = u64(plan.getColumn(4));
    r.baseline_device_bytes = u64(plan.getColumn(5));
    r.baseline_host_bytes = u64(plan.getColumn(6));
    r.baseline_step_us = plan.getColumn(7).getDouble();
    r.plan_device_bytes = u64(plan.getColumn(8));
    r.plan_host_bytes = u64(plan.getColumn(9));
    r.plan_step_us = plan.getColumn(10).getDouble();
    r.created_unix = plan.getColumn(11).getInt64();
    r.objective = plan.getColumn(12).getString();
    const int64_t devices = plan.getColumn(13).getInt64();
    if (devices < 1 || devices > 65536) corrupt(store, "tune plan for " + std::to_string(devices) + " devices");
    r.devices = static_cast<uint32_t>(devices);
    r.plan_ssd_bytes = u64(plan.getColumn(14));
    r.host_budget_bytes = u64(plan.getColumn(15));
    r.ssd_budget_bytes = u64(plan.getColumn(16));

    SQLite::Statement choices(d,
        "SELECT table_name, candidate_id, shares_with, device_bytes, host_bytes, step_us, why, sharding, ssd_bytes FROM tune_choices"
        " WHERE plan_id = ? ORDER BY rowid");
    SQLite::Statement shards(d,
        "SELECT device, first, size, device_bytes, lookups_per_step FROM tune_shards WHERE plan_id = ? AND table_name = ?"
        " ORDER BY position");
    choices.bind(1, plan_id);
    while (choices.executeStep()) {
      TuneChoice c;
      c.table = choices.getColumn(0).getString();
      if (!choices.getColumn(1).isNull()) {
        auto it = index_of.find(choices.getColumn(1).getInt64());
        if (it == index_of.end()) corrupt(store, "plan choice of '" + c.table + "' refers to an unknown candidate");
        c.candidate = it->second;
      }
      c.shares_with = choices.getColumn(2).getString();
      c.device_bytes = u64(choices.getColumn(3));
      c.host_bytes = u64(choices.getColumn(4));
      c.step_us = choices.getColumn(5).getDouble();
      c.why = choices.getColumn(6).getString();
      c.sharding = choices.getColumn(7).getString();
      c.ssd_bytes = u64(choices.getColumn(8));
      shards.reset();
      shards.bind(1, plan_id);
      shards.bind(2, c.table);
      while (shards.executeStep()) {
        model::TuneShard s;
        const int64_t device = shards.getColumn(0).getInt64();
        if (device < 0 || device >= devices) corrupt(store, "a shard of '" + c.table + "' is on device " + std::to_string(device));
        s.device = static_cast<uint32_t>(device);
        s.offset = u64(shards.getColumn(1));
        s.size = u64(shards.getColumn(2));
        s.device_bytes = u64(shards.getColumn(3));
        s.lookups_per_step = shards.getColumn(4).getDouble();
        c.shards.push_back(s);
      }
      r.choices.push_back(std::move(c));
    }
    SQLite::Statement frontier(d, "SELECT device_bytes, step_us FROM tune_frontier WHERE plan_id = ? ORDER BY device_bytes, rowid");
    frontier.bind(1, plan_id);
    while (frontier.executeStep()) r.frontier.emplace_back(u64(frontier.getColumn(0)), frontier.getColumn(1).getDouble());
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
  try {
    SQLite::Statement q(store.database(),
        "SELECT r.id, r.created_unix, r.backend, r.device, r.complete, r.stop_reason, p.budget_bytes, p.feasible,"
        " p.plan_device_bytes, p.plan_step_us, p.objective, p.min_feasible_bytes, r.timing_kind, r.timing_device, p.devices FROM tune_runs r"
        " JOIN tune_plans p ON p.id = (SELECT MAX(id) FROM tune_plans WHERE run_id = r.id) ORDER BY r.id");
    while (q.executeStep()) {
      TuneRunSummary s;
      s.run_id = q.getColumn(0).getInt64();
      s.created_unix = q.getColumn(1).getInt64();
      s.backend = q.getColumn(2).getString();
      s.device = q.getColumn(3).getString();
      s.complete = q.getColumn(4).getInt() != 0;
      s.stop_reason = q.getColumn(5).getString();
      s.budget_bytes = u64(q.getColumn(6));
      s.feasible = q.getColumn(7).getInt() != 0;
      s.plan_device_bytes = u64(q.getColumn(8));
      s.plan_step_us = q.getColumn(9).getDouble();
      s.objective = q.getColumn(10).getString();
      s.min_feasible_bytes = u64(q.getColumn(11));
      s.timing_kind = q.getColumn(12).getString();
      s.timing_device = q.getColumn(13).getString();
      if (s.timing_device.empty()) s.timing_device = s.device;
      s.devices = static_cast<uint32_t>(std::clamp<int64_t>(q.getColumn(14).getInt64(), 1, 65536));
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
