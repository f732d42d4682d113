// tune(): enumerate every group's candidates, measure them (MeasureScheduler: level by level,
// every table's baseline first, then the cheap formats, then the rest, within the time limit),
// then plan.
#include "edo/tuner/tuner.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "activation_notes.h"
#include "candidates.h"
#include "edo/kernels/cpu.h"
#include "edo/kernels/cuda.h"
#include "edo/kernels/encode.h"
#include "edo/model/profile_summary.h"
#include "edo/text/duration.h"
#include "edo/tuner/optimizer.h"
#include "edo/tuner/llm_facts.h"
#include "llm_candidates.h"
#include "explain.h"
#include "measure.h"
#include "measure_scheduler.h"
#include "numerics.h"
#include "small_tables.h"
#include "ssd_candidates.h"
#include "step_timing.h"
#include "timing_target.h"
#include "workload.h"

namespace edo::tuner {

std::string resolve_backend(const std::string& requested) {
  if (requested == "cpu" || requested == "cuda") return requested;
  if (requested == "auto") return kernels::cuda::device_status().empty() ? "cuda" : "cpu";
  throw std::invalid_argument("backend '" + requested + "' is not auto, cuda or cpu");
}

std::string describe_backend(const std::string& backend) {
  if (backend == "cuda") return kernels::cuda::device_description();
  std::string model;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  if (model.empty()) model = "unknown CPU";
  return model + ", " + std::to_string(kernels::num_threads()) + " threads, " + kernels::cpu::isa();
}

namespace {

using clock = std::chrono::steady_clock;

FormatSize kernels_size(const kernels::StrategySpec& spec, uint64_t rows, uint32_t dim, uint64_t kept) {
  const auto s = kernels::strategy_size(spec, rows, dim, nullptr);
  FormatSize f{s.device_bytes, s.host_bytes};
  if (spec.name == "pruned" && kept < rows) {
    // Without counts every row is kept; a pruned table stores kept rows of dim fp32 values.
    f.device_bytes -= (rows - kept) * uint64_t{dim} * 4;
  }
  return f;
}

// The host link and storage the SSD tier is costed with: the modelled GPU's profile, else a
// stored profile of this device's name, else the CPU backend's nominal link and no storage.
SsdLinks ssd_links_of(const TimingTarget& target, const std::string& device) {
  SsdLinks l;
  std::optional<DeviceProfile> p = target.model ? target.model : find_stored_device(device);
  if (!p) return l;
  l.host_link_gbs = p->host_link_gbs;
  l.host_link_basis = p->host_link_basis;
  if (!p->storage.is_null()) {
    try {
      l.storage = kernels::storage_from_json(p->storage, "device profile " + p->name);
      l.storage_source = "device profile " + p->name;
    } catch (const std::invalid_argument&) {
      // Unusable figures: TorchRec's default, said in each candidate.
    }
  }
  return l;
}

// The strategies --strategies allows (empty: all); throws std::invalid_argument naming an
// unknown one.
std::set<std::string> allowed_strategies(const std::string& list) {
  std::set<std::string> allowed;
  {
    size_t start = 0;
    while (start < list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      std::string name = list.substr(start, end - start);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      // The kernels' strategies, "mch" (managed collision: the baseline's rows behind a remap)
      // and "sparse_gradient" (the lever that moves a densely trained table to a sparse gradient
      // under SparseAdam or Adagrad: llm_candidates.h).
      auto known = kernels::strategy_names();
      known.push_back("mch");
      known.push_back("ssd");  // the SSD tier behind a device and a host cache (ssd_candidates.h)
      known.push_back("sparse_gradient");
      known.push_back("trim_vocab");  // a token table's vocabulary trimmed (trim_candidates.h)
      if (!name.empty() && std::find(known.begin(), known.end(), name) == known.end()) {
        std::string all;
        for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
        throw std::invalid_argument("unknown strategy '" + name + "' (known: " + all + ")");
      }
      if (!name.empty()) allowed.insert(name);
      start = end + 1;
    }
  }
  return allowed;
}

// The share of --time-limit that setting up (grouping, candidates, their held-out replays) may
// use before the replays stop: the rest is for measuring and planning (issue 31).
constexpr double kReplayShareOfLimit = 0.25;

// No table to tune: the recording has none, or --tables matches none (naming the first five).
void require_tuned_tables(const Workload& w, const TuneOptions& o) {
  bool any_tuned = false;
  for (const auto& g : w.groups) any_tuned = any_tuned || g.tuned;
  if (any_tuned) return;
  std::string names;
  for (size_t i = 0; i < w.groups.size() && i < 5; ++i) names += (i ? ", " : "") + w.groups[i].name;
  if (w.groups.empty()) throw TuneError("the recording has no embedding tables to tune");
  std::string what;
  std::vector<model::TuneReason> reasons;
  model::say(what, reasons, {.code = model::Reason::kNoTableMatches, .name = o.tables, .detail = names + (w.groups.size() > 5 ? ", ..." : "")});
  throw TuneError(what, std::move(reasons));
}

// Tables too small to matter (small_tables.h): kept as recorded, no candidates, not timed.
void keep_small_tables(Workload& w, const TuneOptions& o, model::TuneResult& r) {
  const SmallTables small = small_tables(w, o.budget_bytes, o.devices);
  if (small.count == 0) return;
  for (size_t gi = 0; gi < w.groups.size(); ++gi)
    if (small.small[gi]) w.groups[gi].tuned = false;
  r.notes.push_back(std::to_string(small.count) + " tables too small to matter (the smallest, " +
                    model::format_bytes(small.bytes) + " together, at most 1% of the budget; each at most " +
                    model::format_bytes(small.largest) + ") are kept as recorded with their exact bytes, not timed");
}

// The result's table rows of one group: its owner, then each name sharing its weights (they
// hold no bytes of their own).
void add_result_tables(const TableGroup& g, model::TuneResult& r) {
  const std::string weights = g.snapshot ? "recorded" : "synthetic";
  for (size_t k = 0; k < g.lookups_by_name.size(); ++k) {
    const std::string owner = k == 0 ? "" : g.name;
    model::TuneTable t;
    t.name = g.lookups_by_name[k].first;
    t.rows = g.rows;
    t.dim = g.dim;
    t.dtype = g.dtype;
    t.device_bytes = owner.empty() ? g.recorded_device_bytes() : 0;
    t.lookups_per_step = g.lookups_by_name[k].second;
    t.tuned = g.tuned;
    t.shares_with = owner;
    t.weights = weights;
    t.optimizer = g.optimizer;
    t.training = training_step_of(g).training;
    t.dense_use = g.dense_use;
    r.tables.push_back(std::move(t));
  }
}

// What the budget leaves one table (mch_candidates.h): the others as recorded, except those
// over the whole budget on their own (they must shrink, to a size not known yet: counted as 0).
class BudgetLeft {
 public:
  BudgetLeft(const Workload& w, const TuneOptions& o) : all_(o.budget_bytes * std::max<uint32_t>(1, o.devices)) {
    for (const TableGroup& g : w.groups) recorded_total_ += counted(g);
  }
  uint64_t of(const TableGroup& g) const {
    const uint64_t others = recorded_total_ - counted(g);
    return all_ > others ? all_ - others : 0;
  }

