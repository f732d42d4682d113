// `edo diff A B`: what changed between two recordings, table by table.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/model/profile_summary.h"
#include "support/report_json.h"
#include "support/terminal.h"

namespace edo::cli {
namespace {

using json = nlohmann::ordered_json;

struct DiffOptions {
  std::string before;
  std::string after;
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

int run_diff(const DiffOptions& o) {
  Loaded a = load(o.before);
  Loaded b = load(o.after);
  std::map<std::string, const model::TableView*> in_a, in_b;
  for (const auto& t : a.tables) in_a[t.name] = &t;
  for (const auto& t : b.tables) in_b[t.name] = &t;

  json out = {{"schema", "edo.diff/2"}, {"before", o.before}, {"after", o.after}};
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

  fmt::print("before: {}\nafter:  {}\n", terminal_safe(o.before), terminal_safe(o.after));
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
      "Example:\n  edo diff baseline.edodb int8.edodb");
  sub.add_option("before", o->before, "the earlier recording (.edodb)")->required();
  sub.add_option("after", o->after, "the later recording (.edodb)")->required();
  sub.add_flag("--json", o->json, "print JSON (schema edo.diff/2)");
  return [o] { return run_diff(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("diff", "compare two recordings table by table", 30, setup);

}  // namespace edo::cli
