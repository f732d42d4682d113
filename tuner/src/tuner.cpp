// tune(): enumerate every group's candidates, measure them level by level (every table's
// baseline first, then the cheap formats, then the rest) within the time limit, then plan.
#include "edo/tuner/tuner.h"

#include <malloc.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <list>
#include <map>
#include <memory>
#include <new>
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
#include "numerics.h"
#include "modelled.h"
#include "representatives.h"
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

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    uint64_t kb = 0;
    in >> kb;
    if (key == "MemAvailable:") return kb * 1024;
    in.ignore(256, '\n');
  }
  struct sysinfo si{};
  if (sysinfo(&si) == 0) return static_cast<uint64_t>(si.freeram) * si.mem_unit;
  return uint64_t{4} << 30;
}

// The fp32 bytes one measured table may take: an eighth of available host memory (the
// source weights and an encoded copy live on the host during a measurement), at most 256 MiB
// on the CPU backend (many times any CPU cache: the tail of the lookups still misses) and
// 1 GiB on a GPU (many times its L2), at least 64 MiB.
uint64_t default_cap(const std::string& backend) {
  const uint64_t host = available_memory() / 8;
  const uint64_t most = backend == "cuda" ? uint64_t{1} << 30 : uint64_t{256} << 20;
  return std::max<uint64_t>(uint64_t{64} << 20, std::min(host, most));
}

FormatSize kernels_size(const std::string& spec, uint64_t rows, uint32_t dim, uint64_t kept) {
  const auto s = kernels::strategy_size(kernels::StrategySpec::parse(spec), rows, dim, nullptr);
  FormatSize f{s.device_bytes, s.host_bytes};
  if (kernels::StrategySpec::parse(spec).name == "pruned" && kept < rows) {
    // Without counts every row is kept; a pruned table stores kept rows of dim fp32 values.
    f.device_bytes -= (rows - kept) * uint64_t{dim} * 4;
  }
  return f;
}

struct BenchCache {
  uint64_t budget;
  std::list<std::pair<size_t, std::unique_ptr<TableBench>>> items;  // most recent first
  uint64_t bytes = 0;
  TableBench* get(size_t group) {
    for (auto it = items.begin(); it != items.end(); ++it)
      if (it->first == group) {
        items.splice(items.begin(), items, it);
        return items.front().second.get();
      }
    return nullptr;
  }
  bool has(size_t group) const {
    for (const auto& [g, b] : items)
      if (g == group) return true;
    return false;
  }
  TableBench* put(size_t group, std::unique_ptr<TableBench> b) {
    bytes += b->bytes();
    items.emplace_front(group, std::move(b));
    while (items.size() > 1 && bytes > budget) {
      bytes -= items.back().second->bytes();
      items.pop_back();
    }
    return items.front().second.get();
  }
  void make_room_for(uint64_t b) {
    while (!items.empty() && bytes + b > budget) {
      bytes -= items.back().second->bytes();
      items.pop_back();
    }
  }
};

// Pruning's error is what its held-out lookups lose (candidates.cpp), not the 0 it has on the
// rows the whole recording read; without the record of when rows were first read it says so.
void apply_held_out(model::TuneCandidate& m, const Candidate& c) {
  if (c.strategy != "pruned") return;
  const std::string sep = m.note.empty() ? "" : "; ";
  if (c.held_out_error) {
    m.error = *c.held_out_error;
    m.note += sep + "error on held-out lookups: fitted on the first half of the recording, scored on the second";
  } else {
    // Its measured error (0 on the rows the whole recording read) is no measurement of what it
    // loses: the plan does not take it unless asked (--allow-unvalidated).
    m.note += sep + "not validated on held-out lookups (the recording does not say when rows were first read)";
  }
  m.validated = c.validated;
}