 private:
  uint64_t counted(const TableGroup& g) const { return g.recorded_device_bytes() > all_ ? 0 : g.recorded_device_bytes(); }
  uint64_t all_;
  uint64_t recorded_total_ = 0;
};

// The facts a tuned group's candidates depend on besides its counts: the budget it is left,
// --fine-tune, the model's LM head (tied or an untied one of the same shape) and activations.
void add_group_context(TableGroup& g, const model::Profile& profile, const TuneOptions& o, const BudgetLeft& left) {
  if (o.budget_bytes > 0) g.budget_left_bytes = left.of(g);
  g.fine_tune = o.fine_tune;
  g.lm_head = lm_head_of(profile, g.name);
  g.activation = activation_of(profile, g.name);
  if (const auto& head = g.lm_head; head && !head->tied && head->rows == g.rows && head->dim == g.dim) {
    g.untied_head = head->name;
    g.head_weight_bytes = head->weight_bytes;
    g.head_grad_bytes = head->grad_bytes;
    g.head_optimizer_bytes = head->optimizer_bytes;
  }
}

// --strategies: keep the baseline format (for identical tables also its shared copy) and the
// allowed strategies; variants point at their format by index.
std::vector<Candidate> allowed_candidates(const std::vector<Candidate>& cands, const std::set<std::string>& allowed) {
  std::vector<Candidate> kept;
  std::map<int, int> moved;
  const std::string base = cands.empty() ? "" : cands.front().strategy;
  for (size_t ci = 0; ci < cands.size(); ++ci) {
    const Candidate& c = cands[ci];
    if (!c.baseline && c.strategy != base && !allowed.count(c.strategy)) continue;
    // A sparse gradient changes the job's optimizer (SparseAdam's moments are lazy) and is
    // applied with the job's optimizer in hand (apply_plan(..., optimizer=opt)): a list of
    // strategies takes it only when it names it.
    if ((c.optimizer == "sparse_adam" || c.optimizer == "sparse_adagrad") && !allowed.count("sparse_gradient")) continue;
    // Trimming changes the model's vocabulary: a list takes it only when it names it.
    if (c.optimizer == "trim_vocab" && !allowed.count("trim_vocab")) continue;
    moved[static_cast<int>(ci)] = static_cast<int>(kept.size());
    kept.push_back(c);
    if (kept.back().measure_as >= 0) kept.back().measure_as = moved.at(kept.back().measure_as);
  }
  return kept;
}

// The result's candidate rows of one group (nothing measured yet); `index` gets where each is.
void add_result_candidates(const TableGroup& g, const std::vector<Candidate>& cands, std::vector<size_t>& index,
                           model::TuneResult& r) {
  for (const Candidate& c : cands) {
    model::TuneCandidate m;
    m.table = g.name;
    m.strategy = c.strategy;
    m.spec = c.spec;
    m.params = c.params;
    m.optimizer = c.optimizer;
    m.device_bytes = c.device_bytes;
    m.host_bytes = c.host_bytes;
    m.ssd_bytes = c.ssd_bytes;
    m.recorded_hit_rate = c.recorded_hit_rate;
    m.heldout_hit_rate = c.heldout_hit_rate;
    m.needs_retraining = c.needs_retraining;
    m.validated = c.validated;
    index.push_back(r.candidates.size());
    r.candidates.push_back(std::move(m));
  }
}

// A note of the run with advice in it: `before`, the advice (marked for the front ends to word,
// TuneResult::note_reasons), `after`.
void add_note(model::TuneResult& r, std::string before, model::TuneReason advice, const char* after = "") {
  model::say_in_line(before, r.note_reasons, static_cast<uint32_t>(r.notes.size()), std::move(advice));
  r.notes.push_back(before + after);
}

// The notes enumerating leaves: weights recorded or synthetic, CPU timing, the default error
// limit, held-out replays the time limit skipped.
void add_enumerate_notes(const TuneOptions& o, size_t tuned, size_t with_snapshot, size_t replays_skipped,
                         model::TuneResult& r) {
  // "weights" is the word for the whole plan (recorded only when every tuned table had a
  // snapshot); summary.h weights_text() says "recorded for N of M tables" when some had.
  r.weights = with_snapshot == tuned ? "recorded" : "synthetic";
  if (with_snapshot < tuned)
    add_note(r, "weights: no weight snapshot for " + std::to_string(tuned - with_snapshot) + " of " + std::to_string(tuned) +
             " tables: their errors are on synthetic weights (",
             {.code = model::Reason::kRecordWeights}, ")");
  if (r.backend == "cpu" && r.timing_kind == model::RunTiming::kMeasured)
    r.notes.push_back("measured on the CPU: times are this CPU's; an offloaded table costs its baseline's lookups plus its "
                      "misses' transfer over a modelled 25 GB/s host link");
  if (o.max_error == kDefaultMaxError)
    add_note(r, "max error " + number(kDefaultMaxError, "%g") +
                    " per table is the default (fp16, bf16 and int8 usually pass, fp8, int4, PQ, low rank and hashing do not): ",
             {.code = model::Reason::kChangeMaxError});
  if (replays_skipped > 0)
    add_note(r, "time limit: the held-out replay of the recorded order ran for the " + std::to_string(tuned - replays_skipped) +
                    " largest tuned tables, not for the other " + std::to_string(replays_skipped) +
                    " (their offload hit rates are the recorded LRU curve's, marked estimated; ",
             {.code = model::Reason::kLargerTimeLimit, .name = "replays more"}, ")");
}

// Nothing after enumerating reads an untuned group's statistics (no candidates to measure):
// at 10,000 tables the small ones' counts and ordered samples are 0.7 GB of tune's peak.
void release_untuned_statistics(Workload& w) {
  for (auto& g : w.groups)
    if (!g.tuned) {
      g.counts = stats::TableAggregate();
      g.first_seen.clear();
      g.first_seen.shrink_to_fit();
    }
  // The freed statistics are many blocks of a few hundred KiB inside the heap; the
  // measurement's buffers are mapped apart from it and would not reuse them: hand them back.
  malloc_trim(0);
}

// A table's held-out replay (cache_replay.h) costs milliseconds (25-45 s at 10,000 tables, more
// than a short --time-limit): with a limit they run in the groups' order, largest first (where
// an offload's hit rate weighs most), until setting up has used kReplayShareOfLimit of it; the
// smaller tables' offloads then take the recorded LRU curve's estimate, each saying so.
class ReplayBudget {
 public:
  ReplayBudget(const TuneOptions& o, clock::time_point t0)
      : t0_(t0), until_(o.time_limit_s > 0 ? kReplayShareOfLimit * o.time_limit_s : 0.0) {}
  // Marks the group's replay skipped once the share is used (and every later group's).
  void check(TableGroup& g) {
    if (until_ > 0 && (skipped_ > 0 || std::chrono::duration<double>(clock::now() - t0_).count() >= until_)) {
      // Kept in the candidates' parameters (hit_rate_estimated), in the command's words.
      g.replay_skipped = model::command_words().say({.code = model::Reason::kWithinTimeLimit, .name = "not replayed"}) +
                         " (the larger tables' replays took the set-up's share of it)";
      ++skipped_;
    }
  }
  size_t skipped() const { return skipped_; }

