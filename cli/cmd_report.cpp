// `edo report`: the terminal summary of one recording (or --json for machines).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/model/drops.h"
#include "edo/model/processes.h"
#include "edo/model/profile_summary.h"
#include "edo/db/tune_store.h"
#include "edo/tuner/plan_io.h"
#include "support/plan_text.h"
#include "support/report_json.h"
#include "support/terminal.h"

namespace edo::cli {
namespace {

struct ReportOptions {
  std::string file;
  bool json = false;
  size_t top = 0;
};

std::string pct(double share) { return std::isfinite(share) ? fmt::format("{:.1f}%", 100.0 * share) : "-"; }

std::string seconds(int64_t ns) { return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9); }

std::string plural(size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

// The job `edo record` started (not whichever process connected first), then its ranks.
void print_job(const model::Profile& profile, const model::JobView& job) {
  if (profile.sessions.empty()) {
    fmt::print("job: (no process recorded)\n");
    return;
  }
  const std::string exit = job.exit_code ? fmt::format("exit {}", *job.exit_code) : "exit unknown";
  fmt::print("job: {}\n", terminal_safe(job.command));
  std::string where = job.pid ? fmt::format("pid {}", *job.pid) : "root process not recorded";
  if (!job.host.empty()) where += " on " + terminal_safe(job.host);
  fmt::print("  {}, {}, {}, {}\n", where, exit, seconds(job.duration_ns), plural(job.steps, "step", "steps"));
  if (job.root >= 0) {
    const model::Session& r = profile.sessions[size_t(job.root)];
    if (r.command != job.command && !r.command.empty()) fmt::print("  exec'ed into: {}\n", terminal_safe(r.command));
  }
  if (profile.sessions.size() > 1) {
    std::string parts;
    auto add = [&](size_t n, const char* one, const char* many) {
      if (n) parts += (parts.empty() ? "" : ", ") + plural(n, one, many);
    };
    const size_t roots = job.count(model::Role::kRoot);
    if (roots == 1) parts = "the root";
    if (roots > 1) parts = fmt::format("the root in {} images (exec)", roots);
    add(job.count(model::Role::kRank), "rank", "ranks");
    add(job.count(model::Role::kWorker), "forked worker", "forked workers");
    add(job.count(model::Role::kChild), "other child", "other children");
    fmt::print("  processes: {} ({})\n", profile.sessions.size(), parts);
  }
  if (job.ranks.size() >= 2) {
    fmt::print("ranks:\n");
    for (size_t i : job.ranks) {
      const model::Session& s = profile.sessions[i];
      size_t workers = 0;
      for (size_t k = 0; k < profile.sessions.size(); ++k)
        workers += job.roles[k] == model::Role::kWorker && profile.sessions[k].rank == s.rank;
      fmt::print("  rank {}{}: pid {}{}, {}, {}{}{}\n", *s.rank,
                 s.local_rank ? fmt::format(" (local {})", *s.local_rank) : "", s.pid,
                 s.host != job.host ? " on " + terminal_safe(s.host) : "", seconds(s.duration_ns),
                 plural(s.steps, "step", "steps"), s.exit_code ? fmt::format(", exit {}", *s.exit_code) : "",
                 workers ? ", " + plural(workers, "forked worker", "forked workers") : "");
    }
  }
}

void print_memory(const model::Profile& profile) {
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
  // edo's own device memory is outside the job's allocator (not in the timeline above) but the
  // job's device has that much less: said next to the job's figures.
  if (const uint64_t own = profile.edo_device_bytes())
    fmt::print("  edo's own device memory: {} (device counters and sample arenas, outside the job's allocator; "
               "bounded by EDO_MAX_DEVICE_MB), pinned host memory {}\n",
               model::format_bytes(own), model::format_bytes(profile.edo_pinned_bytes()));
  fmt::print("dropped events: {}{}\n", profile.dropped_events(),
             profile.dropped_events() ? " (the tracer's buffers were full: counts are lower bounds)" : "");
  for (const auto& [name, n] : profile.drops())
    if (n) fmt::print("  {}\n", model::describe_drop(name, n));
}

// A table whose weights are another's and that read nothing itself: its reads (a tied module
// called itself) were counted with the owner, which is listed right above it.
bool counted_with_owner(const model::TableView& t) { return !t.shares_weights_of.empty() && t.summary.lookups == 0; }

void print_tables(const std::vector<model::TableView>& tables) {
  // The memory columns: BYTES alone when the tables hold only weights, else its three parts too.
  bool split = false, any_sketch = false, any_counted_with_owner = false;
  size_t name_width = 5;
  std::vector<std::string> names;
  for (const auto& t : tables) {
    split |= t.optimizer_bytes + t.grad_bytes > 0;
    any_sketch |= t.summary.mode == stats::CountMode::kSketch;
    any_counted_with_owner |= counted_with_owner(t);
    names.push_back(terminal_safe(t.name));
    name_width = std::max(name_width, display_width(names.back()));
  }
  // Names are never cut: one longer than the column gets a line of its own above its numbers.
  name_width = std::min<size_t>(name_width, 40);
  auto memory_cells = [&](const model::TableView& t) {
    const std::string weights = t.shares_weights_of.empty() ? model::format_bytes(t.weight_bytes) : "shared";
    if (!split) return fmt::format("{:>11}", weights);
    return fmt::format("{:>11} {:>11} {:>11} {:>11}", weights, model::format_bytes(t.optimizer_bytes),
                       model::format_bytes(t.grad_bytes), model::format_bytes(t.total_bytes()));
  };
  const std::string memory_heads =
      split ? fmt::format("{:>11} {:>11} {:>11} {:>11}", "WEIGHTS", "OPTIMIZER", "GRADS", "BYTES") : fmt::format("{:>11}", "BYTES");
  fmt::print("{} {:>18} {:<6} {} {:>12} {:>11} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7}  {}\n", pad_right("TABLE", name_width),
             "ROWS x DIM", "DTYPE", memory_heads, "LOOKUPS", "UNIQUE", "TOP.1%", "TOP1%", "TOP10%", "ZIPF", "LRU1%",
             "LRU10%", "LRU50%", "TIED WITH");
  for (size_t i = 0; i < tables.size(); ++i) {
    const auto& t = tables[i];
    const auto& s = t.summary;
    std::string tied;
    for (const auto& n : t.tied_with) tied += (tied.empty() ? "" : ", ") + terminal_safe(n);
    std::string name = names[i];
    if (display_width(name) > name_width) {
      fmt::print("{}\n", name);
      name.clear();
    }
    const std::string shape = fmt::format("{} x {}", t.rows, t.dim);
    if (counted_with_owner(t)) {
      fmt::print("{} {:>18} {:<6} {} {:>12} {:>11} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7}  {}\n", pad_right(name, name_width),
                 shape, terminal_safe(t.dtype), memory_cells(t), "(tied)", "-", "-", "-", "-", "-", "-", "-", "-", tied);
      continue;
    }
    const std::string unique = fmt::format("{}{}", s.unique_rows, s.mode == stats::CountMode::kSketch ? "~" : "");
    const std::string zipf = s.zipf.valid && std::isfinite(s.zipf.alpha) ? fmt::format("{:.2f}", s.zipf.alpha) : "-";
    fmt::print("{} {:>18} {:<6} {} {:>12} {:>11} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7}  {}\n", pad_right(name, name_width),
               shape, terminal_safe(t.dtype), memory_cells(t), s.lookups, unique, pct(s.coverage_top_0_1pct),
               pct(s.coverage_top_1pct), pct(s.coverage_top_10pct), zipf, pct(s.lru_hit_rate_1pct),
               pct(s.lru_hit_rate_10pct), pct(s.lru_hit_rate_50pct), tied);
  }
  if (split) {
    fmt::print("\nBYTES = WEIGHTS + OPTIMIZER + GRADS: the table's weights (rows x dim x element size), its optimizer state\n"
               "(Adam moments, Adagrad sums, ...) and its gradients. 'shared': the weights belong to the tied table named\n"
               "first and are counted there.\n");
  } else {
    fmt::print("\nBYTES: the table's weights (rows x dim x element size); no optimizer state or gradients were recorded.\n"
               "'shared': the weights belong to the tied table named first and are counted there.\n");
  }
  if (any_counted_with_owner)
    fmt::print("(tied): the table shares the weights of the table above it; its lookups, if any, are counted there.\n");
  fmt::print("TOPx%: share of lookups that go to the top x% of the table's rows (at least one row). LRUx%: hit rate of an LRU cache holding x% of rows (at least one).\n");
  if (any_sketch) fmt::print("~: estimated (table above the exact-count limit: count-min sketch + top-K + HyperLogLog).\n");
}

void print_top(const std::vector<model::TableView>& tables, size_t top) {
  for (const auto& t : tables) {
    const std::string name = terminal_safe(t.name);
    if (counted_with_owner(t)) {
      fmt::print("\n{}: reads counted in {} (shared weights)\n", name, terminal_safe(t.shares_weights_of));
      continue;
    }
    const auto rows = t.aggregate.top_rows(top);
    if (rows.empty()) {
      fmt::print("\n{}: no reads recorded\n", name);
      continue;
    }
    fmt::print("\n{}: top {} rows{}\n", name, rows.size(),
               t.summary.mode == stats::CountMode::kSketch ? " (estimated counts)" : "");
    for (const auto& [row, count] : rows) fmt::print("  row {:>12}  {:>12} reads\n", row, count);
  }
}

// Kernels whose pointer arguments point into a table: launches and GPU time per (kernel,
// table), summed over the sessions; kernels with the most such GPU time first.
void print_kernel_tables(const model::Profile& profile) {
  std::map<std::string, std::map<std::string, std::pair<uint64_t, uint64_t>>> by_kernel;
  for (const auto& k : profile.kernels)
    for (const auto& t : k.per_table) {
      auto& r = by_kernel[k.name][t.table];
      r.first += t.launches;
      r.second += t.total_ns;
    }
  if (by_kernel.empty()) return;
  std::vector<std::pair<uint64_t, std::string>> order;
  size_t width = 5;
  for (const auto& [kernel, tables] : by_kernel) {
    uint64_t ns = 0;
    for (const auto& [table, r] : tables) {
      ns = std::max(ns, r.second);
      width = std::max(width, display_width(terminal_safe(table)) + 2);
    }
    order.emplace_back(ns, kernel);
  }
  width = std::min<size_t>(width, 42);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  fmt::print("\n{} {:>10} {:>12}\n", pad_right("KERNEL / TABLE IT READS", width), "LAUNCHES", "GPU TIME");
  for (const auto& [ns, kernel] : order) {
    fmt::print("{}\n", terminal_safe(kernel));
    for (const auto& [table, r] : by_kernel[kernel])
      fmt::print("{} {:>10} {:>9.3f} ms\n", pad_right("  " + terminal_safe(table), width), r.first,
                 static_cast<double>(r.second) / 1e6);
  }
  fmt::print("GPU TIME: kernel time of those launches (a launch that reads two tables counts for both).\n");
}

void print_text(const model::Profile& profile, const std::vector<model::TableView>& tables, size_t top) {
  print_job(profile, model::job_view(profile));
  print_memory(profile);
  if (tables.empty()) {
    fmt::print("no embedding tables recorded\n");
    return;
  }
  print_tables(tables);
  print_kernel_tables(profile);
  if (top > 0) print_top(tables, top);
}

int run_report(const ReportOptions& o) {
  db::ProfileStore store(o.file, db::ProfileStore::Mode::kReadOnly);
  model::Profile profile = store.load();
  auto tables = model::table_views(profile);
  // The latest plan of `edo tune`, when the recording was tuned.
  const std::optional<model::TuneResult> plan = db::load_latest_tune_result(store);
  if (o.json) {
    // Names are exact; bytes that are not UTF-8 (a damaged file) become U+FFFD: JSON is text.
    auto j = report_json(profile, tables, o.top);
    j["plan"] = plan ? tuner::plan_to_json(*plan) : nlohmann::ordered_json(nullptr);
    std::puts(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  } else {
    print_text(profile, tables, o.top);
    if (plan) fmt::print("\nplan (edo tune, run {}):\n{}", plan->run_id, plan_text(*plan));
  }
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<ReportOptions>();
  sub.footer(
      "The header shows the job 'edo record' started (command, exit code, duration), then its ranks when there are\n"
      "several. Tables are sorted by memory. One table read by several processes (ranks, forked workers) is one row;\n"
      "a table forked workers inherited is counted once. Different tables under one name are named by rank (or pid).\n"
      "Memory has one definition: total_bytes = weight_bytes + optimizer_bytes + grad_bytes (a table tied to another\n"
      "shares its weights: they are counted once, with that table). Names are printed with control characters escaped\n"
      "(\\n, \\t, \\x1b); --json keeps them exact.\n"
      "--json prints a stable shape (schema edo.report/2; keys may be added, none renamed):\n"
      "  {\"schema\",\"job\",\"session\",\"sessions\",\"memory\":{\"peak_bytes\",\"table_bytes\",\"weight_bytes\",\"optimizer_bytes\",\n"
      "   \"grad_bytes\"},\"tables\":[{\"name\",\"table_name\",\"rows\",\"dim\",\"dtype\",\"device\",\"weight_bytes\",\n"
      "   \"optimizer_bytes\",\"grad_bytes\",\"total_bytes\",\"ranks\",\"lookups\",\"unique_rows\",\"counts\",\"zipf_alpha\",\n"
      "   \"coverage\",\"lru_hit_rate\",\"tied_with\"}],\"dropped_events\",\"drops\":{COUNTER: N},\"plan\"}\n"
      "  (drops: every loss by name, docs/losses.md; each session carries its own)\n"
      "A recording 'edo tune' ran on also shows its latest plan (savings, step time change, each table's choice and\n"
      "why); \"plan\" is that edo.plan/1 object, or null.\n\n"
      "Example:\n  edo report run.edodb --top 10");
  sub.add_option("file", o->file, "an .edodb file from 'edo record', 'edo import' or 'edo synth'")->required();
  sub.add_flag("--json", o->json, "print JSON instead of text");
  sub.add_option("--top", o->top, "also list the N most-read rows of each table (exact counts, or top-K estimates)")
      ->type_name("N")
      ->check(CLI::Range(size_t{0}, size_t{1} << 32).description(""));
  return [o] { return run_report(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("report", "summarise a recording: memory, lookups, skew, cache hit rates per table", 20, setup);

}  // namespace edo::cli