// An ssd candidate (ssd_candidates.h) shares the baseline's lookups and adds its misses' modelled
// time: an exact offset from the baseline's measurement (no interval of its own, plan.cpp
// rank_ties), in the forward (FBGEMM's prefetch brings the rows in before it).
void add_modelled_misses(model::TuneCandidate& m, const Candidate& c) {
  if (!std::isfinite(m.step_us)) return;
  m.step_us += c.added_us;
  m.step_us_lo = m.step_us_hi = NAN;
  if (std::isfinite(m.forward_us)) m.forward_us += c.added_us;
  m.hit_rate = c.heldout_hit_rate;
  m.note += std::string(m.note.empty() ? "" : "; ") + "+" + number(c.added_us, "%.3g") +
            " us modelled for the device cache's misses (host link and SSD reads, params \"storage\")";
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

// Enumerate: the workload's groups, every tuned group's candidates (within --strategies), the
// result's tables and candidates (nothing measured yet) and the notes that go with them.
struct Enumerated {
  Workload w;
  std::vector<std::vector<Candidate>> cands;  // per group
  std::vector<std::vector<size_t>> index;     // group, candidate -> result index
};

// What planning, saving and printing a result take, kept free of measuring at the end of a time
// limit (issue 31). Planning is two knapsack solves over the tuned tables, each visiting at most
// 2^24 partial plans (plan.cpp frontier_points()): 2.0 s for 1,300 tables and 2.0-3.5 s for
// 5,700 on the loaded 2-core VM, about 60 ns a plan visited. Freeing the statistics, saving and
// printing walk every candidate: 2.1-2.5 s for 98,000 at 10,000 tables, about 25 us each.
constexpr double kPlanSecondsPerPartialPlan = 80e-9;
constexpr double kAfterMeasuringPerCandidateS = 30e-6;
// For `tuned_tables` knapsack items (tables with a measured baseline) and `candidates` in all.
double after_measuring_s(size_t tuned_tables, size_t candidates) {
  const double per_solve = static_cast<double>(tuned_tables) *
                           static_cast<double>(std::clamp<size_t>((size_t{1} << 24) / std::max<size_t>(1, tuned_tables), 1024, 16384));
  return 2 * per_solve * kPlanSecondsPerPartialPlan + kAfterMeasuringPerCandidateS * static_cast<double>(candidates);
}

// The share of --time-limit that setting up (grouping, candidates, their held-out replays) may
// use before the replays stop: the rest is for measuring and planning (issue 31).
constexpr double kReplayShareOfLimit = 0.25;

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
  bool any_tuned = false;
  for (const auto& g : w.groups) any_tuned = any_tuned || g.tuned;
  if (!any_tuned) {
    std::string names;
    for (size_t i = 0; i < w.groups.size() && i < 5; ++i) names += (i ? ", " : "") + w.groups[i].name;
    if (w.groups.empty()) throw TuneError("the recording has no embedding tables to tune");
    throw TuneError("no table matches --tables '" + o.tables + "' (tables: " + names + (w.groups.size() > 5 ? ", ..." : "") + ")");
  }

  // Tables too small to matter (small_tables.h): kept as recorded, no candidates, not timed.
  const SmallTables small = small_tables(w, o.budget_bytes, o.devices);
  if (small.count > 0) {
    for (size_t gi = 0; gi < w.groups.size(); ++gi)
      if (small.small[gi]) w.groups[gi].tuned = false;
    r.notes.push_back(std::to_string(small.count) + " tables too small to matter (the smallest, " +
                      model::format_bytes(small.bytes) + " together, at most 1% of the budget; each at most " +
                      model::format_bytes(small.largest) + ") are kept as recorded with their exact bytes, not timed");
  }
  // Candidates of every tuned group.
  auto& cands = e.cands;
  auto& index = e.index;
  cands.resize(w.groups.size());
  index.resize(w.groups.size());
  size_t with_snapshot = 0, tuned = 0;
  // A table's held-out replay (cache_replay.h) costs milliseconds (25-45 s at 10,000 tables, more
  // than a short --time-limit): with a limit they run in the groups' order, largest first (where
  // an offload's hit rate weighs most), until setting up has used kReplayShareOfLimit of it; the
  // smaller tables' offloads then take the recorded LRU curve's estimate, each saying so.
  size_t replays_skipped = 0;
  // What the budget leaves one table (mch_candidates.h): the others as recorded, except those
  // over the whole budget on their own (they must shrink, to a size not known yet: counted as 0).
  const uint64_t budget_all = o.budget_bytes * std::max<uint32_t>(1, o.devices);
  auto counted_bytes = [&](const TableGroup& g) { return g.recorded_device_bytes() > budget_all ? 0 : g.recorded_device_bytes(); };
  uint64_t recorded_total = 0;
  for (const TableGroup& g : w.groups) recorded_total += counted_bytes(g);
  const double replay_until = o.time_limit_s > 0 ? kReplayShareOfLimit * o.time_limit_s : 0.0;
  for (size_t gi = 0; gi < w.groups.size(); ++gi) {
    TableGroup& g = w.groups[gi];
    if (g.tuned && baseline_spec(g.dtype).empty()) {
      g.tuned = false;
      r.notes.push_back(g.name + " is stored as " + g.dtype + " (quantised by the job): kept as recorded");
    }
    const std::string weights = g.snapshot ? "recorded" : "synthetic";
    auto add_table = [&](const std::string& name, double lookups, const std::string& owner) {
      model::TuneTable t;
      t.name = name;
      t.rows = g.rows;
      t.dim = g.dim;
      t.dtype = g.dtype;
      t.device_bytes = owner.empty() ? g.recorded_device_bytes() : 0;
      t.lookups_per_step = lookups;
      t.tuned = g.tuned;
      t.shares_with = owner;
      t.weights = weights;
      t.optimizer = g.optimizer;
      t.training = training_step_of(g).training;
      t.dense_use = g.dense_use;
      r.tables.push_back(std::move(t));
    };
    for (size_t k = 0; k < g.lookups_by_name.size(); ++k)
      add_table(g.lookups_by_name[k].first, g.lookups_by_name[k].second, k == 0 ? "" : g.name);
    if (!g.tuned) continue;
    ++tuned;
    with_snapshot += g.snapshot != nullptr;
    if (const TrainingStep ts = training_step_of(g); ts.training)
      r.notes.push_back(g.name + ": training step timed with " + ts.basis);
    if (replay_until > 0 && (replays_skipped > 0 || std::chrono::duration<double>(clock::now() - t0).count() >= replay_until)) {
      g.replay_skipped = "not replayed within --time-limit (the larger tables' replays took the set-up's share of it)";
      ++replays_skipped;
    }
    if (o.budget_bytes > 0) {
      const uint64_t others = recorded_total - counted_bytes(g);
      g.budget_left_bytes = budget_all > others ? budget_all - others : 0;
    }
    g.fine_tune = o.fine_tune;
    g.lm_head = lm_head_of(profile, g.name);
    g.activation = activation_of(profile, g.name);
    if (const auto& head = g.lm_head; head && !head->tied && head->rows == g.rows && head->dim == g.dim) {
      g.untied_head = head->name;
      g.head_weight_bytes = head->weight_bytes;
      g.head_grad_bytes = head->grad_bytes;
      g.head_optimizer_bytes = head->optimizer_bytes;
    }
    cands[gi] = enumerate_candidates(g, kernels_size);
    add_ssd_candidates(g, {o.host_budget_bytes, o.ssd_budget_bytes}, links, cands[gi]);
    // Nothing after the candidates reads the ordered sample (their replay): freed, when the
    // tuner owns the statistics (tune(Profile&&)).
    if (owned) g.counts.release_ordered_sample();
    if (!allowed.empty()) {
      // Keep the baseline format (for identical tables also its shared copy) and the allowed
      // strategies; variants point at their format by index.
      std::vector<Candidate> kept;
      std::map<int, int> moved;
      const std::string base = cands[gi].empty() ? "" : cands[gi].front().strategy;
      for (size_t ci = 0; ci < cands[gi].size(); ++ci) {
        const Candidate& c = cands[gi][ci];
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
      cands[gi] = std::move(kept);
    }
    for (const Candidate& c : cands[gi]) {
      model::TuneCandidate m;
      m.table = g.name;
      m.strategy = c.strategy;
      m.spec = c.spec;
      m.params_json = c.params_json;
      m.optimizer = c.optimizer;
      m.device_bytes = c.device_bytes;
      m.host_bytes = c.host_bytes;
      m.ssd_bytes = c.ssd_bytes;
      m.recorded_hit_rate = c.recorded_hit_rate;
      m.heldout_hit_rate = c.heldout_hit_rate;
      m.needs_retraining = c.needs_retraining;
      m.validated = c.validated;
      index[gi].push_back(r.candidates.size());
      r.candidates.push_back(std::move(m));
    }
  }
  // "weights" is the word for the whole plan (recorded only when every tuned table had a
  // snapshot); summary.h weights_text() says "recorded for N of M tables" when some had.
  r.weights = with_snapshot == tuned ? "recorded" : "synthetic";
  if (with_snapshot < tuned)
    r.notes.push_back("weights: no weight snapshot for " + std::to_string(tuned - with_snapshot) + " of " +
                      std::to_string(tuned) + " tables: their errors are on synthetic weights (record with 'edo record "
                      "--weights' for errors on the job's weights)");
  if (r.backend == "cpu" && r.timing_kind == "measured")
    r.notes.push_back("measured on the CPU: times are this CPU's; an offloaded table costs its baseline's lookups plus its "
                      "misses' transfer over a modelled 25 GB/s host link");
  if (o.max_error == kDefaultMaxError)
    r.notes.push_back("max error " + number(kDefaultMaxError, "%g") +
                      " per table is the default (fp16, bf16 and int8 usually pass, fp8, int4, PQ, low rank and hashing "
                      "do not): --max-error E to change it, --max-error inf for no limit");
  if (replays_skipped > 0)
    r.notes.push_back("time limit: the held-out replay of the recorded order ran for the " + std::to_string(tuned - replays_skipped) +
                      " largest tuned tables, not for the other " + std::to_string(replays_skipped) +
                      " (their offload hit rates are the recorded LRU curve's, marked estimated; a larger --time-limit "
                      "replays more)");
  r.candidates_total = r.candidates.size();
  // Nothing after enumerating reads an untuned group's statistics (no candidates to measure):
  // at 10,000 tables the small ones' counts and ordered samples are 0.7 GB of tune's peak.
  if (owned) {
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

// Expected to pass --max-error without measuring (the defaults' bounds: docs/tuning.md "Error
// gate"), and lossless or trained in place: a candidate a plan can count on.
bool sure_to_pass(const Candidate& c, double max_error) {
  if (c.needs_retraining || !c.optimizer.empty()) return false;
  if (c.strategy == "offload" || c.strategy == "fp16") return true;
  if (c.strategy == "bf16") return max_error >= 0.005;
  if (c.strategy == "int8") return max_error >= 0.01;
  if (c.strategy == "int4") return max_error >= 0.15;
  return false;
}

// A run the time limit stops must still have a plan when one exists (issue 29 point 7): when
// the tables as recorded do not fit the budget, each table's smallest candidate that is sure to
// pass the error limit is measured with the baselines (level 0), largest saving first, until
// they would fit. A class member's representative gets the same promotion (it takes its times).
void promote_sure_fits(const Workload& w, const std::vector<std::vector<Candidate>>& cands, const TuneOptions& o,
                       const std::vector<int>& source, const std::vector<std::vector<int>>& match,
                       std::vector<std::vector<int>>& level_of) {
  if (o.budget_bytes == 0) return;
  const double budget = static_cast<double>(o.budget_bytes) * std::max<uint32_t>(1, o.devices);
  double total = 0;
  struct Saving {
    double bytes;
    size_t group, cand;
  };
  std::vector<Saving> savings;
  for (size_t gi = 0; gi < w.groups.size(); ++gi) {
    total += static_cast<double>(w.groups[gi].recorded_device_bytes());
    int best = -1;
    for (size_t ci = 0; ci < cands[gi].size(); ++ci)
      if (sure_to_pass(cands[gi][ci], o.max_error) &&
          (best < 0 || cands[gi][ci].device_bytes < cands[gi][static_cast<size_t>(best)].device_bytes))
        best = static_cast<int>(ci);
    if (best >= 0 && !cands[gi].empty())
      savings.push_back({static_cast<double>(cands[gi][0].device_bytes) - static_cast<double>(cands[gi][static_cast<size_t>(best)].device_bytes),
                         gi, static_cast<size_t>(best)});
  }
  // Ties by group index (the workload's order): the same schedule every run.
  std::stable_sort(savings.begin(), savings.end(), [](const Saving& a, const Saving& b) { return a.bytes > b.bytes; });
  for (const Saving& s : savings) {
    if (total <= budget || s.bytes <= 0) break;
    total -= s.bytes;
    level_of[s.group][s.cand] = 0;
    const int k = match[s.group][s.cand];
    if (source[s.group] >= 0 && k >= 0) level_of[static_cast<size_t>(source[s.group])][static_cast<size_t>(k)] = 0;
  }
}

// Schedule and measure: level by level (every table's baseline first, then the cheap formats,
// then the rest), within a level the tables whose setup is still in memory first; what would
// not finish within the time limit is skipped with a note. Fills each candidate's
// measurement; returns the reason measuring stopped early ("" when it did not).
std::string measure_all(Enumerated& e, model::TuneResult& r, kernels::Backend& backend, const TuneOptions& o,
                        const ProgressFn& progress, const std::atomic<bool>* cancel, clock::time_point t0,
                        const DeviceProfile* device_model) {
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  const Workload& w = e.w;
  const auto& cands = e.cands;
  const auto& index = e.index;
  // One table of each timing class is measured; the others take its times (representatives.h):
  // exactly for a twin (same counts), scaled by their lookups per step otherwise.
  const TimingClasses classes = timing_classes(w, o.representatives);
  const std::vector<int>& source = classes.source;
  // Per candidate: the representative's candidate that stands for it (-1: none, measured
  // here), and the level it is taken at (not before its source's is measured).
  std::vector<std::vector<int>> match(w.groups.size()), level_of(w.groups.size());
  for (size_t gi = 0; gi < w.groups.size(); ++gi)
    for (size_t ci = 0; ci < cands[gi].size(); ++ci) {
      const int k = source[gi] >= 0 ? matching_candidate(cands[static_cast<size_t>(source[gi])], cands[gi], ci) : -1;
      match[gi].push_back(k);
      level_of[gi].push_back(k >= 0 ? std::max(cands[gi][ci].level, cands[static_cast<size_t>(source[gi])][static_cast<size_t>(k)].level)
                                    : cands[gi][ci].level);
    }
  promote_sure_fits(w, cands, o, source, match, level_of);
  // Planning, saving and printing walk every candidate of every table, as enumerating did:
  // measuring stops as long before the limit as enumerating took (at most a tenth of the
  // limit), or as those are expected to take (after_measuring_s(), for the tables whose
  // baseline is measured so far: the plan's knapsack items) if longer, at most half the limit,
  // so that the whole run, not only its measuring, ends within the limit. Updated as tables get
  // their baselines (update_limit(), recounted at most every 0.1 s).
  const double enumerate_s = elapsed();
  double limit = 0.0, counted_at = -1.0;
  auto update_limit = [&] {
    if (o.time_limit_s <= 0) return;
    const double now = elapsed();
    if (counted_at >= 0 && now - counted_at < 0.1) return;
    counted_at = now;
    size_t items = 0;
    for (size_t gi = 0; gi < index.size(); ++gi) items += !index[gi].empty() && r.candidates[index[gi][0]].usable();
    const double after = std::min(std::max(std::min(enumerate_s, 0.1 * o.time_limit_s), after_measuring_s(items, r.candidates_total)),
                                  o.time_limit_s / 2);
    limit = std::max(1e-3, o.time_limit_s - after);
  };
  update_limit();
  const uint64_t cap = o.measure_bytes ? o.measure_bytes : default_cap(r.backend);
  // Measurement setups kept for the next level (a setup holds its weights and the baseline's
  // copy: twice the measured table's bytes). On the CPU room for one of the largest (576 MiB
  // at the 256 MiB cap) and smaller ones: tune's peak stays bounded whatever the machine has
  // free (issue 31: a quarter of available memory held 5 GB of setups on a 24 GB machine, 8.9
  // GB peak at 10,000 tables). On a GPU a quarter of available memory, room for two at least,
  // four at most (each holds its baseline on the device).
  uint64_t keep = 2 * cap + (uint64_t{64} << 20);
  if (r.backend == "cuda")
    keep = std::min(std::max(4 * cap + (uint64_t{64} << 20), available_memory() / 4), 8 * cap + (uint64_t{64} << 20));
  BenchCache benches{keep, {}, 0};
  // What measuring costs, to skip what would not finish in time: per strategy the seconds it
  // took on the largest table measured so far (elements = measured rows x dim); per group the
  // seconds its measurement setup took (paid again if its setup was evicted).
  std::map<std::string, std::pair<double, double>> cost;  // strategy -> (elements, seconds)
  std::vector<double> setup_s(w.groups.size(), -1), baseline_s(w.groups.size(), -1);
  // A setup is about linear in the measured elements (weights, permutation, batches): a group
  // never set up is predicted from the largest setup so far.
  std::pair<double, double> setup_cost{0, 0};  // (elements, seconds)
  auto predict_setup = [&](size_t gi, double elems) {
    if (benches.has(gi)) return 0.0;
    if (setup_s[gi] >= 0) return setup_s[gi];
    return setup_cost.first > 0 ? setup_cost.second * elems / setup_cost.first : 0.0;
  };
  // The error gate's check per strategy likewise (fitting PQ or low rank to the reference
  // rows is not cheap); not seen yet: as much as measuring it (predict()).
  std::map<std::string, std::pair<double, double>> gate_cost;
  auto predict = [&](const Candidate& c, size_t gi, double elems) {
    auto it = cost.find(c.strategy);
    if (it != cost.end()) return it->second.second * std::max(1.0, elems / it->second.first);
    // Not measured yet: a multiple of this table's baseline (encoders that fit the table
    // cost more than ones that convert rows).
    const bool fitted = c.strategy == "pq" || c.strategy == "lowrank" || c.strategy == "multihash" || c.strategy == "qr";
    return baseline_s[gi] >= 0 ? baseline_s[gi] * (fitted ? 6.0 : 1.5) : 0.0;
  };
  auto predict_gate = [&](const Candidate& c, size_t gi, double elems) {
    auto it = gate_cost.find(c.strategy);
    if (it != gate_cost.end()) return it->second.second * std::max(1.0, elems / it->second.first);
    return predict(c, gi, elems);
  };
  uint64_t done = 0;
  std::string stop;
  int max_level = 0;
  for (const auto& cs : cands)
    for (const auto& c : cs) max_level = std::max(max_level, c.level);
  auto report = [&](const std::string& table, const std::string& cand) {
    if (!progress) return;
    TuneProgress p;
    p.done = done;
    p.total = r.candidates_total;
    p.elapsed_s = elapsed();
    if (done > 0) {
      const double est = p.elapsed_s / static_cast<double>(done) * static_cast<double>(p.total - done);
      p.remaining_s = limit > 0 ? std::min(est, std::max(0.0, limit - p.elapsed_s)) : est;
    }
    p.table = table;
    p.candidate = cand;
    progress(p);
  };
  report("", "");
  const bool gate = std::isfinite(o.max_error);
  for (int level = 0; level <= max_level; ++level) {
    // Within a level, tables by size, those whose setup is still in memory first (a setup is
    // as costly as a few measurements; more tables than the cache holds would pay it at every
    // level otherwise).
    std::vector<size_t> order(w.groups.size());
    for (size_t gi = 0; gi < order.size(); ++gi) order[gi] = gi;
    std::stable_partition(order.begin(), order.end(), [&](size_t gi) { return benches.has(gi); });
    // Class members after their representative (they take its times).
    std::stable_partition(order.begin(), order.end(), [&](size_t gi) { return source[gi] < 0; });
    for (size_t gi : order) {
      const TableGroup& g = w.groups[gi];
      for (size_t ci = 0; ci < cands[gi].size(); ++ci) {
        const Candidate& c = cands[gi][ci];
        if (level_of[gi][ci] != level || c.measure_as >= 0) continue;
        model::TuneCandidate& m = r.candidates[index[gi][ci]];
        // The class representative's matching candidate (measured before this one), whose
        // time this one takes. Its error is this table's own when the table has recorded
        // weights (then a setup is needed, below); on synthetic weights it is the
        // representative's (synthetic weights of one shape are one distribution), nothing is
        // set up and nothing costs time: it is taken even after measuring stopped.
        const model::TuneCandidate* same = nullptr;
        const size_t src = static_cast<size_t>(std::max(0, source[gi]));
        if (match[gi][ci] >= 0) same = &r.candidates[index[src][static_cast<size_t>(match[gi][ci])]];
        const bool own_error = g.snapshot != nullptr && !lossless(c.strategy, c.baseline);
        if (same && !own_error) {
          const std::string& from = w.groups[src].name;
          if (same->usable()) {
            borrow_timing(m, *same, r.candidates[index[src][0]], g.lookups_per_step,
                          w.groups[src].lookups_per_step, from, classes.twin[gi]);
            m.error = lossless(c.strategy, c.baseline) ? 0.0 : same->error;
            if (!lossless(c.strategy, c.baseline)) m.note += "; error on " + from + "'s synthetic weights (the same distribution)";
            apply_held_out(m, c);
          } else if (same->note.rfind("not timed: error", 0) == 0) {
            m.error = same->error;
            m.note = same->note + " (on " + from + "'s synthetic weights, the representative of its class)";
          } else {
            // Why the representative was not measured is why this one was not (cancelled, the
            // time limit, an error).
            const bool said = same->note.rfind("not measured: ", 0) == 0;
            m.note = (said ? same->note : "not measured: " + (same->note.empty() ? std::string("no time") : same->note)) +
                     "; its class's representative " + from + " was not measured";
          }
          ++done;
          report(g.name, c.spec);
          continue;
        }
        if (stop.empty() && cancel && cancel->load()) stop = "cancelled";
        update_limit();
        if (stop.empty() && limit > 0 && elapsed() >= limit) stop = "time limit";
        if (!stop.empty()) {
          m.note = "not measured: " + stop;
          ++done;
          continue;
        }
        const uint64_t rows = measured_rows(g.rows, g.dim, cap);
        const double elems = static_cast<double>(rows) * g.dim;
        auto too_late = [&](double need) { return limit > 0 && elapsed() + need > limit; };
        const bool gated = gate && !lossless(c.strategy, c.baseline);
        if (same && !same->usable()) same = nullptr;  // recorded weights, nothing to take: measured here
        // Skip what would not finish in time (a gated candidate may end at its error check:
        // its setup and that check must fit).
        if (too_late(predict_setup(gi, elems) + (same ? 0.0 : gated ? predict_gate(c, gi, elems) : predict(c, gi, elems)))) {
          m.note = "not measured: would not finish within the time limit";
          ++done;
          continue;
        }
        report(g.name, c.spec);
        const auto ts = clock::now();
        try {
          auto bench = [&] {
            TableBench* b = benches.get(gi);
            if (!b) {
              benches.make_room_for(rows * g.dim * 4);
              b = benches.put(gi, std::make_unique<TableBench>(g, o, cap, o.seed ^ fnv1a(g.name)));
              setup_s[gi] = std::chrono::duration<double>(clock::now() - ts).count();
              if (elems >= setup_cost.first) setup_cost = {elems, setup_s[gi]};
            }
            return b;
          };
          TableBench* b = bench();
          if (same) {
            // Timed on the representative; the error is this table's own (its recorded weights):
            // exact on the reference rows for a row format, the full table's for a fitted one.
            const std::string& from = w.groups[src].name;
            borrow_timing(m, *same, r.candidates[index[src][0]], g.lookups_per_step,
                          w.groups[src].lookups_per_step, from, classes.twin[gi]);
            m.error = row_format(c.strategy) ? b->reference_error(c, o) : b->full_error(c, o);
            ++done;
            report(g.name, c.spec);
            continue;
          }
          if (gated) {
            // The error gate: the error on the reference rows first; what is clearly over the
            // limit is neither encoded in full nor timed.
            const auto tg = clock::now();
            const double e = b->reference_error(c, o);
            auto& gc = gate_cost[c.strategy];
            if (elems >= gc.first) gc = {elems, std::chrono::duration<double>(clock::now() - tg).count()};
            const bool exact = row_format(c.strategy);
            if (e > gate_margin(c.strategy) * o.max_error) {
              m.error = e;
              m.note = std::string("not timed: error ") + (exact ? "" : "about ") + number(e, "%.3g") +
                       (exact ? "" : " (on the reference rows)") + ", over --max-error " + number(o.max_error, "%g");
              ++done;
              report(g.name, c.spec);
              continue;
            }
            if (too_late(predict(c, gi, elems))) {
              m.note = "not measured: would not finish within the time limit";
              ++done;
              continue;
            }
          }
          const auto& base = r.candidates[index[gi][0]];
          const double base_us = base.usable() ? base.step_us : std::numeric_limits<double>::quiet_NaN();
          const auto tm = clock::now();
          // Modelled for a GPU that is not here: the error as measured, the time from the model.
          const Measurement x = device_model ? model_candidate(*b, g, c, *device_model, o) : b->measure(c, backend, o, base_us);
          m.step_us = x.step_us;
          m.step_us_lo = x.step_us_lo;
          m.step_us_hi = x.step_us_hi;
          // A time modelled from the baseline's (the CPU's offload: its lookups plus a modelled
          // transfer) keeps no interval: it differs from the baseline, and from the other cache
          // sizes, by exactly the modelled part, and the plan compares it exactly (plan.cpp
          // rank_ties). The baseline's interval shifted onto it made the baseline's noise decide
          // which cache size tied (issue 29 point 8).
          m.error = x.error;
          m.step_covers = x.covers;
          m.forward_us = x.forward_us;
          m.backward_us = x.backward_us;
          m.update_us = x.update_us;
          m.hit_rate = x.hit_rate;
          m.measured_rows = x.measured_rows;
          m.measured = true;
          m.timing_kind = "measured";
          m.note = x.note;
          apply_held_out(m, c);
          const double took = std::chrono::duration<double>(clock::now() - tm).count();
          if (c.baseline) baseline_s[gi] = took;
          auto& k = cost[c.strategy];
          if (elems >= k.first) k = {elems, std::max(took, elems == k.first ? k.second : 0.0)};
        } catch (const std::bad_alloc&) {
          m.note = "not measured: does not fit in memory at " + std::to_string(rows) + " rows (lower --measure-bytes)";
        } catch (const std::exception& e) {
          m.note = std::string("not measured: ") + e.what();
        }
        ++done;
        report(g.name, c.spec);
      }
    }
  }
  // Variants (the optimizer lever) share their format's measurement.

  for (size_t gi = 0; gi < w.groups.size(); ++gi)
    for (size_t ci = 0; ci < cands[gi].size(); ++ci) {
      const int from = cands[gi][ci].measure_as;
      if (from < 0) continue;
      model::TuneCandidate& m = r.candidates[index[gi][ci]];
      const model::TuneCandidate& src = r.candidates[index[gi][static_cast<size_t>(from)]];
      m.step_us = src.step_us;
      m.step_us_lo = src.step_us_lo;
      m.step_us_hi = src.step_us_hi;
      m.error = src.error;
      m.hit_rate = src.hit_rate;
      m.step_covers = src.step_covers;
      m.forward_us = src.forward_us;
      m.backward_us = src.backward_us;
      m.update_us = src.update_us;
      m.measured = src.measured;
      m.measured_rows = src.measured_rows;
      m.note = src.note;
      m.timing_kind = src.timing_kind;
      m.timing_from = src.timing_from;
      if (cands[gi][ci].added_us > 0) add_modelled_misses(m, cands[gi][ci]);
      // Managed collision: the held-out share of lookups its slots do not serve with their own
      // id's row (mch_candidates.h), not the baseline's 0.
      if (cands[gi][ci].strategy == "mch" && cands[gi][ci].held_out_error) {
        m.error = *cands[gi][ci].held_out_error;
        m.note += std::string(m.note.empty() ? "" : "; ") +
                  "error: held-out share of lookups not served by their own id's row (replayed through TorchRec's MCH module)";
      }
      // A trimmed vocabulary: the held-out share of lookups on dropped ids (they read UNK).
      if (cands[gi][ci].optimizer == "trim_vocab" && cands[gi][ci].held_out_error) {
        m.error = *cands[gi][ci].held_out_error;
        m.note += std::string(m.note.empty() ? "" : "; ") +
                  "error: share of held-out lookups (after the first 70 %) on ids the trimmed vocabulary drops";
      }
      ++done;
    }
  report("", "");
  return stop;
}

}  // namespace

std::shared_ptr<kernels::Backend> make_tune_backend(const std::string& requested) {
  const std::string name = resolve_backend(requested);
  try {
    return kernels::make_backend(name);
  } catch (const std::runtime_error& e) {
    throw TuneError(std::string(e.what()) + "; use --backend cpu (or auto) on this machine");
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

model::TuneResult tune_impl(const model::Profile& profile, model::Profile* owned,
                            const std::vector<model::WeightSnapshot>& snapshots, const TuneOptions& o,
                            kernels::Backend& backend, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  const auto t0 = clock::now();
  if (!(o.max_error >= 0)) throw std::invalid_argument("max error must be a number >= 0");
  if (o.reps < 1 || o.batches < 1 || o.warmup < 0) throw std::invalid_argument("reps and batches must be >= 1");
  if (o.objective != "least-change" && o.objective != "speed")
    throw std::invalid_argument("objective '" + o.objective + "' is not least-change or speed");
  if (o.threads > 0) kernels::set_num_threads(o.threads);
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
  // Measured on the backend, or modelled for a GPU that is not here: one or the other for
  // every candidate.
  const TimingTarget target = choose_timing(profile, o, r.backend);
  r.timing_kind = target.model ? "modelled" : "measured";
  r.timing_device = target.model ? target.model->name : r.device;
  r.host_budget_bytes = o.host_budget_bytes;
  r.ssd_budget_bytes = o.ssd_budget_bytes;
  Enumerated e = enumerate(profile, snapshots, o, r, owned, t0, ssd_links_of(target, r.device));
  if (!target.note.empty()) r.notes.insert(r.notes.begin(), target.note);
  const std::string stop = measure_all(e, r, backend, o, progress, cancel, t0, target.model ? &*target.model : nullptr);
  // A table read whole every step (a tied LM head): each candidate's step also reads every row
  // once, at the per-row cost its own lookups were measured at.
  for (size_t gi = 0; gi < e.w.groups.size(); ++gi)
    if (!e.w.groups[gi].dense_use.empty())
      for (size_t at : e.index[gi]) add_dense_read(r.candidates[at], e.w.groups[gi]);
  // Numerical safety: the job's optimizer simulated in each low-precision candidate's format.
  for (size_t gi = 0; gi < e.w.groups.size(); ++gi) {
    std::vector<model::TuneCandidate*> results;
    for (size_t at : e.index[gi]) results.push_back(&r.candidates[at]);
    check_training_numerics(e.w.groups[gi], e.cands[gi], results, o.seed ^ fnv1a(e.w.groups[gi].name));
    check_training_lever_candidates(e.w.groups[gi], e.cands[gi], results);
  }
  // Plan.
  size_t gated = 0;
  for (const auto& m : r.candidates) gated += m.note.rfind("not timed: error", 0) == 0;
  if (gated)
    r.notes.push_back(std::to_string(gated) + " candidate(s) over the error limit were not timed (their error is kept); "
                      "a larger --max-error times them");
  for (const auto& m : r.candidates) r.candidates_measured += m.usable();
  r.complete = stop.empty();
  bool skipped = false;
  for (const auto& m : r.candidates) skipped = skipped || m.note == "not measured: would not finish within the time limit";
  r.stop_reason = stop.empty() && skipped && o.time_limit_s > 0 ? "time limit" : stop;
  if (!r.stop_reason.empty()) r.complete = false;
  if (!r.stop_reason.empty()) {
    // What the stop left out, in one line (each candidate's note says why it has no time).
    size_t not_measured = 0, tables = 0, baselines = 0;
    for (size_t gi = 0; gi < e.w.groups.size(); ++gi) {
      size_t here = 0;
      for (size_t at : e.index[gi]) here += r.candidates[at].note.rfind("not measured", 0) == 0;
      not_measured += here;
      tables += here > 0;
      baselines += !e.index[gi].empty() && !r.candidates[e.index[gi][0]].usable();
    }
    if (not_measured > 0)
      r.notes.push_back("stopped by the " + r.stop_reason + ": " + std::to_string(not_measured) + " candidates of " +
                        std::to_string(tables) + " tables were not measured" +
                        (baselines ? "; " + std::to_string(baselines) + " tables without a measured baseline are kept as recorded"
                                   : "; every tuned table's baseline was measured or predicted") +
                        " (a larger --time-limit measures more)");
  }
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