 private:
  clock::time_point t0_;
  double until_;
  size_t skipped_ = 0;
};

// One group's candidates: enumerated (with the SSD tier's), kept within --strategies.
std::vector<Candidate> group_candidates(TableGroup& g, const TuneOptions& o, const SsdLinks& links,
                                        const std::set<std::string>& allowed, bool owned) {
  std::vector<Candidate> cands = enumerate_candidates(g, kernels_size);
  add_ssd_candidates(g, {o.host_budget_bytes, o.ssd_budget_bytes}, links, cands);
  // Nothing after the candidates reads the ordered sample (their replay): freed, when the
  // tuner owns the statistics (tune(Profile&&)).
  if (owned) g.counts.release_ordered_sample();
  return allowed.empty() ? cands : allowed_candidates(cands, allowed);
}

// Enumerate: the workload's groups, every tuned group's candidates (within --strategies), the
// result's tables and candidates (nothing measured yet) and the notes that go with them.
// `owned`: the caller's profile, when it is handed over (tune(Profile&&)): its statistics are
// released once the workload holds them, and those of tables not tuned once enumerated.
Enumerated enumerate(const model::Profile& profile, const std::vector<model::WeightSnapshot>& snapshots,
                     const TuneOptions& o, model::TuneResult& r, model::Profile* owned, clock::time_point t0,
                     const SsdLinks& links) {
  const std::set<std::string> allowed = allowed_strategies(o.strategies);
  Enumerated e;
  Workload& w = e.w;
  w = build_workload(profile, snapshots, o.tables);
  // The groups share each table's statistics with the profile (copy-on-write aggregates):
  // the profile's references go, so that releasing a group's below frees its memory.
  if (owned)
    for (auto& t : owned->tables) t.aggregate = stats::TableAggregate();
  r.notes = w.notes;
  require_tuned_tables(w, o);
  keep_small_tables(w, o, r);
  e.cands.resize(w.groups.size());
  e.index.resize(w.groups.size());
  size_t with_snapshot = 0, tuned = 0;
  ReplayBudget replays(o, t0);
  const BudgetLeft left(w, o);
  for (size_t gi = 0; gi < w.groups.size(); ++gi) {
    TableGroup& g = w.groups[gi];
    if (g.tuned && baseline_spec(g.dtype).empty()) {
      g.tuned = false;
      r.notes.push_back(g.name + " is stored as " + g.dtype + " (quantised by the job): kept as recorded");
    }
    add_result_tables(g, r);
    if (!g.tuned) continue;
    ++tuned;
    with_snapshot += g.snapshot != nullptr;
    if (const TrainingStep ts = training_step_of(g); ts.training)
      r.notes.push_back(g.name + ": training step timed with " + ts.basis);
    replays.check(g);
    add_group_context(g, profile, o, left);
    e.cands[gi] = group_candidates(g, o, links, allowed, owned != nullptr);
    add_result_candidates(g, e.cands[gi], e.index[gi], r);
  }
  add_enumerate_notes(o, tuned, with_snapshot, replays.skipped(), r);
  r.candidates_total = r.candidates.size();
  if (owned) release_untuned_statistics(w);
  return e;
}

// The dense read of a table read whole every step (docs/tuning.md "Dense use"): every row once,
// at the per-row cost of the candidate's own measured lookups (its forward, for a training
// step), added to its step time and interval.
void add_dense_read(model::TuneCandidate& c, const TableGroup& g) {
  if (!c.usable() || !(g.lookups_per_step > 0)) return;
  const double forward = std::isfinite(c.forward_us) ? c.forward_us : c.step_us;
  const double read = forward / g.lookups_per_step * static_cast<double>(g.rows);
  if (!std::isfinite(read) || read <= 0) return;
  c.step_us += read;
  if (std::isfinite(c.step_us_lo)) c.step_us_lo += read;
  if (std::isfinite(c.step_us_hi)) c.step_us_hi += read;
  if (std::isfinite(c.forward_us)) c.forward_us += read;
  c.step_covers += (c.step_covers.empty() ? "" : " ") + std::string("+ the dense read of every row");
  c.note += (c.note.empty() ? "" : "; ") + std::string("step time includes the dense read of all ") + std::to_string(g.rows) +
            " rows (" + format_duration_us(read) + ", at its measured per-row cost)";
}

}  // namespace

std::shared_ptr<kernels::Backend> make_tune_backend(const std::string& requested) {
  const std::string name = resolve_backend(requested);
  try {
    return kernels::make_backend(name);
  } catch (const std::runtime_error& e) {
    std::string what = std::string(e.what()) + "; ";
    std::vector<model::TuneReason> reasons;
    model::say(what, reasons, {.code = model::Reason::kUseCpuBackend});
    throw TuneError(what, std::move(reasons));
  }
}

model::TuneResult tune(const model::Profile& profile, const std::vector<model::WeightSnapshot>& snapshots,
                       const TuneOptions& o, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  // Options are checked before a backend is made (a CUDA context takes a while).
  if (!(o.max_error >= 0)) throw std::invalid_argument("max error must be a number >= 0");
  if (o.reps < 1 || o.batches < 1 || o.warmup < 0) throw std::invalid_argument("reps and batches must be >= 1");
  auto backend = make_tune_backend(o.backend);
  return tune(profile, snapshots, o, *backend, progress, cancel);
}

namespace {

// The run's header: when, where (backend and device), and the options it was asked for; whether
// times are measured on the backend or modelled for a GPU that is not here (`target`).
model::TuneResult result_header(const TuneOptions& o, kernels::Backend& backend) {
  model::TuneResult r;
  r.created_unix = static_cast<int64_t>(std::time(nullptr));
  r.backend = backend.name();
  r.device = describe_backend(r.backend);
  if (o.devices < 1) throw std::invalid_argument("devices must be a whole number >= 1");
  r.devices = o.devices;
  r.budget_bytes = o.budget_bytes;
  r.max_error = o.max_error;
  r.tables_glob = o.tables;
  r.seed = o.seed;
  r.time_limit_s = o.time_limit_s;
  r.objective = o.objective;
  r.allow_unvalidated = o.allow_unvalidated;
  r.fine_tune = o.fine_tune;
  r.host_budget_bytes = o.host_budget_bytes;
  r.ssd_budget_bytes = o.ssd_budget_bytes;
  return r;
}

// What each measured candidate's step also costs, and whether the job's optimizer is safe in its
// format: a table read whole every step (a tied LM head) also reads every row once, at the
// per-row cost its own lookups were measured at; the job's optimizer is simulated in each
// low-precision candidate's format.
void complete_measurements(const Enumerated& e, const TuneOptions& o, model::TuneResult& r) {
  for (size_t gi = 0; gi < e.w.groups.size(); ++gi)
    if (!e.w.groups[gi].dense_use.empty())
      for (size_t at : e.index[gi]) add_dense_read(r.candidates[at], e.w.groups[gi]);
  for (size_t gi = 0; gi < e.w.groups.size(); ++gi) {
    std::vector<model::TuneCandidate*> results;
    for (size_t at : e.index[gi]) results.push_back(&r.candidates[at]);
    check_training_numerics(e.w.groups[gi], e.cands[gi], results, table_seed(o.seed, e.w.groups[gi].name));
    check_training_lever_candidates(e.w.groups[gi], e.cands[gi], results);
  }
}

// How far measuring got: the candidates the error gate left untimed, whether the run is
// complete, why it stopped (also when only skipped candidates say so) and what the stop left out.
void note_how_far_measuring_got(const Enumerated& e, const TuneOptions& o, model::StopReason stop, model::TuneResult& r) {
  using model::NotTimedCause;
  size_t gated = 0;
  for (const auto& m : r.candidates) gated += m.not_timed == NotTimedCause::kOverErrorLimit;
  if (gated)
    add_note(r, std::to_string(gated) + " candidate(s) over the error limit were not timed (their error is kept); ",
             {.code = model::Reason::kLargerMaxError, .name = "times them"});
  for (const auto& m : r.candidates) r.candidates_measured += m.usable();
  r.complete = stop == model::StopReason::kNone;
  bool skipped = false;
  for (const auto& m : r.candidates) skipped = skipped || m.not_timed == NotTimedCause::kWouldNotFinish;
  r.stop_reason = r.complete && skipped && o.time_limit_s > 0 ? model::StopReason::kTimeLimit : stop;
  if (r.stop_reason == model::StopReason::kNone) return;
  r.complete = false;
  // What the stop left out, in one line (each candidate's note says why it has no time).
  size_t not_measured = 0, tables = 0, baselines = 0;
  for (size_t gi = 0; gi < e.w.groups.size(); ++gi) {
    size_t here = 0;
    for (size_t at : e.index[gi]) {
      const NotTimedCause why = r.candidates[at].not_timed;
      here += why != NotTimedCause::kNone && why != NotTimedCause::kOverErrorLimit;
    }
    not_measured += here;
    tables += here > 0;
    baselines += !e.index[gi].empty() && !r.candidates[e.index[gi][0]].usable();
  }
  if (not_measured > 0)
    add_note(r, "stopped by the " + std::string(model::to_string(r.stop_reason)) + ": " + std::to_string(not_measured) +
                    " candidates of " + std::to_string(tables) + " tables were not measured" +
                    (baselines ? "; " + std::to_string(baselines) + " tables without a measured baseline are kept as recorded"
                               : "; every tuned table's baseline was measured or predicted") +
                    " (",
             {.code = model::Reason::kLargerTimeLimit, .name = "measures more"}, ")");
}

// enumerate -> measure -> plan.
model::TuneResult tune_impl(const model::Profile& profile, model::Profile* owned,
                            const std::vector<model::WeightSnapshot>& snapshots, const TuneOptions& o,
                            kernels::Backend& backend, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  const auto t0 = clock::now();
  if (!(o.max_error >= 0)) throw std::invalid_argument("max error must be a number >= 0");
  if (o.reps < 1 || o.batches < 1 || o.warmup < 0) throw std::invalid_argument("reps and batches must be >= 1");
  if (o.threads > 0) kernels::set_num_threads(o.threads);
  model::TuneResult r = result_header(o, backend);
  // Measured on the backend, or modelled for a GPU that is not here: one or the other for
  // every candidate.
  const TimingTarget target = choose_timing(profile, o, r.backend);
  r.timing_kind = target.model ? model::RunTiming::kModelled : model::RunTiming::kMeasured;
  r.timing_device = target.model ? target.model->name : r.device;

  Enumerated e = enumerate(profile, snapshots, o, r, owned, t0, ssd_links_of(target, r.device));
  if (!target.note.empty()) {
    // First: every other note moves one line down.
    for (model::TuneReason& reason : r.note_reasons) ++reason.line;
    r.notes.insert(r.notes.begin(), target.note);
    r.note_reasons.insert(r.note_reasons.begin(), target.note_reasons.begin(), target.note_reasons.end());
  }
  const model::StopReason stop = MeasureScheduler(e, r, backend, o, progress, cancel, t0, target.model ? &*target.model : nullptr).run();
  complete_measurements(e, o, r);
  note_how_far_measuring_got(e, o, stop, r);
  for (auto& n : checkpointing_notes(profile, r)) r.notes.push_back(std::move(n));  // activation memory (issue 33)
  replan(r, o.budget_bytes, o.max_error);
  r.elapsed_s = std::chrono::duration<double>(clock::now() - t0).count();
  return r;
}

}  // namespace

model::TuneResult tune(const model::Profile& profile, const std::vector<model::WeightSnapshot>& snapshots,
                       const TuneOptions& o, kernels::Backend& backend, const ProgressFn& progress,
                       const std::atomic<bool>* cancel) {
  return tune_impl(profile, nullptr, snapshots, o, backend, progress, cancel);
}

model::TuneResult tune(model::Profile&& profile, const std::vector<model::WeightSnapshot>& snapshots,
                       const TuneOptions& o, kernels::Backend& backend, const ProgressFn& progress,
                       const std::atomic<bool>* cancel) {
  model::Profile owned = std::move(profile);
  return tune_impl(owned, &owned, snapshots, o, backend, progress, cancel);
}

}  // namespace edo::tuner
