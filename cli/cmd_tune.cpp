// `edo tune`: measure every memory-saving strategy for every table of a recording on this
// machine's GPU (or CPU) with the job's own access pattern, and recommend a per-table plan
// under a device-memory budget. Everything measured is stored in the recording's database.
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/db/recording_state.h"
#include "edo/db/tune_store.h"
#include "edo/db/weight_store.h"
#include "edo/tuner/device_profile.h"
#include "edo/tuner/plan_io.h"
#include "edo/text/size.h"
#include "edo/tuner/summary.h"
#include "edo/tuner/tuner.h"
#include "support/plan/plan_text.h"
#include "support/terminal.h"

namespace edo::cli::tune_command {
namespace {

// Without --time-limit, measuring stops after five minutes: the candidates most plans are made
// of (every table's baseline, then the cheap formats, then one offload size) come first, so
// a limit cuts the long tail of fitted formats on large recordings, not the plan.
constexpr double kDefaultTimeLimitS = 300;

struct TuneCliOptions {
  std::string file;
  std::string budget;
  std::string host_budget, ssd_budget;  // "" : no limit
  std::string max_error;
  std::string backend = "auto";
  std::string target_device;
  std::string tables = "*";
  std::string strategies;
  std::string objective = "least-change";
  double time_limit = kDefaultTimeLimitS;
  uint64_t seed = 42;
  int threads = 0;
  int reps = 5;
  std::string measure_bytes;
  std::string devices = "1";
  bool every_table = false;
  bool allow_unvalidated = false;
  bool fine_tune = false;
  bool json = false;
};

std::atomic<bool> g_cancel{false};

// The first Ctrl-C asks the tuner to stop after the candidate it is measuring (what was
// measured is kept and planned); a second one quits at once.
void on_interrupt(int) {
  if (g_cancel.exchange(true)) {
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
    return;
  }
  const char msg[] = "\nedo tune: stopping after the current candidate (Ctrl-C again to quit now)\n";
  ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)n;
}

std::string clock_text(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return "--:--";
  const auto t = static_cast<long>(std::llround(s));
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

// One line redrawn in place on a terminal; nothing at all when stderr is not a terminal.
class ProgressBar {
 public:
  ProgressBar() : tty_(isatty(STDERR_FILENO) == 1) {}
  void draw(const tuner::TuneProgress& p) {
    if (!tty_ || p.total == 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && p.done < p.total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    const int width = 24;
    const int filled = static_cast<int>(width * static_cast<double>(p.done) / static_cast<double>(p.total));
    std::string what = terminal_safe(p.table);
    if (what.size() > 32) what = "..." + what.substr(what.size() - 29);
    std::fprintf(stderr, "\redo tune: [%s%s] %llu/%llu candidates, %s elapsed, ~%s left  %s\033[K",
                 std::string(static_cast<size_t>(filled), '#').c_str(), std::string(static_cast<size_t>(width - filled), '.').c_str(),
                 static_cast<unsigned long long>(p.done), static_cast<unsigned long long>(p.total), clock_text(p.elapsed_s).c_str(),
                 clock_text(p.remaining_s).c_str(), what.c_str());
    std::fflush(stderr);
  }
  void finish() {
    if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// --max-error: a number >= 0, or "inf"/"none" for no limit.
double parse_max_error(const std::string& text) {
  if (text == "inf" || text == "none") return std::numeric_limits<double>::infinity();
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v >= 0) || !std::isfinite(v))
    throw UsageError("--max-error '" + text + "' is not a number >= 0 or 'inf' (e.g. --max-error 0.05)");
  return v;
}

// --devices: a whole number >= 1 (at most 65536: more devices than any job shards over).
uint32_t parse_devices(const std::string& text) {
  size_t used = 0;
  unsigned long long v = 0;
  try {
    if (!text.empty() && text[0] != '-' && text[0] != '+') v = std::stoull(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < 1 || v > 65536)
    throw UsageError("--devices '" + text + "' is not a whole number of devices from 1 to 65536 (e.g. --devices 4)");
  return static_cast<uint32_t>(v);
}

// The tuner's options from the command line's: sizes, the error limit, devices and the target
// device checked here (a bad one is a usage error, exit 2, before the recording is opened).
tuner::TuneOptions tune_options(const TuneCliOptions& o) {
  tuner::TuneOptions t;
  try {
    t.budget_bytes = edo::parse_size(o.budget);
    if (!o.measure_bytes.empty()) t.measure_bytes = edo::parse_size(o.measure_bytes);
    if (!o.host_budget.empty()) t.host_budget_bytes = edo::parse_size(o.host_budget);
    if (!o.ssd_budget.empty()) t.ssd_budget_bytes = edo::parse_size(o.ssd_budget);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (!o.max_error.empty()) t.max_error = parse_max_error(o.max_error);
  t.devices = parse_devices(o.devices);
  t.backend = o.backend;
  if (!o.target_device.empty()) {
    // Checked before the recording is opened: a name that is no stored device is a usage error.
    try {
      (void)tuner::resolve_target_device(o.target_device);
    } catch (const std::invalid_argument& e) {
      // A device file that exists but is not a device profile is a bad file (exit 1); a name
      // that is neither a stored device nor a file is a bad flag (exit 2).
      std::error_code ec;
      if (std::filesystem::is_regular_file(o.target_device, ec)) throw Failure(e.what());
      throw UsageError(e.what());
    }
  }
  t.target_device = o.target_device;
  t.tables = o.tables;
  t.strategies = o.strategies;
  t.objective = *model::from_string<model::Objective>(o.objective);  // CLI::IsMember checked the word
  t.allow_unvalidated = o.allow_unvalidated;
  t.fine_tune = o.fine_tune;
  t.time_limit_s = o.time_limit;
  t.seed = o.seed;
  t.threads = o.threads;
  t.reps = o.reps;
  t.representatives = !o.every_table;
  return t;
}

// A shape no embedding table has (a damaged file, a count stored out of range) is the file's
// fault, not the command line's: named with its table and file, exit 1.
void check_table_shapes(const model::Profile& profile, const std::string& file) {
  for (const auto& tb : profile.tables) {
    const uint64_t elem = std::max<uint32_t>(model::dtype_size(tb.dtype), 1);
    uint64_t bytes = 0;
    if (tb.rows > (uint64_t{1} << 40) || __builtin_mul_overflow(tb.rows, uint64_t{tb.dim}, &bytes) ||
        __builtin_mul_overflow(bytes, elem, &bytes))
      throw Failure(fmt::format("{}: table '{}' has {} rows x {}: more than any embedding table edo can tune (2^40 rows); "
                                "the recording is damaged: re-record it",
                                terminal_safe(file), terminal_safe(tb.name), tb.rows, tb.dim));
  }
}

// tune() with a progress bar, Ctrl-C stopping it after the candidate being measured (the
// previous SIGINT handler is back afterwards, whatever happens).
model::TuneResult tune_interruptibly(model::Profile&& profile, const std::vector<model::WeightSnapshot>& weights,
                                     const tuner::TuneOptions& t) {
  g_cancel.store(false);
  struct sigaction sa{}, old{};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  ProgressBar bar;
  model::TuneResult r;
  try {
    const auto backend = tuner::make_tune_backend(t.backend);
    r = tuner::tune(std::move(profile), weights, t, *backend, [&](const tuner::TuneProgress& p) { bar.draw(p); }, &g_cancel);
  } catch (const tuner::TuneError& e) {
    bar.finish();
    sigaction(SIGINT, &old, nullptr);
    throw Failure(e.what());
  } catch (const std::invalid_argument& e) {
    bar.finish();
    sigaction(SIGINT, &old, nullptr);
    throw UsageError(e.what());
  }
  bar.finish();
  sigaction(SIGINT, &old, nullptr);
  return r;
}

// The one line on stderr after the plan: how many candidates were measured (or modelled), how
// the others got their times, how long it took, where the results are.
void print_done_line(const model::TuneResult& r, const std::string& file) {
  uint64_t gated = 0, borrowed = 0;
  for (const auto& c : r.candidates) {
    gated += c.not_timed == model::NotTimedCause::kOverErrorLimit;
    borrowed += c.usable() && (c.timing_kind == model::TimingKind::kPredicted || c.timing_kind == model::TimingKind::kTwin);
  }
  std::string how;
  if (borrowed) how += fmt::format("{} predicted from their class's representative or timed as a twin", borrowed);
  if (gated) how += fmt::format("{}{} over the error limit, not timed", how.empty() ? "" : "; ", gated);
  const bool modelled = r.timing_kind == model::RunTiming::kModelled;
  const std::string where = modelled
                                ? "(times modelled for " + terminal_safe(r.timing_device) + ", errors on the " + r.backend + " backend)"
                                : "on the " + r.backend + " backend";
  std::fprintf(stderr, "edo tune: %s %llu of %llu candidates%s in %.1f s %s; results saved in %s\n",
               std::string(model::to_string(r.timing_kind)).c_str(),
               static_cast<unsigned long long>(r.candidates_measured), static_cast<unsigned long long>(r.candidates_total),
               how.empty() ? "" : (" (" + how + ")").c_str(), r.elapsed_s, where.c_str(), terminal_safe(file).c_str());
}

int run_tune(const TuneCliOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  tuner::TuneOptions t = tune_options(o);
  db::ProfileStore store(o.file, db::ProfileStore::Mode::kReadWrite);
  // Not const: tune() takes it over and frees the statistics it no longer needs as it goes.
  model::Profile profile = store.load();
  check_table_shapes(profile, o.file);
  if (const db::RecordingState rec = db::recording_state(profile); !rec.whole())
    std::fprintf(stderr, "edo tune: %s: %s\n", terminal_safe(o.file).c_str(), terminal_safe(rec.describe()).c_str());
  const auto weights = db::load_weight_snapshots(store);

  if (o.time_limit > 0) {
    // The limit is the whole command's: what loading took is gone, and saving the results
    // afterwards needs a moment (a second and 2 %).
    const double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    t.time_limit_s = std::max(0.001, o.time_limit - used - 1.0 - 0.02 * o.time_limit);
  }
  model::TuneResult r = tune_interruptibly(std::move(profile), weights, t);
  // The options in force are the user's: the tuner ran with the limit less loading and saving.
  r.time_limit_s = o.time_limit;
  db::save_tune_result(store, r);

  if (o.json) std::fputs(tuner::plan_to_json(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).append("\n").c_str(), stdout);
  else std::fputs(plan_text(r).c_str(), stdout);
  print_done_line(r, o.file);
  // Ctrl-C: what was measured is saved and planned, and the exit status says the command was
  // interrupted (128 + SIGINT), as a shell expects of a job stopped by Ctrl-C.
  if (r.stop_reason == model::StopReason::kCancelled) return 130;
  if (!r.feasible) {
    // The verdict line (tuner/summary.h) says why and names the fix; a run stopped early says
    // its smallest budget is that of the candidates it measured.
    throw Failure(terminal_safe(tuner::no_plan_text(r)) + (r.min_feasible_bytes == UINT64_MAX ? "" : fmt::format("; run again with --budget {}", r.min_feasible_bytes)));
  }
  return 0;
}

// The profiles shipped with edo (the help does not read the user's directory).
std::string builtin_device_names() {
  std::string s;
  for (const auto& d : tuner::builtin_devices()) s += (s.empty() ? "" : ", ") + d.name;
  return s;
}

// The help's footer: what tune measures and how it picks, the exit status, times, devices, tiers.
std::string footer_text() {
  return
      "Measures fp32/fp16/bf16/fp8/int8/int4, product quantisation, multi-hash, quotient-remainder, low rank,\n"
      "pruning of rows never read, offload with a hot-row cache (sizes from the recorded LRU curve) and, for\n"
      "training jobs, row-wise Adagrad instead of the recorded optimizer, for every table, on this machine, with\n"
      "index batches drawn from the recorded per-row counts; errors on the recorded weight snapshot (edo record\n"
      "--weights) or on synthetic weights. Then picks one strategy per table within --budget and --max-error\n"
      "(default 0.02: near-lossless formats only; a candidate clearly over it is not timed): by default the plan\n"
      "that changes least (no lossy format and no retraining unless the budget needs them; then the fastest),\n"
      "with --objective speed the fastest. Each table's WHY says what its choice saves and costs and what kept\n"
      "the others out. Everything measured, the plan and the frontier are saved in FILE, one run per tune\n"
      "Advice that cannot hurt the job: for a training table the job's own optimizer (as recorded: kind, lr, eps,\n"
      "betas, weight decay) is simulated in each fp16/bf16 candidate's format (fp32 optimizer state, stochastic\n"
      "rounding, as edo.apply_plan trains it); one that goes non-finite or loses its updates is rejected, with the\n"
      "reason in the WHY. A table read whole every step (a tied LM head) is never offloaded, pruned or hashed.\n"
      "Pruning is chosen only when its loss was measured on held-out lookups (its ERROR says \"not validated\"\n"
      "otherwise; --allow-unvalidated takes it anyway). Prove a plan on the job: edo record --apply-plan PLAN,\n"
      "then edo diff --plan PLAN TRIAL.edodb BASELINE.edodb.\n"
      "(edo report lists them; edo export takes the latest that found a plan, or --run N).\n"
      "Tables alike in dim, dtype, rows and lookups per step (within a factor of 4) and LRU curve shape form a class:\n"
      "one representative per class is timed and the others' times are predicted from its per-lookup time (each\n"
      "table's WHY and JSON timing_source say which); bytes and errors on recorded weights are each table's own.\n"
      "Past 256 tables that do not fit the budget as recorded, the smallest tables, together at most 1% of the\n"
      "budget, are kept as recorded with their exact bytes and not timed (their WHY says \"too small to matter\").\n"
      "Sizes: 24GiB, 500MB, 1.5TiB or bytes. Measuring stops after --time-limit (default 300 s), cheap formats\n"
      "first; Ctrl-C stops after the current candidate; either way the plan uses what was measured.\n"
      "Exit status: 0 a plan, 1 no plan fits (the smallest feasible budget is named) or a runtime error,\n"
      "2 bad flags, 130 stopped by Ctrl-C (what was measured is saved and planned first).\n"
      "Times: measured on this machine's GPU, or on its CPU for a CPU job. A GPU job tuned where there is no GPU\n"
      "is modelled for its GPU when edo has a profile of that GPU (shipped: " + builtin_device_names() + "; add\n"
      "yours with 'edo bench --backend cuda --save-device NAME'), else measured on the CPU with a note;\n"
      "--target-device NAME|FILE models that GPU. The plan says which (\"timing\" in the JSON).\n"
      "--json prints the edo.plan/1 object (schema in docs/tuning.md).\n"
      "--devices N plans for N devices of --budget each (a job sharded over N GPUs): the strategies are chosen\n"
      "for N x --budget together, then each table is placed whole on one device (table-wise), or split into equal\n"
      "ranges of rows (row-wise), or of columns (column-wise, only a table with fewer rows than shards), over several\n"
      "when it is larger than a device's room or takes more than its share of the lookups; bytes and measured lookups\n"
      "per step are balanced and no device holds more than --budget. No communication model: TorchRec's planner weighs\n"
      "that (edo export --format torchrec carries the sharding types).\n"
      "Tiers: --host-budget and --ssd-budget bound the plan's host and SSD bytes. A table larger than\n"
      "--host-budget (or, with --ssd-budget, than what --budget leaves it) is offered the SSD tier: the table on\n"
      "the SSD behind a device cache and a host cache (FBGEMM's SSD TBE), hit rates from replaying the recording's\n"
      "held-out lookups through both, step time from the device profile's host link and storage figures (edo bench\n"
      "--storage DIR --save-device NAME; without them TorchRec's 100 MiB/s, said in the table's note). The plan\n"
      "then shows each table's TIER (device, host, ssd) and its SSD bytes.\n\n"
      "Examples:\n  edo tune run.edodb --budget 24GiB --max-error 0.05 --time-limit 600\n"
      "  edo tune job.edodb --devices 8 --budget 80GiB";
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<TuneCliOptions>();
  sub.footer(footer_text());
  sub.add_option("file", o->file, "an .edodb from 'edo record', 'edo import' or 'edo synth'")->required();
  sub.add_option("--budget", o->budget,
                 "device memory for all tables (weights + optimizer state + metadata), e.g. 24GiB; with --devices N, per device")
      ->required();
  sub.add_option("--host-budget", o->host_budget,
                 "host memory for the whole plan (offloaded tables, the SSD tier's host caches), e.g. 64GiB; default: no "
                 "limit. Tables larger than it are offered the SSD tier");
  sub.add_option("--ssd-budget", o->ssd_budget,
                 "SSD space for the whole plan (tables on the SSD tier), e.g. 2TiB; default: no limit. Given, the SSD tier is "
                 "offered to the tables that do not fit what --budget leaves them");
  sub.add_option("--max-error", o->max_error,
                 fmt::format("largest access-weighted relative L2 error a table may get, or inf for no limit (default: {:g}, "
                             "which admits fp16, bf16 and int8 and keeps out fp8, int4, PQ, low rank and hashing)",
                             tuner::kDefaultMaxError))
      ->type_name("E");
  sub.add_option("--objective", o->objective,
                 "least-change: the plan that fits with the least loss (error, retraining), then the fastest; speed: the "
                 "fastest within --max-error")
      ->check(CLI::IsMember({"least-change", "speed"}))->capture_default_str();
  sub.add_flag("--allow-unvalidated", o->allow_unvalidated,
               "also choose candidates that drop rows (pruning) whose loss could not be measured on held-out lookups "
               "(the recording does not say when rows were first read): their ERROR stays \"not validated\"");
  sub.add_flag("--fine-tune", o->fine_tune,
               "the job is a fine-tune: also offer freezing a training table (no gradient, no optimizer state; "
               "edo.apply_plan sets requires_grad=False); recorded in the plan");
  sub.add_option("--backend", o->backend, "auto (CUDA when a device is usable, else CPU), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))->capture_default_str();
  sub.add_option("--target-device", o->target_device,
                 "model the times for this GPU instead of measuring them: a stored device's name (e.g. \"NVIDIA H200\") or "
                 "an edo.device/1 / edo bench --json file")
      ->type_name("NAME|FILE")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? "a stored device's name (" + tuner::stored_device_names() + ") or a file is needed" : std::string(); },
                             "", "not empty"));
  sub.add_option("--tables", o->tables, "only tables whose name matches this glob are tuned (the others keep their memory)")
      ->capture_default_str();
  sub.add_option("--strategies", o->strategies,
                 "only these strategies besides each table's baseline, comma-separated (fp16,bf16,fp8,int8,int4,offload,"
                 "pruned,lowrank,pq,multihash,qr,mch,ssd,sparse_gradient,trim_vocab; default: all; a list takes the "
                 "sparse-gradient and trim-vocabulary levers only when it names sparse_gradient or trim_vocab)");
  sub.add_option("--time-limit", o->time_limit,
                 "seconds the command may take at most (0: none); measuring stops in time and the plan uses what was measured")
      ->check(CLI::Range(0.0, 1e7))->capture_default_str();
  sub.add_option("--seed", o->seed, "seed of index batches, synthetic weights, k-means and hashing")->capture_default_str();
  sub.add_option("--threads", o->threads, "CPU threads (0: all this process may use)")->check(CLI::Range(0, 4096));
  sub.add_option("--reps", o->reps, "timed passes per candidate (median)")->check(CLI::Range(1, 1000))->capture_default_str();
  sub.add_option("--measure-bytes", o->measure_bytes,
                 "fp32 bytes of one measured table at most; larger tables are measured at a scaled size (default: 1/8 of "
                 "available memory, at most 256 MiB on the CPU, 1 GiB on a GPU)");
  sub.add_flag("--measure-every-table", o->every_table,
               "time every table's candidates instead of one representative per class of alike tables (same dim and "
               "dtype, rows and lookups per step within a factor of 4, LRU curve shape) whose per-lookup time predicts the "
               "others' (slow on many tables)");
  sub.add_option("--devices", o->devices,
                 "devices to place the tables on, --budget each (table-wise, row-wise or column-wise; default 1: one device)")
      ->type_name("N");
  sub.add_flag("--json", o->json, "print the edo.plan/1 JSON object on stdout");
  return [o] { return run_tune(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("tune", "measure every strategy per table on this GPU/CPU and recommend a plan under a memory budget", 25,
                     setup);

}  // namespace edo::cli::tune_command
