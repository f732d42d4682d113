// `edo diff A B`: what changed between two recordings, table by table. `edo diff --plan PLAN
// AFTER`: a plan (from `edo tune`/`edo export`) beside a recording of the job it was applied to
// (`edo.apply_plan`): each planned table's bytes and error estimate next to what was measured.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/model/profile_summary.h"
#include "support/plan_source.h"
#include "support/report_json.h"
#include "support/terminal.h"

namespace edo::cli::diff_command {
namespace {

using json = nlohmann::ordered_json;

struct DiffOptions {
  std::vector<std::string> files;
  std::string plan;
  bool json = false;
};

struct Loaded {
  model::Profile profile;
  std::vector<model::TableView> tables;
};

Loaded load(const std::string& path) {
  db::ProfileStore store(path, db::ProfileStore::Mode::kReadOnly);
  Loaded l;
  l.profile = store.load();
  l.tables = model::table_views(l.profile);
  return l;
}

// The numbers compared, in display order. Counts and bytes are integers (JSON integers too);
// shares are fractions shown as percentages.
struct Metric {
  const char* key;
  bool share;
  uint64_t (*count)(const model::TableView&);
  double (*fraction)(const model::TableView&);
  json value(const model::TableView& t) const { return share ? json(fraction(t)) : json(count(t)); }
};

const Metric kMetrics[] = {
    {"weight_bytes", false, [](const model::TableView& t) { return t.weight_bytes; }, nullptr},
    {"optimizer_bytes", false, [](const model::TableView& t) { return t.optimizer_bytes; }, nullptr},
    {"grad_bytes", false, [](const model::TableView& t) { return t.grad_bytes; }, nullptr},
    {"total_bytes", false, [](const model::TableView& t) { return t.total_bytes(); }, nullptr},
    {"lookups", false, [](const model::TableView& t) { return t.summary.lookups; }, nullptr},
    {"unique_rows", false, [](const model::TableView& t) { return t.summary.unique_rows; }, nullptr},
    {"coverage_top_1pct", true, nullptr, [](const model::TableView& t) { return t.summary.coverage_top_1pct; }},
    {"coverage_top_10pct", true, nullptr, [](const model::TableView& t) { return t.summary.coverage_top_10pct; }},
    {"lru_hit_rate_1pct", true, nullptr, [](const model::TableView& t) { return t.summary.lru_hit_rate_1pct; }},
    {"lru_hit_rate_10pct", true, nullptr, [](const model::TableView& t) { return t.summary.lru_hit_rate_10pct; }},
    {"lru_hit_rate_50pct", true, nullptr, [](const model::TableView& t) { return t.summary.lru_hit_rate_50pct; }},
};

std::string show(const json& v, const Metric& m) {
  if (m.share) return fmt::format("{:.1f}%", 100.0 * v.get<double>());
  if (std::string_view(m.key).find("bytes") != std::string_view::npos) return model::format_bytes(v.get<uint64_t>());
  return fmt::format("{}", v.get<uint64_t>());
}

std::string change(const json& va, const json& vb, bool share) {
  if (share) return fmt::format("{:+.1f} pt", 100.0 * (vb.get<double>() - va.get<double>()));
  const double a = static_cast<double>(va.get<uint64_t>()), b = static_cast<double>(vb.get<uint64_t>());
  if (a == 0) return b == 0 ? "=" : "new";
  return fmt::format("{:+.1f}%", 100.0 * (b - a) / a);
}

// Planned device bytes against the recorded bytes of the applied job, table by table. The plan's
// bytes include optimizer state and gradients for a training table; so do the recorded ones
// (TableView::total_bytes()). A table the plan changes that the recording does not hold is
// listed under "missing" (not applied, or recorded under another name).
int run_plan_diff(const DiffOptions& o) {
  const model::TuneResult plan = load_plan_source(o.plan);
  const std::string& after_path = o.files[0];
  Loaded b = load(after_path);
  std::map<std::string, const model::TableView*> in_b;
  for (const auto& t : b.tables) in_b[t.table_name] = &t;
  json out = {{"schema", "edo.plan-diff/1"}, {"plan", o.plan}, {"after", after_path}};
  json rows = json::array(), missing = json::array();
  for (const auto& ch : plan.choices) {
    const model::TuneCandidate* c = ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < plan.candidates.size()
                                        ? &plan.candidates[static_cast<size_t>(ch.candidate)]
                                        : nullptr;
    json e = {{"name", ch.table},
              {"strategy", !ch.shares_with.empty() ? std::string("shared") : c ? c->strategy : std::string("unchanged")},
              {"planned_device_bytes", ch.device_bytes},
              {"planned_host_bytes", ch.host_bytes},
              {"planned_error", c && std::isfinite(c->error) ? json(c->error) : json(nullptr)}};
    auto it = in_b.find(ch.table);
    if (it == in_b.end()) {
      e["measured_bytes"] = nullptr;
      e["bytes_change"] = nullptr;
      missing.push_back(ch.table);
    } else {
      const model::TableView& t = *it->second;
      const uint64_t measured = t.total_bytes();
      e["measured_bytes"] = measured;
      e["measured_shape"] = fmt::format("{} x {} {}", t.rows, t.dim, t.dtype);
      e["bytes_change"] = ch.device_bytes ? json((static_cast<double>(measured) - static_cast<double>(ch.device_bytes)) /
                                                 static_cast<double>(ch.device_bytes))
                                          : json(nullptr);
    }
    rows.push_back(e);
  }
  out["tables"] = rows;
  out["missing_in_after"] = missing;
  if (o.json) {
    std::puts(out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return 0;
  }
  fmt::print("plan:  {}\nafter: {}\n\n", terminal_safe(o.plan), terminal_safe(after_path));
  fmt::print("{:<28} {:<10} {:>12} {:>12} {:>8} {:>14}  {}\n", "table", "strategy", "planned", "measured", "change", "planned error",
             "measured as");
  for (const auto& e : rows) {
    const std::string planned_err = e["planned_error"].is_null() ? "-" : fmt::format("{:.4g}", e["planned_error"].get<double>());
    const bool have = !e["measured_bytes"].is_null();
    fmt::print("{:<28} {:<10} {:>12} {:>12} {:>8} {:>14}  {}\n", terminal_safe(e["name"].get<std::string>()),
               terminal_safe(e["strategy"].get<std::string>()), model::format_bytes(e["planned_device_bytes"].get<uint64_t>()),
               have ? model::format_bytes(e["measured_bytes"].get<uint64_t>()) : std::string("-"),
               e["bytes_change"].is_null() ? std::string("-") : fmt::format("{:+.1f}%", 100.0 * e["bytes_change"].get<double>()),
               planned_err, have ? terminal_safe(e["measured_shape"].get<std::string>()) : std::string("not recorded"));
  }
  if (!missing.empty())
    fmt::print("\n{} planned table(s) not in the recording: not applied, or recorded under another name\n", missing.size());
  return 0;
}

int run_diff(const DiffOptions& o) {
  if (!o.plan.empty()) {
    if (o.files.size() != 1) throw UsageError("--plan takes one recording: edo diff --plan PLAN AFTER.edodb");
    return run_plan_diff(o);
  }
  if (o.files.size() != 2) throw UsageError("give two recordings (edo diff BEFORE AFTER), or --plan PLAN AFTER");
  const std::string& before = o.files[0];
  const std::string& after = o.files[1];
  Loaded a = load(before);
  Loaded b = load(after);
  std::map<std::string, const model::TableView*> in_a, in_b;
  for (const auto& t : a.tables) in_a[t.name] = &t;
  for (const auto& t : b.tables) in_b[t.name] = &t;

  json out = {{"schema", "edo.diff/2"}, {"before", before}, {"after", after}};
  json changed = json::array(), only_before = json::array(), only_after = json::array();
  for (const auto& [name, ta] : in_a) {
    auto it = in_b.find(name);
    if (it == in_b.end()) {
      only_before.push_back(name);
      continue;
    }
    const model::TableView* tb = it->second;
    json entry = {{"name", name}};
    if (ta->rows != tb->rows || ta->dim != tb->dim || ta->dtype != tb->dtype) {
      entry["shape"] = {{"before", fmt::format("{} x {} {}", ta->rows, ta->dim, ta->dtype)},
                        {"after", fmt::format("{} x {} {}", tb->rows, tb->dim, tb->dtype)}};
    }
    for (const Metric& m : kMetrics) entry[m.key] = {{"before", m.value(*ta)}, {"after", m.value(*tb)}};
    changed.push_back(entry);
  }
  for (const auto& [name, tb] : in_b) {
    if (!in_a.count(name)) only_after.push_back(name);
  }
  out["tables"] = changed;
  out["only_in_before"] = only_before;
  out["only_in_after"] = only_after;
  const model::TableMemory ma = a.profile.table_memory(), mb = b.profile.table_memory();
  out["memory"] = {{"peak_bytes", {{"before", a.profile.peak_bytes()}, {"after", b.profile.peak_bytes()}}},
                   {"table_bytes", {{"before", ma.total_bytes()}, {"after", mb.total_bytes()}}},
                   {"weight_bytes", {{"before", ma.weight_bytes}, {"after", mb.weight_bytes}}},
                   {"optimizer_bytes", {{"before", ma.optimizer_bytes}, {"after", mb.optimizer_bytes}}},
                   {"grad_bytes", {{"before", ma.grad_bytes}, {"after", mb.grad_bytes}}}};
  if (o.json) {
    std::puts(out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return 0;
  }

  fmt::print("before: {}\nafter:  {}\n", terminal_safe(before), terminal_safe(after));
  fmt::print("memory peak: {} -> {}; tables: {} -> {}\n\n", model::format_bytes(a.profile.peak_bytes()),
             model::format_bytes(b.profile.peak_bytes()), model::format_bytes(a.profile.table_bytes()),
             model::format_bytes(b.profile.table_bytes()));
  for (const auto& entry : changed) {
    const std::string name = entry["name"];
    fmt::print("{}\n", terminal_safe(name));
    if (entry.contains("shape")) {
      fmt::print("  {:<20} {} -> {}\n", "shape", terminal_safe(entry["shape"]["before"].get<std::string>()),
                 terminal_safe(entry["shape"]["after"].get<std::string>()));
    }
    for (const Metric& m : kMetrics) {
      const json& va = entry[m.key]["before"];
      const json& vb = entry[m.key]["after"];
      if (va == vb) continue;
      fmt::print("  {:<20} {:>14} -> {:<14} {}\n", m.key, show(va, m), show(vb, m), change(va, vb, m.share));
    }
  }
  for (const auto& n : only_before) fmt::print("only in before: {}\n", terminal_safe(n.get<std::string>()));
  for (const auto& n : only_after) fmt::print("only in after:  {}\n", terminal_safe(n.get<std::string>()));
  if (changed.empty() && only_before.empty() && only_after.empty()) fmt::print("no tables in either recording\n");
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<DiffOptions>();
  sub.footer(
      "Compares tables by name: memory (weight_bytes, optimizer_bytes, grad_bytes and their sum total_bytes),\n"
      "lookups, unique rows, coverage and LRU hit rates, and lists tables found in only one of the two\n"
      "recordings. Unchanged numbers are not printed (they are in --json: counts and bytes as integers,\n"
      "shares as fractions).\n\n"
      "With --plan PLAN (a plan file from 'edo export', or an .edodb with a plan) and one recording of the job\n"
      "the plan was applied to (edo.apply_plan): each planned table's device bytes and error estimate beside the\n"
      "bytes recorded (weights + optimizer state + gradients, as the plan counts them).\n\n"
      "Examples:\n  edo diff baseline.edodb int8.edodb\n  edo diff --plan plan.json after.edodb");
  sub.add_option("files", o->files, "BEFORE AFTER (.edodb), or AFTER with --plan")->required()->expected(1, 2);
  sub.add_option("--plan", o->plan, "a plan (JSON/YAML from 'edo export', or an .edodb with a plan) to compare AFTER with");
  sub.add_flag("--json", o->json, "print JSON (schema edo.diff/2)");
  return [o] { return run_diff(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("diff", "compare two recordings table by table", 30, setup);

}  // namespace edo::cli::diff_command
