// `edo diff A B`: what changed between two recordings, table by table. `edo diff --plan PLAN
// AFTER`: a plan (from `edo tune`/`edo export`) beside a recording of the job it was applied to
// (`edo.apply_plan`): each planned table's bytes and error estimate next to what was measured.
#include <algorithm>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/model/profile_summary.h"
#include "edo/model/training.h"
#include "edo/stats/table_stats.h"
#include "support/plan/plan_source.h"
#include "support/plan/plan_trial.h"
#include "support/report/report_json.h"
#include "support/terminal.h"

namespace edo::cli::diff_command {
namespace {

using json = nlohmann::ordered_json;

struct DiffOptions {
  std::vector<std::string> files;
  std::string plan;
  bool json = false;
  double max_loss_delta = 0.10;  // --max-loss-delta: the final loss's largest relative change
  // Loaded by run_plan_diff for the JSON's loss summaries.
  const model::Profile* trial = nullptr;
  const model::Profile* baseline = nullptr;
};

struct Loaded {
  model::Profile profile;
  std::vector<model::TableView> tables;
};

// The tables as the report names them (table_views), each with summarize()'s headline numbers
// (all that a diff shows), computed as each table is read when no two tables share a name (one
// view per table, nothing to merge), so that one table's statistics are in memory at a time.
// 200,000 tables in 30 s (issue 31): the curves and Zipf fit a report draws, and holding every
// table's statistics, were most of the time and memory.
Loaded load(const std::string& path) {
  db::ProfileStore store(path, db::ProfileStore::Mode::kReadOnly);
  Loaded l;
  if (!store.table_names_distinct()) {
    // Tables of one name from several processes merge into one view: their statistics first.
    l.profile = store.load_for_viewing();
    l.tables = model::table_views(l.profile, {}, nullptr, model::SummaryDetail::kHeadline);
    return l;
  }
  std::vector<stats::TableSummary> summary;  // of each of profile.tables, in their order
  l.profile = store.load_each_table([&](const model::Table& t) { summary.push_back(stats::summarize_headline(t.aggregate)); });
  std::vector<std::string> view_of_table;
  l.tables = model::table_views(l.profile, {}, &view_of_table, model::SummaryDetail::kHeadline);
  std::unordered_map<std::string_view, model::TableView*> view;
  for (auto& v : l.tables) view.emplace(v.name, &v);
  for (size_t i = 0; i < summary.size() && i < view_of_table.size(); ++i) view.at(view_of_table[i])->summary = std::move(summary[i]);
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
  // The same values without a JSON document (the text output: 200,000 tables' documents were a
  // fifth of its time).
  bool same(const model::TableView& a, const model::TableView& b) const {
    return share ? fraction(a) == fraction(b) : count(a) == count(b);
  }
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

std::string show(const model::TableView& t, const Metric& m) {
  if (m.share) return fmt::format("{:.1f}%", 100.0 * m.fraction(t));
  if (std::string_view(m.key).find("bytes") != std::string_view::npos) return model::format_bytes(m.count(t));
  return fmt::format("{}", m.count(t));
}

std::string change(const model::TableView& ta, const model::TableView& tb, const Metric& m) {
  if (m.share) return fmt::format("{:+.1f} pt", 100.0 * (m.fraction(tb) - m.fraction(ta)));
  const double a = static_cast<double>(m.count(ta)), b = static_cast<double>(m.count(tb));
  if (a == 0) return b == 0 ? "=" : "new";
  return fmt::format("{:+.1f}%", 100.0 * (b - a) / a);
}

std::string shape_of(const model::TableView& t) { return fmt::format("{} x {} {}", t.rows, t.dim, t.dtype); }
bool same_shape(const model::TableView& a, const model::TableView& b) {
  return a.rows == b.rows && a.dim == b.dim && a.dtype == b.dtype;
}

json trial_table_json(const TrialTable& t) {
  json e = {{"name", t.name},
            {"strategy", t.strategy},
            {"planned_device_bytes", t.planned_device_bytes},
            {"planned_host_bytes", t.planned_host_bytes},
            {"planned_error", t.planned_error ? json(*t.planned_error) : json(nullptr)},
            {"measured_bytes", t.recorded_bytes ? json(*t.recorded_bytes) : json(nullptr)}};
  if (t.recorded_bytes) e["measured_shape"] = t.recorded_shape;
  e["bytes_change"] = t.bytes_change ? json(*t.bytes_change) : json(nullptr);
  e["applied"] = t.applied;
  e["not_applied_why"] = t.applied ? json(nullptr) : json(t.not_applied_why);
  e["judged"] = t.judged;
  e["note"] = t.note.empty() ? json(nullptr) : json(t.note);
  return e;
}

json plan_trial_json(const DiffOptions& o, const PlanTrial& r) {
  json out = {{"schema", "edo.plan-diff/1"}, {"plan", o.plan}, {"after", o.files[0]}};
  out["baseline"] = r.has_baseline ? json(o.files[1]) : json(nullptr);
  json rows = json::array(), missing = json::array();
  for (const auto& t : r.tables) {
    rows.push_back(trial_table_json(t));
    if (!t.recorded_bytes) missing.push_back(t.name);
  }
  out["tables"] = rows;
  out["missing_in_after"] = missing;
  const auto step = [](const std::optional<double>& s) { return s ? json(*s) : json(nullptr); };
  out["step_time_s"] = {{"trial", step(r.trial_step_s)}, {"baseline", step(r.baseline_step_s)}};
  out["losses"] = {{"trial", r.trial_loss.count ? losses_json(model::loss_session(*o.trial)->losses) : json(nullptr)},
                   {"baseline", r.baseline_loss.count ? losses_json(model::loss_session(*o.baseline)->losses) : json(nullptr)},
                   {"final_change", r.loss_change && std::isfinite(*r.loss_change) ? json(*r.loss_change) : json(nullptr)},
                   {"max_final_change", o.max_loss_delta}};
  out["notes"] = r.notes;
  out["held"] = r.held;
  out["verdict"] = r.verdict;
  return out;
}

std::string loss_line(const model::LossSummary& l) {
  if (l.count == 0) return "none recorded";
  std::string s = fmt::format("{} step(s), {} (step {}) to {} (step {}), final {} (mean of the last {})", l.count,
                              loss_text(l.first->loss), l.first->step, loss_text(l.last->loss), l.last->step,
                              loss_text(l.final_loss), l.final_count);
  if (l.first_nonfinite) s += fmt::format("; first non-finite at step {} ({})", l.first_nonfinite->step, loss_text(l.first_nonfinite->loss));
  return s;
}

void print_plan_trial(const DiffOptions& o, const PlanTrial& r) {
  fmt::print("plan:     {}\ntrial:    {}\n", terminal_safe(o.plan), terminal_safe(o.files[0]));
  if (r.has_baseline) fmt::print("baseline: {}\n", terminal_safe(o.files[1]));
  size_t sw = 10;  // the strategy column: as wide as the longest label (fp16+fp32_state+sr, ...)
  for (const auto& t : r.tables) sw = std::max(sw, terminal_safe(t.strategy).size());
  fmt::print("\n{:<28} {:<{}} {:>12} {:>12} {:>8} {:>14}  {}\n", "table", "strategy", sw, "planned", "measured", "change",
             "planned error", "measured as");
  for (const auto& t : r.tables) {
    const std::string err = t.planned_error ? fmt::format("{:.4g}", *t.planned_error) : std::string("-");
    std::string as = t.recorded_bytes ? terminal_safe(t.recorded_shape) : std::string("not recorded");
    if (!t.judged && t.recorded_bytes) as += "; " + terminal_safe(t.note);
    else if (!t.applied) as = terminal_safe(t.note);
    fmt::print("{:<28} {:<{}} {:>12} {:>12} {:>8} {:>14}  {}\n", terminal_safe(t.name), terminal_safe(t.strategy), sw,
               model::format_bytes(t.planned_device_bytes), t.recorded_bytes ? model::format_bytes(*t.recorded_bytes) : "-",
               t.bytes_change ? fmt::format("{:+.1f}%", 100.0 * *t.bytes_change) : std::string("-"), err, as);
  }
  const auto ms = [](const std::optional<double>& s) { return s ? fmt::format("{:.3g} ms", 1e3 * *s) : std::string("unknown"); };
  fmt::print("\nstep time: {} (trial)", ms(r.trial_step_s));
  if (r.has_baseline) {
    fmt::print(" vs {} (baseline)", ms(r.baseline_step_s));
    if (r.trial_step_s && r.baseline_step_s && *r.baseline_step_s > 0)
      fmt::print(": {:+.1f} %", 100.0 * (*r.trial_step_s - *r.baseline_step_s) / *r.baseline_step_s);
  }
  fmt::print("  (duration / steps of each recording)\nloss (trial):    {}\n", loss_line(r.trial_loss));
  if (r.has_baseline) fmt::print("loss (baseline): {}\n", loss_line(r.baseline_loss));
  if (r.loss_change)
    fmt::print("final loss: {} vs {}: {:+.1f} % (limit {:.4g} %)\n", loss_text(r.trial_loss.final_loss),
               loss_text(r.baseline_loss.final_loss), 100.0 * *r.loss_change, 100.0 * o.max_loss_delta);
  for (const auto& n : r.notes) fmt::print("note: {}\n", terminal_safe(n));
  fmt::print("verdict: {}\n", terminal_safe(r.verdict));
}

// A plan beside the trial run of the job it was applied to (and, given, the baseline run
// without it): the verdict decides the exit code (0 held, 1 not).
int run_plan_diff(DiffOptions& o) {
  const model::TuneResult plan = load_plan_source(o.plan);  // a bad plan file: Failure (exit 1)
  Loaded trial = load(o.files[0]);
  std::optional<Loaded> baseline;
  if (o.files.size() == 2) baseline = load(o.files[1]);
  o.trial = &trial.profile;
  o.baseline = baseline ? &baseline->profile : nullptr;
  const PlanTrial r = judge_plan_trial(plan, trial.profile, trial.tables, o.baseline, o.max_loss_delta);
  if (o.json) std::puts(plan_trial_json(o, r).dump(2, ' ', false, json::error_handler_t::replace).c_str());
  else print_plan_trial(o, r);
  return r.held ? 0 : 1;
}

int run_diff(DiffOptions& o) {
  if (!o.plan.empty()) return run_plan_diff(o);
  if (o.files.size() != 2) throw UsageError("give two recordings (edo diff BEFORE AFTER), or --plan PLAN AFTER");
  const std::string& before = o.files[0];
  const std::string& after = o.files[1];
  Loaded a = load(before);
  Loaded b = load(after);
  std::map<std::string_view, const model::TableView*> in_a, in_b;
  for (const auto& t : a.tables) in_a[t.name] = &t;
  for (const auto& t : b.tables) in_b[t.name] = &t;
  // Tables in both (by name, in name order), and those in one only.
  std::vector<std::pair<const model::TableView*, const model::TableView*>> both;
  std::vector<std::string_view> only_before, only_after;
  for (const auto& [name, ta] : in_a) {
    auto it = in_b.find(name);
    if (it == in_b.end()) only_before.push_back(name);
    else both.emplace_back(ta, it->second);
  }
  for (const auto& [name, tb] : in_b)
    if (!in_a.count(name)) only_after.push_back(name);

  if (o.json) {
    json out = {{"schema", "edo.diff/2"}, {"before", before}, {"after", after}};
    json changed = json::array();
    for (const auto& [ta, tb] : both) {
      json entry = {{"name", ta->name}};
      if (!same_shape(*ta, *tb)) entry["shape"] = {{"before", shape_of(*ta)}, {"after", shape_of(*tb)}};
      for (const Metric& m : kMetrics) entry[m.key] = {{"before", m.value(*ta)}, {"after", m.value(*tb)}};
      changed.push_back(std::move(entry));
    }
    out["tables"] = std::move(changed);
    out["only_in_before"] = only_before;
    out["only_in_after"] = only_after;
    const model::TableMemory ma = a.profile.table_memory(), mb = b.profile.table_memory();
    out["memory"] = {{"peak_bytes", {{"before", a.profile.peak_bytes()}, {"after", b.profile.peak_bytes()}}},
                     {"table_bytes", {{"before", ma.total_bytes()}, {"after", mb.total_bytes()}}},
                     {"weight_bytes", {{"before", ma.weight_bytes}, {"after", mb.weight_bytes}}},
                     {"optimizer_bytes", {{"before", ma.optimizer_bytes}, {"after", mb.optimizer_bytes}}},
                     {"grad_bytes", {{"before", ma.grad_bytes}, {"after", mb.grad_bytes}}}};
    std::puts(out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return 0;
  }

  // One buffer, written once: 200,000 tables are as many lines.
  fmt::memory_buffer text;
  auto put = [&]<typename... T>(fmt::format_string<T...> f, T&&... args) {
    fmt::format_to(std::back_inserter(text), f, std::forward<T>(args)...);
  };
  put("before: {}\nafter:  {}\n", terminal_safe(before), terminal_safe(after));
  put("memory peak: {} -> {}; tables: {} -> {}\n\n", model::format_bytes(a.profile.peak_bytes()),
      model::format_bytes(b.profile.peak_bytes()), model::format_bytes(a.profile.table_bytes()),
      model::format_bytes(b.profile.table_bytes()));
  for (const auto& [ta, tb] : both) {
    put("{}\n", terminal_safe(ta->name));
    if (!same_shape(*ta, *tb)) put("  {:<20} {} -> {}\n", "shape", terminal_safe(shape_of(*ta)), terminal_safe(shape_of(*tb)));
    for (const Metric& m : kMetrics) {
      if (m.same(*ta, *tb)) continue;
      put("  {:<20} {:>14} -> {:<14} {}\n", m.key, show(*ta, m), show(*tb, m), change(*ta, *tb, m));
    }
  }
  for (const auto& n : only_before) put("only in before: {}\n", terminal_safe(n));
  for (const auto& n : only_after) put("only in after:  {}\n", terminal_safe(n));
  if (both.empty() && only_before.empty() && only_after.empty()) put("no tables in either recording\n");
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<DiffOptions>();
  sub.footer(
      "Compares tables by name: memory (weight_bytes, optimizer_bytes, grad_bytes and their sum total_bytes),\n"
      "lookups, unique rows, coverage and LRU hit rates, and lists tables found in only one of the two\n"
      "recordings. Unchanged numbers are not printed (they are in --json: counts and bytes as integers,\n"
      "shares as fractions).\n\n"
      "With --plan PLAN TRIAL [BASELINE]: a plan proven by a trial run on the job itself. PLAN is a plan file from\n"
      "'edo export' (or an .edodb with a plan), TRIAL a recording of the job with the plan applied ('edo record\n"
      "--apply-plan', edo.apply_plan), BASELINE one of the same job without it. Per planned table: the plan's device\n"
      "bytes and error estimate beside the bytes recorded (weights + optimizer state + gradients, as the plan counts\n"
      "them), or 'not applied' with the apply's reason (e.g. needs TorchRec/FBGEMM) when the trial's apply said so;\n"
      "then the step time of each run (its duration over its steps) and the two loss curves: steps with a loss,\n"
      "first and last, the first non-finite loss, and the final loss, the mean of the last 10 % of the steps with a\n"
      "loss (at least one). One verdict line ends it:\n"
      "  verdict: the plan held (...)              every loss of the trial finite, every applied table's bytes within\n"
      "                                             1 % of the plan's, the final loss within --max-loss-delta of the\n"
      "                                             baseline's (without BASELINE the loss is not compared)\n"
      "  verdict: the plan broke training at step N (loss nan)\n"
      "  verdict: the plan's loss is off by X % (limit Y %)\n"
      "  verdict: the plan's bytes are off by X % for TABLE\n"
      "Exit code with --plan: 0 when the plan held, 1 when it did not or an input is missing or unreadable, 2 for a\n"
      "bad command line. --json adds \"held\", \"verdict\", \"losses\", \"step_time_s\" and per table \"applied\",\n"
      "\"not_applied_why\", \"judged\" (schema edo.plan-diff/1).\n\n"
      "Examples:\n  edo diff baseline.edodb int8.edodb\n  edo diff --plan plan.json trial.edodb baseline.edodb");
  sub.add_option("files", o->files, "BEFORE AFTER (.edodb), or TRIAL [BASELINE] with --plan")->required()->expected(1, 2);
  sub.add_option("--plan", o->plan, "a plan (JSON/YAML from 'edo export', or an .edodb with a plan) to judge TRIAL by");
  sub.add_option("--max-loss-delta", o->max_loss_delta,
                 "with --plan and BASELINE: the largest relative change of the final loss that holds (0.10 = 10 %)")
      ->type_name("X")
      ->default_str("0.10")
      ->check(CLI::Range(0.0, 1e6).description(""));
  sub.add_flag("--json", o->json, "print JSON (schema edo.diff/2)");
  return [o, &sub] {
    if (!o->plan.empty() || sub.count("--max-loss-delta") == 0) return run_diff(*o);
    throw UsageError("--max-loss-delta goes with --plan PLAN TRIAL BASELINE");
  };
}

}  // namespace

EDO_REGISTER_COMMAND("diff", "compare two recordings table by table", 30, setup);

}  // namespace edo::cli::diff_command
