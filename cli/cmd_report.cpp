// `edo report`: the terminal summary of one recording (or --json for machines).
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/model/profile_summary.h"
#include "support/report_json.h"

namespace edo::cli {
namespace {

struct ReportOptions {
  std::string file;
  bool json = false;
  size_t top = 0;
};

std::string pct(double share) { return fmt::format("{:.1f}%", 100.0 * share); }

std::string shorten(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return "…" + s.substr(s.size() - (width - 1));
}

void print_text(const model::Profile& profile, const std::vector<model::TableView>& tables, size_t top) {
  if (!profile.sessions.empty()) {
    const model::Session& s = profile.sessions.front();
    std::string exit = s.exit_code ? fmt::format("exit {}", *s.exit_code) : "exit unknown";
    fmt::print("session: {}\n  {} pid {} on {}, {:.1f} s, {}, {} steps{}\n", s.command, s.source, s.pid, s.host,
               static_cast<double>(s.duration_ns) / 1e9, exit, s.steps,
               profile.sessions.size() > 1 ? fmt::format(" (+{} more processes)", profile.sessions.size() - 1) : "");
  }
  const int64_t peak = profile.peak_bytes();
  const model::TableMemory mem = profile.table_memory();
  const uint64_t table_bytes = mem.total_bytes();
  fmt::print("memory: peak {}{}, tables {}{}{}\n", model::format_bytes(static_cast<uint64_t>(peak)),
             profile.memory_events.empty() ? " (no device timeline: sum of tables)" : "",
             model::format_bytes(table_bytes),
             mem.optimizer_bytes + mem.grad_bytes > 0
                 ? fmt::format(" = weights {} + optimizer state {} + gradients {}", model::format_bytes(mem.weight_bytes),
                               model::format_bytes(mem.optimizer_bytes), model::format_bytes(mem.grad_bytes))
                 : "",
             peak > 0 ? fmt::format(" ({:.0f}% of peak)", 100.0 * static_cast<double>(table_bytes) / static_cast<double>(peak)) : "");
  fmt::print("dropped events: {}{}\n\n", profile.dropped_events(),
             profile.dropped_events() ? " (the tracer's buffers were full: counts are lower bounds)" : "");
  if (tables.empty()) {
    fmt::print("no embedding tables recorded\n");
    return;
  }
  // The memory columns: BYTES alone when the tables hold only weights, else its three parts too.
  bool split = false;
  for (const auto& t : tables) split |= t.optimizer_bytes + t.grad_bytes > 0;
  auto memory_cells = [&](const model::TableView& t) {
    const bool shared = !t.shares_weights_of.empty();
    const std::string weights = shared ? "shared" : model::format_bytes(t.weight_bytes);
    if (!split) return fmt::format("{:>11}", weights);
    return fmt::format("{:>11} {:>11} {:>11} {:>11}", weights, model::format_bytes(t.optimizer_bytes),
                       model::format_bytes(t.grad_bytes), model::format_bytes(t.total_bytes()));
  };
  const std::string memory_heads =
      split ? fmt::format("{:>11} {:>11} {:>11} {:>11}", "WEIGHTS", "OPTIMIZER", "GRADS", "BYTES") : fmt::format("{:>11}", "BYTES");
  fmt::print("{:<32} {:>18} {:<6} {} {:>12} {:>11} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7}  {}\n", "TABLE",
             "ROWS x DIM", "DTYPE", memory_heads, "LOOKUPS", "UNIQUE", "TOP.1%", "TOP1%", "TOP10%", "ZIPF", "LRU1%",
             "LRU10%", "LRU50%", "TIED WITH");
  for (const auto& t : tables) {
    const auto& s = t.summary;
    std::string unique = fmt::format("{}{}", s.unique_rows, s.mode == stats::CountMode::kSketch ? "~" : "");
    std::string zipf = s.zipf.valid ? fmt::format("{:.2f}", s.zipf.alpha) : "-";
    std::string tied;
    for (const auto& n : t.tied_with) tied += (tied.empty() ? "" : ", ") + n;
    fmt::print("{:<32} {:>18} {:<6} {} {:>12} {:>11} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7}  {}\n",
               shorten(t.name, 32), fmt::format("{} x {}", t.rows, t.dim), t.dtype, memory_cells(t),
               s.lookups, unique, pct(s.coverage_top_0_1pct), pct(s.coverage_top_1pct), pct(s.coverage_top_10pct), zipf,
               pct(s.lru_hit_rate_1pct), pct(s.lru_hit_rate_10pct), pct(s.lru_hit_rate_50pct), tied);
  }
  bool any_sketch = false;
  for (const auto& t : tables) any_sketch |= t.summary.mode == stats::CountMode::kSketch;
  if (split) {
    fmt::print("\nBYTES = WEIGHTS + OPTIMIZER + GRADS: the table's weights (rows x dim x element size), its optimizer state\n"
               "(Adam moments, Adagrad sums, ...) and its gradients. 'shared': the weights belong to the tied table named\n"
               "first and are counted there.\n");
  } else {
    fmt::print("\nBYTES: the table's weights (rows x dim x element size); no optimizer state or gradients were recorded.\n"
               "'shared': the weights belong to the tied table named first and are counted there.\n");
  }
  fmt::print("TOPx%: share of lookups that go to the top x% of the table's rows (at least one row). LRUx%: hit rate of an LRU cache holding x% of rows (at least one).\n");
  if (any_sketch) fmt::print("~: estimated (table above the exact-count limit: count-min sketch + top-K + HyperLogLog).\n");
  if (top > 0) {
    for (const auto& t : tables) {
      fmt::print("\n{}: top {} rows\n", t.name, top);
      for (const auto& [row, count] : t.aggregate.top_rows(top)) fmt::print("  row {:>12}  {:>12} reads\n", row, count);
    }
  }
}

int run_report(const ReportOptions& o) {
  db::ProfileStore store(o.file, db::ProfileStore::Mode::kReadOnly);
  model::Profile profile = store.load();
  auto tables = model::table_views(profile);
  if (o.json) {
    std::puts(report_json(profile, tables, o.top).dump(2).c_str());
  } else {
    print_text(profile, tables, o.top);
  }
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<ReportOptions>();
  sub.footer(
      "Tables are sorted by memory. Tables recorded by several processes (ranks, workers) under one name are merged.\n"
      "Memory has one definition: total_bytes = weight_bytes + optimizer_bytes + grad_bytes (a table tied to another\n"
      "shares its weights: they are counted once, with that table).\n"
      "--json prints a stable shape (schema edo.report/2; keys may be added, none renamed):\n"
      "  {\"schema\",\"session\",\"sessions\",\"memory\":{\"peak_bytes\",\"table_bytes\",\"weight_bytes\",\"optimizer_bytes\",\n"
      "   \"grad_bytes\"},\"tables\":[{\"name\",\"rows\",\"dim\",\"dtype\",\"device\",\"weight_bytes\",\"optimizer_bytes\",\n"
      "   \"grad_bytes\",\"total_bytes\",\"lookups\",\"unique_rows\",\"counts\",\"zipf_alpha\",\"coverage\",\"lru_hit_rate\",\n"
      "   \"tied_with\"}],\"dropped_events\"}\n\n"
      "Example:\n  edo report run.edodb --top 10");
  sub.add_option("file", o->file, "an .edodb file from 'edo record', 'edo import' or 'edo synth'")->required();
  sub.add_flag("--json", o->json, "print JSON instead of text");
  sub.add_option("--top", o->top, "also list the N most-read rows of each table (exact counts, or top-K estimates)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 32));
  return [o] { return run_report(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("report", "summarise a recording: memory, lookups, skew, cache hit rates per table", 20, setup);

}  // namespace edo::cli
