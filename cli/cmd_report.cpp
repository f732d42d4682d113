// `edo report`: the terminal summary of one recording (or --json for machines).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/db/recording_state.h"
#include "edo/model/drops.h"
#include "edo/model/processes.h"
#include "edo/model/profile_summary.h"
#include "edo/model/rank_view.h"
#include "edo/model/training.h"
#include "edo/model/union_view.h"
#include "edo/db/table_samples.h"
#include "edo/db/tune_store.h"
#include "edo/tuner/vocab_coverage.h"
#include "edo/text/duration.h"
#include "edo/tuner/plan_io.h"
#include "support/plan/plan_text.h"
#include "support/report/report_json.h"
#include "support/report/report_llm.h"
#include "support/report/report_ranks.h"
#include "support/report/report_union.h"
#include "support/terminal.h"
#include "support/text_width.h"

namespace edo::cli::report_command {
namespace {

struct ReportOptions {
  std::string file;
  bool json = false;
  bool wide = false;  // --wide: every line whole, whatever the terminal's width
  size_t top = 0;
};

// Columns of the text report (output_columns(): the terminal's, COLUMNS, or 100; unlimited
// with --wide), set once by run_report.
size_t g_columns = SIZE_MAX;

// A note printed wrapped to the report's width.
void print_note(const std::string& text, const char* indent = "") {
  fmt::print("{}\n", wrap_words(text, g_columns, indent));
}

std::string pct(double share) { return std::isfinite(share) ? fmt::format("{:.1f}%", 100.0 * share) : "-"; }

std::string seconds(int64_t ns) { return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9); }

std::string plural(size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

// The job `edo record` started (not whichever process connected first), then its ranks.
void print_job(const model::Profile& profile, const model::JobView& job, const std::vector<model::RankView>& rank_views,
               const db::RecordingState& rec) {
  if (profile.sessions.empty()) {
    fmt::print("job: (no process recorded){}\n", rec.whole() ? "" : ", " + rec.word());
    if (!rec.whole()) print_note("  " + terminal_safe(rec.describe()), "    ");
    return;
  }
  std::string exit = job.exit_code ? fmt::format("exit {}", *job.exit_code) : "exit unknown";
  // A recording still being written, or cut short, has no exit and no end yet: it says so, with
  // how much of the job it holds (its latest save - the job's start).
  std::string duration = seconds(job.duration_ns);
  if (!rec.whole()) {
    exit = rec.kind == db::RecordingState::Kind::kInProgress ? "recording in progress" : "incomplete, exit unknown";
    duration = seconds(std::max(job.duration_ns, rec.saved_duration_ns())) +
               (rec.kind == db::RecordingState::Kind::kInProgress ? " so far" : " recorded");
  }
  print_note("job: " + terminal_safe(job.command), "     ");
  // A merged recording (edo merge) has a root on each node: its launcher there.
  std::set<std::string> root_hosts;
  for (size_t i = 0; i < profile.sessions.size(); ++i)
    if (job.roles[i] == model::Role::kRoot) root_hosts.insert(profile.sessions[i].host);
  const bool multi_node = root_hosts.size() > 1;
  std::string where = job.pid ? fmt::format("pid {}", *job.pid) : "root process not recorded";
  if (multi_node) {
    std::string hosts;
    for (const auto& h : root_hosts) hosts += (hosts.empty() ? "" : ", ") + terminal_safe(h);
    where = fmt::format("{} nodes ({})", root_hosts.size(), hosts);
  } else if (!job.host.empty()) {
    where += " on " + terminal_safe(job.host);
  }
  fmt::print("  {}, {}, {}, {}\n", where, exit, duration, plural(job.steps, "step", "steps"));
  if (!rec.whole()) print_note("  " + terminal_safe(rec.describe()), "    ");
  if (job.root >= 0 && !multi_node) {
    const model::Session& r = profile.sessions[size_t(job.root)];
    if (r.command != job.command && !r.command.empty()) print_note("  exec'ed into: " + terminal_safe(r.command), "    ");
  }
  if (profile.sessions.size() > 1) {
    std::string parts;
    auto add = [&](size_t n, const char* one, const char* many) {
      if (n) parts += (parts.empty() ? "" : ", ") + plural(n, one, many);
    };
    const size_t roots = job.count(model::Role::kRoot);
    if (roots == 1) parts = "the root";
    if (roots > 1) parts = fmt::format("the root in {} images (exec)", roots);
    if (multi_node) parts = fmt::format("{} on {} nodes", plural(roots, "root", "roots"), root_hosts.size());
    add(job.count(model::Role::kRank), "rank", "ranks");
    add(job.count(model::Role::kWorker), "forked worker", "forked workers");
    add(job.count(model::Role::kChild), "other child", "other children");
    fmt::print("  processes: {} ({})\n", profile.sessions.size(), parts);
  }
  if (job.ranks.size() >= 2) {
    fmt::print("ranks:\n");
    for (size_t k = 0; k < job.ranks.size(); ++k) {
      const size_t i = job.ranks[k];
      const model::Session& s = profile.sessions[i];
      const model::RankView& rv = rank_views[k];
      size_t workers = 0;
      for (size_t k = 0; k < profile.sessions.size(); ++k)
        workers += job.roles[k] == model::Role::kWorker && profile.sessions[k].rank == s.rank;
      fmt::print("  rank {}{}: pid {}{}, {}, {}, {} lookups, peak {}{}{}{}\n", *s.rank,
                 s.local_rank ? fmt::format(" (local {})", *s.local_rank) : "", s.pid,
                 s.host != job.host || multi_node ? " on " + terminal_safe(s.host) : "", seconds(s.duration_ns),
                 plural(s.steps, "step", "steps"), rv.lookups, model::format_bytes(static_cast<uint64_t>(rv.peak_bytes)),
                 rv.peak_from_timeline ? "" : " (tables)", s.exit_code ? fmt::format(", exit {}", *s.exit_code) : "",
                 workers ? ", " + plural(workers, "forked worker", "forked workers") : "");
    }
  }
}

void print_memory(const model::Profile& profile, size_t ranks) {
  const int64_t peak = profile.peak_bytes();
  const model::TableMemory mem = profile.table_memory();
  const uint64_t table_bytes = mem.total_bytes();
  // A data-parallel job: each figure says whether it sums the ranks' replicas (the table list
  // below shows one rank's copy of a table every rank holds). The peak with a device timeline is
  // the largest of one process's; without, it is the tables' sum, over every rank.
  std::string peak_note = profile.memory_events.empty() ? " (no device timeline: sum of tables)" : "";
  std::string tables_note;
  if (ranks >= 2) {
    peak_note = profile.memory_events.empty() ? fmt::format(" (all {} ranks: no device timeline, sum of tables)", ranks)
                                              : " (per rank: the largest rank's)";
    tables_note = fmt::format(" (all {} ranks; the table list shows one rank's copy)", ranks);
  }
  const std::string head = fmt::format("memory: peak {}{}, tables {}{}", model::format_bytes(static_cast<uint64_t>(peak)),
                                       peak_note, model::format_bytes(table_bytes), tables_note);
  const std::string parts =
      mem.optimizer_bytes + mem.grad_bytes > 0
          ? fmt::format("= weights {} + optimizer state {} + gradients {}", model::format_bytes(mem.weight_bytes),
                        model::format_bytes(mem.optimizer_bytes), model::format_bytes(mem.grad_bytes))
          : "";
  const std::string share =
      peak > 0 && ranks < 2 ? fmt::format("({:.0f}% of peak)", 100.0 * static_cast<double>(table_bytes) / static_cast<double>(peak)) : "";
  std::string line = head;
  for (const std::string* piece : {&parts, &share}) {  // a piece that does not fit starts a line
    if (piece->empty()) continue;
    if (display_width(line) + 1 + display_width(*piece) > g_columns) {
      print_note(line, "  ");
      line = "  " + *piece;
    } else {
      line += " " + *piece;
    }
  }
  print_note(line, "  ");
  // edo's own device memory is outside the job's allocator (not in the timeline above) but the
  // job's device has that much less: said next to the job's figures.
  if (const uint64_t own = profile.edo_device_bytes())
    print_note(fmt::format("  edo's own device memory: {} (device counters and sample arenas, outside the job's allocator; "
                           "bounded by EDO_MAX_DEVICE_MB), pinned host memory {}",
                           model::format_bytes(own), model::format_bytes(profile.edo_pinned_bytes())),
               "    ");
  const std::string lift = model::lifting_settings(profile.drops());
  fmt::print("dropped events: {}{}\n", profile.dropped_events(),
             profile.dropped_events() ? " (counts are lower bounds" + (lift.empty() ? "" : "; raise " + lift) + ")" : "");
  for (const auto& [name, n] : profile.drops())
    if (n) print_note("  " + model::describe_drop(name, n), "    ");
}

// A table whose weights are another's and that read nothing itself: its reads (a tied module
// called itself) were counted with the owner, which is listed right above it.
bool counted_with_owner(const model::TableView& t) { return !t.shares_weights_of.empty() && t.summary.lookups == 0; }

// One line per table when it fits the width (always with --wide); else two: the name, shape
// and memory, then the access statistics indented under it (and the ties on a line of their
// own when they do not fit). A name longer than its column gets a line of its own above its
// numbers, abbreviated in the middle when even the width is too short for it.
void print_tables(const std::vector<model::TableView>& tables) {
  // The memory columns: BYTES alone when the tables hold only weights, else its three parts too.
  bool split = false, any_sketch = false, any_counted_with_owner = false;
  size_t longest = 5, tied_width = 0;
  std::vector<std::string> names, tieds;
  for (const auto& t : tables) {
    split |= t.optimizer_bytes + t.grad_bytes > 0;
    any_sketch |= t.summary.mode == stats::CountMode::kSketch;
    any_counted_with_owner |= counted_with_owner(t);
    names.push_back(terminal_safe(t.name));
    longest = std::max(longest, display_width(names.back()));
    std::string tied;
    for (const auto& n : t.tied_with) tied += (tied.empty() ? "" : ", ") + terminal_safe(n);
    tied_width = std::max(tied_width, display_width(tied));
    tieds.push_back(std::move(tied));
  }
  auto memory_cells = [&](const model::TableView& t) {
    const std::string weights = t.shares_weights_of.empty() ? model::format_bytes(t.weight_bytes) : "shared";
    if (!split) return fmt::format("{:>11}", weights);
    return fmt::format("{:>11} {:>11} {:>11} {:>11}", weights, model::format_bytes(t.optimizer_bytes),
                       model::format_bytes(t.grad_bytes), model::format_bytes(t.total_bytes()));
  };
  const std::string memory_heads =
      split ? fmt::format("{:>11} {:>11} {:>11} {:>11}", "WEIGHTS", "OPTIMIZER", "GRADS", "BYTES") : fmt::format("{:>11}", "BYTES");
  const std::string left_heads = fmt::format(" {:>18} {:<6} {}", "ROWS x DIM", "DTYPE", memory_heads);
  auto stats_cells = [](const std::string& lookups, const std::string& unique, const std::string& t01, const std::string& t1,
                        const std::string& t10, const std::string& zipf, const std::string& l1, const std::string& l10,
                        const std::string& l50) {
    return fmt::format("{:>11} {:>10} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7}", lookups, unique, t01, t1, t10, zipf, l1, l10, l50);
  };
  const std::string stats_heads = stats_cells("LOOKUPS", "UNIQUE", "TOP.1%", "TOP1%", "TOP10%", "ZIPF", "LRU1%", "LRU10%", "LRU50%");
  // One line: the name column (at most 40), the rest, the ties.
  size_t name_width = std::min<size_t>(longest, 40);
  const size_t one_line = name_width + display_width(left_heads) + 1 + display_width(stats_heads) + 2 +
                          std::max<size_t>(tied_width, 9);
  const bool stacked = one_line > g_columns;
  if (stacked) name_width = std::clamp<size_t>(g_columns > display_width(left_heads) ? g_columns - display_width(left_heads) : 5,
                                               5, std::min<size_t>(longest, 40));
  if (!stacked)
    fmt::print("{}{} {}  {}\n", pad_right("TABLE", name_width), left_heads, stats_heads, "TIED WITH");
  else
    fmt::print("{}{}\n  {}{}\n", pad_right("TABLE", name_width), left_heads, stats_heads,
               4 + display_width(stats_heads) + 9 <= g_columns ? "  TIED WITH" : "");
  for (size_t i = 0; i < tables.size(); ++i) {
    const auto& t = tables[i];
    const auto& s = t.summary;
    const std::string& tied = tieds[i];
    std::string name = names[i];
    if (display_width(name) > name_width) {
      fmt::print("{}\n", abbreviate_middle(name, g_columns));
      name.clear();
    }
    const std::string shape = fmt::format("{} x {}", t.rows, t.dim);
    const std::string left = fmt::format("{} {:>18} {:<6} {}", pad_right(name, name_width), shape, terminal_safe(t.dtype), memory_cells(t));
    std::string right;
    if (counted_with_owner(t)) {
      right = stats_cells("(tied)", "-", "-", "-", "-", "-", "-", "-", "-");
    } else {
      const std::string unique = fmt::format("{}{}", s.unique_rows, s.mode == stats::CountMode::kSketch ? "~" : "");
      const std::string zipf = s.zipf.valid && std::isfinite(s.zipf.alpha) ? fmt::format("{:.2f}", s.zipf.alpha) : "-";
      right = stats_cells(std::to_string(s.lookups), unique, pct(s.coverage_top_0_1pct), pct(s.coverage_top_1pct),
                          pct(s.coverage_top_10pct), zipf, pct(s.lru_hit_rate_1pct), pct(s.lru_hit_rate_10pct),
                          pct(s.lru_hit_rate_50pct));
    }
    if (!stacked) {
      fmt::print("{} {}  {}\n", left, right, tied);
      continue;
    }
    fmt::print("{}\n", left);
    const std::string second = "  " + right;
    if (tied.empty()) {
      fmt::print("{}\n", second);
    } else if (display_width(second) + 2 + display_width(tied) <= g_columns) {
      fmt::print("{}  {}\n", second, tied);
    } else {
      fmt::print("{}\n", second);
      print_note("  tied with " + tied, "    ");
    }
  }
  fmt::print("\n");
  if (split) {
    print_note("BYTES = WEIGHTS + OPTIMIZER + GRADS: the table's weights (rows x dim x element size), its optimizer state "
               "(Adam moments, Adagrad sums, ...) and its gradients. 'shared': the weights belong to the tied table named "
               "first and are counted there.");
  } else {
    print_note("BYTES: the table's weights (rows x dim x element size); no optimizer state or gradients were recorded. "
               "'shared': the weights belong to the tied table named first and are counted there.");
  }
  if (any_counted_with_owner)
    print_note("(tied): the table shares the weights of the table above it; its lookups, if any, are counted there.");
  if (stacked) print_note("Each table's access statistics are on the line under it (--wide: one line per table).");
  print_note("TOPx%: share of lookups that go to the top x% of the table's rows (at least one row). LRUx%: hit rate of an "
             "LRU cache holding x% of rows (at least one).");
  if (any_sketch) print_note("~: estimated (table above the exact-count limit: count-min sketch + top-K + HyperLogLog).");
}

void print_top(const std::vector<model::TableView>& tables, size_t top) {
  for (const auto& t : tables) {
    const std::string name = abbreviate_middle(terminal_safe(t.name), g_columns > 30 ? g_columns - 30 : 10);
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
  width = std::min<size_t>(width, std::min<size_t>(42, g_columns > 24 ? g_columns - 24 : 18));
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  fmt::print("\n{} {:>10} {:>12}\n", pad_right("KERNEL / TABLE IT READS", width), "LAUNCHES", "GPU TIME");
  for (const auto& [ns, kernel] : order) {
    fmt::print("{}\n", abbreviate_middle(terminal_safe(kernel), g_columns));
    for (const auto& [table, r] : by_kernel[kernel])
      fmt::print("{} {:>10} {:>9.3f} ms\n", pad_right("  " + abbreviate_middle(terminal_safe(table), width - 2), width), r.first,
                 static_cast<double>(r.second) / 1e6);
  }
  print_note("GPU TIME: kernel time of those launches (a launch that reads two tables counts for both).");
}

// Per table, how unevenly the ranks read it: the busiest rank against the mean.
void print_imbalance(const std::vector<model::RankView>& ranks) {
  const auto lines = imbalance_lines(model::rank_imbalance(ranks));
  if (lines.empty()) return;
  fmt::print("\nlookups per rank (the busiest rank against the mean; 1.00x is balanced):\n");
  for (const auto& l : lines) print_note("  " + l, "    ");
}

// Tables read on several ranks: the LRU of one cache serving all their lookups (a device that
// holds the table in a model-parallel job) next to each rank's own cache (the LRU columns).
void print_union_lru(const std::vector<model::TableView>& tables) {
  const auto lines = union_lru_lines(tables);
  if (lines.empty()) return;
  fmt::print("\n");
  print_note("model-parallel LRU (one cache for the lookups of every rank, as on the device holding the table; the LRU "
             "columns above are each rank with its own cache, data parallel). Estimated from the ranks' ordered samples "
             "interleaved by progress, assuming the ranks advance in lock-step:");
  for (const auto& l : lines) print_note("  " + l, "    ");
}

std::string loss_text(const model::StepLoss& l) { return fmt::format("{:.4g} (step {})", l.loss, l.step); }

// What the PyTorch hooks saw of the training: each table's optimizer and dense use where known,
// and the loss curve of each process that had one, in a line each.
void print_training(const model::Profile& profile, const std::vector<model::TableView>& tables) {
  std::vector<std::pair<std::string, std::string>> facts;
  for (const auto& t : tables) {
    if (t.optimizer_params) facts.emplace_back(t.name, terminal_safe(model::describe_optimizer(*t.optimizer_params)));
    if (!t.dense_use.empty()) facts.emplace_back(t.name, "read whole: " + terminal_safe(t.dense_use));
  }
  std::vector<const model::Session*> with_losses;
  for (const auto& s : profile.sessions)
    if (!s.losses.empty()) with_losses.push_back(&s);
  if (facts.empty() && with_losses.empty()) return;
  fmt::print("\ntraining (what the PyTorch hooks saw):\n");
  for (const auto& [name, text] : facts) print_note("  " + terminal_safe(name) + ": " + text, "    ");
  for (const model::Session* s : with_losses) {
    const model::LossSummary l = model::summarize_losses(s->losses);
    std::string who = with_losses.size() > 1 ? fmt::format(" (pid {}{})", s->pid, s->rank ? fmt::format(", rank {}", *s->rank) : "") : "";
    std::string line = fmt::format("  loss{}: {} from {} to {}, final {:.4g} (mean of the last {})", who,
                                   plural(l.count, "step", "steps"), loss_text(*l.first), loss_text(*l.last), l.final_loss,
                                   l.final_count);
    if (l.first_nonfinite) line += fmt::format("; first non-finite: step {} ({})", l.first_nonfinite->step, l.first_nonfinite->loss);
    print_note(line, "    ");
  }
}

void print_text(const model::Profile& profile, const std::vector<model::TableView>& tables,
                const std::vector<model::RankView>& ranks, size_t top) {
  print_job(profile, model::job_view(profile), ranks, db::recording_state(profile));
  print_memory(profile, model::job_view(profile).ranks.size());
  if (tables.empty()) {
    fmt::print("no embedding tables recorded\n");
    return;
  }
  print_tables(tables);
  if (const LlmText llm = llm_text(profile, tables); !llm.table.empty()) {
    fmt::print("\nlanguage model (what the PyTorch hooks saw):\n");
    for (const auto& l : llm.table) fmt::print("{}\n", l);
    for (const auto& l : llm.notes) print_note(l, "    ");
  }
  print_training(profile, tables);
  print_imbalance(ranks);
  print_union_lru(tables);
  print_kernel_tables(profile);
  if (top > 0) print_top(tables, top);
}

int run_report(const ReportOptions& o) {
  db::ProfileStore store(o.file, db::ProfileStore::Mode::kReadOnly);
  model::Profile profile = store.load_for_viewing();  // the ordered samples only for the union LRU
  // Token tables' vocabulary coverage is fitted on their recorded order (support/report/report_vocab.h).
  db::load_ordered_samples(store, profile, [&](const model::Table& t) { return tuner::is_token_table(profile, t.name); });
  std::vector<std::string> view_of_table;
  auto tables = model::table_views(profile, {}, &view_of_table);
  model::add_union_lru(profile, tables, view_of_table);  // tables read on several ranks: both LRU curves
  const auto ranks = model::rank_views(profile, model::job_view(profile), view_of_table);
  // The latest plan of `edo tune` that fits (a failed run never hides it), and every run.
  const std::optional<model::TuneResult> plan = db::load_latest_good_tune_result(store);
  const auto runs = db::list_tune_runs(store);
  if (o.json) {
    // Names are exact; bytes that are not UTF-8 (a damaged file) become U+FFFD: JSON is text.
    auto j = report_json(profile, tables, o.top);
    // Whether the recording is whole: "complete", "in_progress" (edo record still writes it) or
    // "incomplete" (cut short); the job's duration is then what the file holds of it.
    const db::RecordingState rec = db::recording_state(profile);
    const char* state = rec.kind == db::RecordingState::Kind::kComplete     ? "complete"
                        : rec.kind == db::RecordingState::Kind::kInProgress ? "in_progress"
                                                                           : "incomplete";
    j["job"]["recording"] = state;
    // A data-parallel job: which figures sum every rank's replica (the tables list one copy).
    if (const size_t nranks = model::job_view(profile).ranks.size(); nranks >= 2) {
      j["memory"]["peak_scope"] = profile.memory_events.empty() ? "all_ranks" : "largest_rank";
      j["memory"]["table_bytes_scope"] = "all_ranks";
      j["memory"]["ranks"] = nranks;
    }
    if (!rec.whole()) {
      const double saved_s = static_cast<double>(rec.saved_duration_ns()) / 1e9;
      if (j["job"]["duration_s"].get<double>() < saved_s) j["job"]["duration_s"] = saved_s;
      j["job"]["recording_note"] = rec.describe();
      // A save that failed (issue 30 §5): why, and how much the file holds of what edo received.
      if (!rec.save_error.empty())
        j["job"]["recording_loss"] = {{"reason", rec.save_error},
                                      {"held_s", static_cast<double>(rec.saved_duration_ns()) / 1e9},
                                      {"received_s", static_cast<double>(rec.received_duration_ns()) / 1e9},
                                      {"held_lookups", rec.held_lookups},
                                      {"received_lookups", std::max(rec.received_lookups, rec.held_lookups)}};
    }
    j["ranks"] = ranks_json(ranks);
    j["plan"] = plan ? tuner::plan_to_json(*plan) : nlohmann::ordered_json(nullptr);
    j["plan_run"] = plan ? nlohmann::ordered_json(plan->run_id) : nlohmann::ordered_json(nullptr);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& t : runs)
      list.push_back({{"run", t.run_id}, {"created_unix", t.created_unix}, {"backend", t.backend}, {"objective", model::to_string(t.objective)},
                      {"timing", {{"kind", model::to_string(t.timing_kind)}, {"device", t.timing_device}}},
                      {"budget_bytes", t.budget_bytes}, {"devices", t.devices}, {"feasible", t.feasible}, {"complete", t.complete},
                      {"stop_reason", t.stop_reason == model::StopReason::kNone ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(model::to_string(t.stop_reason))},
                      {"plan_device_bytes", t.feasible ? nlohmann::ordered_json(t.plan_device_bytes) : nlohmann::ordered_json(nullptr)}});
    j["tune_runs"] = list;
    std::puts(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  } else {
    g_columns = output_columns(o.wide);
    print_text(profile, tables, ranks, o.top);
    if (!runs.empty()) {
      fmt::print("\ntune runs ('edo export --run N' exports one; without it the latest with a plan):\n");
      for (const auto& t : runs)
        fmt::print("  run {}: budget {}, {}{}: {}{}\n", t.run_id,
                   model::format_bytes(t.budget_bytes) +
                       (t.devices > 1 ? fmt::format(" per device on {} devices", t.devices) : std::string()),
                   model::to_string(t.objective),
                   t.timing_kind == model::RunTiming::kModelled ? ", times modelled for " + terminal_safe(t.timing_device) : std::string(),
                   t.feasible ? fmt::format("plan {} device, {} per step", model::format_bytes(t.plan_device_bytes),
                                            edo::format_duration_us(t.plan_step_us))
                              : std::string("no plan fits"),
                   t.complete ? "" : fmt::format(" (stopped: {})", model::to_string(t.stop_reason)));
    }
    // The plan keeps its own layout (its table is aligned by plan_text, and its notes are
    // quoted by tests and users as they are).
    if (plan) fmt::print("\nplan (edo tune, run {}):\n{}", plan->run_id, plan_text(*plan));
  }
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<ReportOptions>();
  sub.footer(
      "The header shows the job 'edo record' started (command, exit code, duration), then its ranks when there are\n"
      "several. A recording still being written (.NAME.edo-recording-PID beside its output until the job ends) says\n"
      "'recording in progress', one whose edo record died before its final save 'incomplete', each with the time it\n"
      "holds (--json: job.recording is complete, in_progress or incomplete). With several ranks, the memory line says\n"
      "which figures sum every rank's replica and which are per rank. Tables are sorted by memory. One table read by\n"
      "several processes (ranks, forked workers) is one row; a table forked workers inherited is counted once.\n"
      "Different tables under one name are named by rank (or pid).\n"
      "Memory has one definition: total_bytes = weight_bytes + optimizer_bytes + grad_bytes (a table tied to another\n"
      "shares its weights: they are counted once, with that table). Names are printed with control characters escaped\n"
      "(\\n, \\t, \\x1b); --json keeps them exact.\n"
      "--json prints a stable shape (schema edo.report/2; keys may be added, none renamed):\n"
      "  {\"schema\",\"job\",\"session\",\"sessions\",\"memory\":{\"peak_bytes\",\"table_bytes\",\"weight_bytes\",\"optimizer_bytes\",\n"
      "   \"grad_bytes\"},\"tables\":[{\"name\",\"table_name\",\"rows\",\"dim\",\"dtype\",\"device\",\"weight_bytes\",\n"
      "   \"optimizer_bytes\",\"grad_bytes\",\"total_bytes\",\"ranks\",\"lookups\",\"unique_rows\",\"counts\",\"zipf_alpha\",\n"
      "   \"coverage\",\"lru_hit_rate\",\"lru_union\",\"tied_with\",\"optimizer_params\",\"dense_use\"}],\"dropped_events\",\n"
      "   \"drops\":{COUNTER: N},\n"
      "   \"plan\",\"ranks\":[{\"rank\",\"world_size\",\"node\",\"pid\",\"lookups_by_table\":{TABLE: N},\"peak_bytes\",\"steps\",\n"
      "   \"duration_s\",...}]}\n"
      "  (drops: every loss by name, docs/losses.md; each session carries its own, and \"losses\": its training loss\n"
      "  {\"steps_with_loss\",\"first\",\"last\",\"final\",\"first_nonfinite_step\"} or null; non-finite losses are\n"
      "  \"nan\", \"inf\", \"-inf\". \"optimizer_params\": the job's optimizer for a table, {\"kind\",\"lr\",\"eps\",\n"
      "  \"weight_decay\",\"betas\",\"momentum\",\"initial_accumulator_value\",\"maximize\"} or null; \"dense_use\": what\n"
      "  read the table's weight whole, or null)\n"
      "A table read on several ranks also has the LRU curve of one cache for all their lookups (model parallel,\n"
      "\"lru_union\"; estimated from the ranks' ordered samples, ranks assumed in lock-step; docs/multi-node.md).\n"
      "A recording 'edo tune' ran on also shows its latest plan (savings, step time change, each table's choice and\n"
      "why); \"plan\" is that edo.plan/1 object, or null.\n\n"
      "Example:\n  edo report run.edodb --top 10");
  sub.add_option("file", o->file, "an .edodb file from 'edo record', 'edo import' or 'edo synth'")->required();
  sub.add_flag("--json", o->json, "print JSON instead of text");
  sub.add_flag("--wide", o->wide,
               "one line per table and nothing wrapped, whatever the terminal's width (the text report otherwise fits "
               "COLUMNS, the terminal, or 100 columns when stdout is not one)");
  sub.add_option("--top", o->top, "also list the N most-read rows of each table (exact counts, or top-K estimates)")
      ->type_name("N")
      ->check(CLI::Range(size_t{0}, size_t{1} << 32).description(""));
  return [o] { return run_report(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("report", "summarise a recording: memory, lookups, skew, cache hit rates per table", 20, setup);

}  // namespace edo::cli::report_command
