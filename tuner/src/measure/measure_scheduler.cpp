// MeasureScheduler (measure_scheduler.h): the order candidates are measured in, the deadline,
// and how each measurement (or the reason for its absence) is written into the result.
#include "measure_scheduler.h"

#include <sys/sysinfo.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <list>
#include <new>

#include "explain.h"
#include "modelled.h"

namespace edo::tuner {

uint64_t table_seed(uint64_t seed, const std::string& table) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : table) h = (h ^ c) * 1099511628211ULL;
  return seed ^ h;
}

namespace {

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

// Measurement setups kept for the next level (a setup holds its weights and the baseline's
// copy: twice the measured table's bytes). On the CPU room for one of the largest (576 MiB
// at the 256 MiB cap) and smaller ones: tune's peak stays bounded whatever the machine has
// free (issue 31: a quarter of available memory held 5 GB of setups on a 24 GB machine, 8.9
// GB peak at 10,000 tables). On a GPU a quarter of available memory, room for two at least,
// four at most (each holds its baseline on the device).
uint64_t setup_bytes_kept(const std::string& backend, uint64_t cap) {
  uint64_t keep = 2 * cap + (uint64_t{64} << 20);
  if (backend == "cuda")
    keep = std::min(std::max(4 * cap + (uint64_t{64} << 20), available_memory() / 4), 8 * cap + (uint64_t{64} << 20));
  return keep;
}

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

const char* const kNotInTime = "not measured: would not finish within the time limit";

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

// A variant (the optimizer lever, the SSD tier, managed collision, a trimmed vocabulary) takes
// its format's measurement; its own error where it has one.
void copy_variant(model::TuneCandidate& m, const model::TuneCandidate& src, const Candidate& c) {
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
  m.note_reasons = src.note_reasons;
  m.not_timed = src.not_timed;
  m.timing_kind = src.timing_kind;
  m.timing_from = src.timing_from;
  if (c.added_us > 0) add_modelled_misses(m, c);
  // Managed collision: the held-out share of lookups its slots do not serve with their own
  // id's row (mch_candidates.h), not the baseline's 0.
  if (c.strategy == "mch" && c.held_out_error) {
    m.error = *c.held_out_error;
    m.note += std::string(m.note.empty() ? "" : "; ") +
              "error: held-out share of lookups not served by their own id's row (replayed through TorchRec's MCH module)";
  }
  // A trimmed vocabulary: the held-out share of lookups on dropped ids (they read UNK).
  if (c.optimizer == "trim_vocab" && c.held_out_error) {
    m.error = *c.held_out_error;
    m.note += std::string(m.note.empty() ? "" : "; ") +
              "error: share of held-out lookups (after the first 70 %) on ids the trimmed vocabulary drops";
  }
}

// A measurement written into the candidate's result. A time modelled from the baseline's (the
// CPU's offload: its lookups plus a modelled transfer) keeps no interval: it differs from the
// baseline, and from the other cache sizes, by exactly the modelled part, and the plan compares
// it exactly (plan.cpp rank_ties). The baseline's interval shifted onto it made the baseline's
// noise decide which cache size tied (issue 29 point 8).
void record_measurement(model::TuneCandidate& m, const Measurement& x) {
  m.step_us = x.step_us;
  m.step_us_lo = x.step_us_lo;
  m.step_us_hi = x.step_us_hi;
  m.error = x.error;
  m.step_covers = x.covers;
  m.forward_us = x.forward_us;
  m.backward_us = x.backward_us;
  m.update_us = x.update_us;
  m.hit_rate = x.hit_rate;
  m.measured_rows = x.measured_rows;
  m.measured = true;
  m.timing_kind = model::TimingKind::kMeasured;
  m.not_timed = model::NotTimedCause::kNone;
  m.note = x.note;
  m.note_reasons.clear();
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

}  // namespace

// Measurement setups kept in memory across levels, most recently used first, within a byte
// budget (the one just made is always kept).
class MeasureScheduler::BenchCache {
 public:
  explicit BenchCache(uint64_t budget) : budget_(budget) {}
  TableBench* get(size_t group) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == group) {
        items_.splice(items_.begin(), items_, it);
        return items_.front().second.get();
      }
    return nullptr;
  }
  bool has(size_t group) const {
    for (const auto& [g, b] : items_)
      if (g == group) return true;
    return false;
  }
  TableBench* put(size_t group, std::unique_ptr<TableBench> b) {
    bytes_ += b->bytes();
    items_.emplace_front(group, std::move(b));
    while (items_.size() > 1 && bytes_ > budget_) evict();
    return items_.front().second.get();
  }
  void make_room_for(uint64_t b) {
    while (!items_.empty() && bytes_ + b > budget_) evict();
  }

 private:
  void evict() {
    bytes_ -= items_.back().second->bytes();
    items_.pop_back();
  }
  uint64_t budget_;
  std::list<std::pair<size_t, std::unique_ptr<TableBench>>> items_;
  uint64_t bytes_ = 0;
};

MeasureScheduler::MeasureScheduler(Enumerated& e, model::TuneResult& r, kernels::Backend& backend, const TuneOptions& o,
                                   const ProgressFn& progress, const std::atomic<bool>* cancel, Clock::time_point t0,
                                   const DeviceProfile* device_model)
    : e_(e),
      r_(r),
      backend_(backend),
      o_(o),
      progress_(progress),
      cancel_(cancel),
      t0_(t0),
      device_model_(device_model),
      cap_(o.measure_bytes ? o.measure_bytes : default_cap(r.backend)),
      gate_(std::isfinite(o.max_error)),
      classes_(timing_classes(e.w, o.representatives)),
      setup_s_(e.w.groups.size(), -1),
      baseline_s_(e.w.groups.size(), -1) {
  assign_levels();
  // Measuring stops before the limit by what enumerating took (update_limit()).
  enumerate_s_ = elapsed();
  update_limit();
  benches_ = std::make_unique<BenchCache>(setup_bytes_kept(r.backend, cap_));
}

MeasureScheduler::~MeasureScheduler() = default;

model::StopReason MeasureScheduler::run() {
  report("", "");
  for (int level = 0; level <= max_level_; ++level)
    for (size_t gi : level_order())
      for (size_t ci = 0; ci < e_.cands[gi].size(); ++ci)
        if (level_of_[gi][ci] == level && e_.cands[gi][ci].measure_as < 0) schedule(gi, ci);
  share_variants();
  report("", "");
  return stop_;
}

// Each candidate's level: its own, or its representative's candidate's when later (a member
// takes its times once they are measured); the sure fits promoted to level 0.
void MeasureScheduler::assign_levels() {
  const auto& cands = e_.cands;
  const std::vector<int>& source = classes_.source;
  match_.resize(e_.w.groups.size());
  level_of_.resize(e_.w.groups.size());
  for (size_t gi = 0; gi < e_.w.groups.size(); ++gi)
    for (size_t ci = 0; ci < cands[gi].size(); ++ci) {
      const int k = source[gi] >= 0 ? matching_candidate(cands[static_cast<size_t>(source[gi])], cands[gi], ci) : -1;
      match_[gi].push_back(k);
      level_of_[gi].push_back(k >= 0 ? std::max(cands[gi][ci].level, cands[static_cast<size_t>(source[gi])][static_cast<size_t>(k)].level)
                                     : cands[gi][ci].level);
    }
  promote_sure_fits(e_.w, cands, o_, source, match_, level_of_);
  for (const auto& cs : cands)
    for (const auto& c : cs) max_level_ = std::max(max_level_, c.level);
}

// Within a level, tables by size, those whose setup is still in memory first (a setup is as
// costly as a few measurements; more tables than the cache holds would pay it at every level
// otherwise); class members after their representative (they take its times).
std::vector<size_t> MeasureScheduler::level_order() const {
  std::vector<size_t> order(e_.w.groups.size());
  for (size_t gi = 0; gi < order.size(); ++gi) order[gi] = gi;
  std::stable_partition(order.begin(), order.end(), [&](size_t gi) { return benches_->has(gi); });
  std::stable_partition(order.begin(), order.end(), [&](size_t gi) { return classes_.source[gi] < 0; });
  return order;
}

// The class representative's matching candidate (measured before this one), whose time this
// one takes; null when it is measured itself.
const model::TuneCandidate* MeasureScheduler::representative_of(size_t gi, size_t ci) const {
  if (match_[gi][ci] < 0) return nullptr;
  const size_t src = static_cast<size_t>(std::max(0, classes_.source[gi]));
  return &r_.candidates[e_.index[src][static_cast<size_t>(match_[gi][ci])]];
}

// One candidate: taken from its representative, skipped (stopped, or it would not finish in
// time), or measured here.
void MeasureScheduler::schedule(size_t gi, size_t ci) {
  const TableGroup& g = e_.w.groups[gi];
  const Candidate& c = e_.cands[gi][ci];
  model::TuneCandidate& m = result(gi, ci);
  const model::TuneCandidate* same = representative_of(gi, ci);
  // Its error is this table's own when the table has recorded weights (then a setup is needed,
  // measure_here()); on synthetic weights it is the representative's (synthetic weights of one
  // shape are one distribution), nothing is set up and nothing costs time: it is taken even
  // after measuring stopped.
  const bool own_error = g.snapshot != nullptr && !lossless(c.strategy, c.baseline);
  if (same && !own_error) {
    take_from_representative(gi, ci, *same);
    return finish(gi, ci);
  }
  if (stopped()) {
    m.note = "not measured: " + std::string(model::to_string(stop_));
    m.not_timed = model::NotTimedCause::kStopped;
    ++done_;
    return;
  }
  if (same && !same->usable()) same = nullptr;  // recorded weights, nothing to take: measured here
  if (would_not_finish(gi, c, same != nullptr)) {
    m.note = kNotInTime;
    m.not_timed = model::NotTimedCause::kWouldNotFinish;
    ++done_;
    return;
  }
  report(g.name, c.spec);
  measure_here(gi, ci, same);
}

// A member on synthetic weights: the representative's time, and its error (or why it has none).
void MeasureScheduler::take_from_representative(size_t gi, size_t ci, const model::TuneCandidate& same) {
  const Candidate& c = e_.cands[gi][ci];
  model::TuneCandidate& m = result(gi, ci);
  const size_t src = static_cast<size_t>(classes_.source[gi]);
  const std::string& from = e_.w.groups[src].name;
  if (same.usable()) {
    borrow_timing(m, same, r_.candidates[e_.index[src][0]], e_.w.groups[gi].lookups_per_step,
                  e_.w.groups[src].lookups_per_step, from, classes_.twin[gi]);
    m.error = lossless(c.strategy, c.baseline) ? 0.0 : same.error;
    if (!lossless(c.strategy, c.baseline)) m.note += "; error on " + from + "'s synthetic weights (the same distribution)";
    apply_held_out(m, c);
  } else if (same.not_timed == model::NotTimedCause::kOverErrorLimit) {
    m.error = same.error;
    m.not_timed = same.not_timed;
    m.note = same.note + " (on " + from + "'s synthetic weights, the representative of its class)";
    m.note_reasons = same.note_reasons;
  } else {
    // Why the representative was not measured is why this one was not (cancelled, the time
    // limit, an error).
    const bool said = same.not_timed != model::NotTimedCause::kNone;
    const std::string prefix = said ? "" : "not measured: ";
    m.note = prefix + (same.note.empty() && !said ? std::string("no time") : same.note) + "; its class's representative " + from +
             " was not measured";
    m.note_reasons = model::shifted(same.note_reasons, static_cast<uint32_t>(prefix.size()));
    m.not_timed = model::NotTimedCause::kRepresentativeNot;
  }
}

double MeasureScheduler::elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

// Planning, saving and printing walk every candidate of every table, as enumerating did:
// measuring stops as long before the limit as enumerating took (at most a tenth of the limit),
// or as those are expected to take (after_measuring_s(), for the tables whose baseline is
// measured so far: the plan's knapsack items) if longer, at most half the limit, so that the
// whole run, not only its measuring, ends within the limit. Recounted as tables get their
// baselines, at most every 0.1 s.
void MeasureScheduler::update_limit() {
  if (o_.time_limit_s <= 0) return;
  const double now = elapsed();
  if (counted_at_ >= 0 && now - counted_at_ < 0.1) return;
  counted_at_ = now;
  size_t items = 0;
  for (size_t gi = 0; gi < e_.index.size(); ++gi) items += !e_.index[gi].empty() && r_.candidates[e_.index[gi][0]].usable();
  const double after = std::min(std::max(std::min(enumerate_s_, 0.1 * o_.time_limit_s), after_measuring_s(items, r_.candidates_total)),
                                o_.time_limit_s / 2);
  limit_ = std::max(1e-3, o_.time_limit_s - after);
}

// Ctrl-C or the time limit: once stopped, every candidate still to measure says why.
bool MeasureScheduler::stopped() {
  using model::StopReason;
  if (stop_ == StopReason::kNone && cancel_ && cancel_->load()) stop_ = StopReason::kCancelled;
  update_limit();
  if (stop_ == StopReason::kNone && limit_ > 0 && elapsed() >= limit_) stop_ = StopReason::kTimeLimit;
  return stop_ != StopReason::kNone;
}

double MeasureScheduler::predict(const Candidate& c, size_t gi, double elems) const {
  auto it = cost_.find(c.strategy);
  if (it != cost_.end()) return it->second.second * std::max(1.0, elems / it->second.first);
  // Not measured yet: a multiple of this table's baseline (encoders that fit the table cost
  // more than ones that convert rows).
  const bool fitted = c.strategy == "pq" || c.strategy == "lowrank" || c.strategy == "multihash" || c.strategy == "qr";
  return baseline_s_[gi] >= 0 ? baseline_s_[gi] * (fitted ? 6.0 : 1.5) : 0.0;
}

// The error gate's check (fitting PQ or low rank to the reference rows is not cheap); not seen
// yet: as much as measuring it.
double MeasureScheduler::predict_gate(const Candidate& c, size_t gi, double elems) const {
  auto it = gate_cost_.find(c.strategy);
  if (it != gate_cost_.end()) return it->second.second * std::max(1.0, elems / it->second.first);
  return predict(c, gi, elems);
}

double MeasureScheduler::predict_setup(size_t gi, double elems) const {
  if (benches_->has(gi)) return 0.0;
  if (setup_s_[gi] >= 0) return setup_s_[gi];
  return setup_cost_.first > 0 ? setup_cost_.second * elems / setup_cost_.first : 0.0;
}

// A gated candidate may end at its error check: its setup and that check must fit; one timed
// on its representative needs only the setup (for its own error).
bool MeasureScheduler::would_not_finish(size_t gi, const Candidate& c, bool timed_elsewhere) const {
  const TableGroup& g = e_.w.groups[gi];
  const double elems = static_cast<double>(measured_rows(g.rows, g.dim, cap_)) * g.dim;
  const bool gated = gate_ && !lossless(c.strategy, c.baseline);
  return too_late(predict_setup(gi, elems) + (timed_elsewhere ? 0.0 : gated ? predict_gate(c, gi, elems) : predict(c, gi, elems)));
}

// Sets up the table (or reuses its setup), then: the error of a candidate timed on its
// representative, or the error gate and the timing. A spec the kernels refuse, or one that does
// not fit in memory, is noted.
void MeasureScheduler::measure_here(size_t gi, size_t ci, const model::TuneCandidate* same) {
  const TableGroup& g = e_.w.groups[gi];
  const Candidate& c = e_.cands[gi][ci];
  model::TuneCandidate& m = result(gi, ci);
  const uint64_t rows = measured_rows(g.rows, g.dim, cap_);
  const double elems = static_cast<double>(rows) * g.dim;
  const auto started = Clock::now();
  try {
    TableBench& b = bench_for(gi, rows, started);
    if (same) {
      // Timed on the representative; the error is this table's own (its recorded weights):
      // exact on the reference rows for a row format, the full table's for a fitted one.
      const size_t src = static_cast<size_t>(classes_.source[gi]);
      borrow_timing(m, *same, r_.candidates[e_.index[src][0]], g.lookups_per_step, e_.w.groups[src].lookups_per_step,
                    e_.w.groups[src].name, classes_.twin[gi]);
      m.error = row_format(c.strategy) ? b.reference_error(c, o_) : b.full_error(c, o_);
      return finish(gi, ci);
    }
    if (gate_ && !lossless(c.strategy, c.baseline) && !passes_gate(b, gi, ci, elems)) return;
    time_candidate(b, gi, ci, elems);
  } catch (const std::bad_alloc&) {
    m.note = "not measured: does not fit in memory at " + std::to_string(rows) + " rows";
    model::say(m.note, m.note_reasons, {.code = model::Reason::kLowerMeasureBytes});
    m.not_timed = model::NotTimedCause::kOutOfMemory;
  } catch (const std::exception& e) {
    m.note = std::string("not measured: ") + e.what();
    m.not_timed = model::NotTimedCause::kFailed;
  }
  finish(gi, ci);
}

// The group's measurement setup: the one kept from an earlier level, else made now (its cost
// noted for predict_setup()).
TableBench& MeasureScheduler::bench_for(size_t gi, uint64_t rows, Clock::time_point started) {
  if (TableBench* b = benches_->get(gi)) return *b;
  const TableGroup& g = e_.w.groups[gi];
  const double elems = static_cast<double>(rows) * g.dim;
  benches_->make_room_for(rows * g.dim * 4);
  TableBench* b = benches_->put(gi, std::make_unique<TableBench>(g, o_, cap_, table_seed(o_.seed, g.name)));
  setup_s_[gi] = std::chrono::duration<double>(Clock::now() - started).count();
  if (elems >= setup_cost_.first) setup_cost_ = {elems, setup_s_[gi]};
  return *b;
}

// The error gate: the error on the reference rows first; what is clearly over the limit is
// neither encoded in full nor timed, and what passes is timed only if it still fits in time.
// False when the candidate is done with (its note says why).
bool MeasureScheduler::passes_gate(TableBench& b, size_t gi, size_t ci, double elems) {
  const Candidate& c = e_.cands[gi][ci];
  model::TuneCandidate& m = result(gi, ci);
  const auto started = Clock::now();
  const double e = b.reference_error(c, o_);
  auto& gc = gate_cost_[c.strategy];
  if (elems >= gc.first) gc = {elems, std::chrono::duration<double>(Clock::now() - started).count()};
  const bool exact = row_format(c.strategy);
  if (e > gate_margin(c.strategy) * o_.max_error) {
    m.error = e;
    m.not_timed = model::NotTimedCause::kOverErrorLimit;
    m.note = std::string("not timed: error ") + (exact ? "" : "about ") + number(e, "%.3g") +
             (exact ? "" : " (on the reference rows)") + ", ";
    model::say(m.note, m.note_reasons, {.code = model::Reason::kOverMaxError, .value = o_.max_error});
    finish(gi, ci);
    return false;
  }
  if (too_late(predict(c, gi, elems))) {
    m.note = kNotInTime;
    m.not_timed = model::NotTimedCause::kWouldNotFinish;
    ++done_;
    return false;
  }
  return true;
}

// Times the candidate (paired with the group's baseline once that is measured), or models its
// time for the GPU that is not here with the error as measured; notes what it cost.
void MeasureScheduler::time_candidate(TableBench& b, size_t gi, size_t ci, double elems) {
  const Candidate& c = e_.cands[gi][ci];
  model::TuneCandidate& m = result(gi, ci);
  const auto& base = result(gi, 0);
  const double base_us = base.usable() ? base.step_us : std::numeric_limits<double>::quiet_NaN();
  const auto started = Clock::now();
  const Measurement x = device_model_ ? model_candidate(b, e_.w.groups[gi], c, *device_model_, o_)
                                      : b.measure(c, backend_, o_, base_us);
  record_measurement(m, x);
  apply_held_out(m, c);
  const double took = std::chrono::duration<double>(Clock::now() - started).count();
  if (c.baseline) baseline_s_[gi] = took;
  auto& k = cost_[c.strategy];
  if (elems >= k.first) k = {elems, std::max(took, elems == k.first ? k.second : 0.0)};
}

// Variants (the optimizer lever, ...) share their format's measurement, after every format is
// measured.
void MeasureScheduler::share_variants() {
  for (size_t gi = 0; gi < e_.w.groups.size(); ++gi)
    for (size_t ci = 0; ci < e_.cands[gi].size(); ++ci) {
      const int from = e_.cands[gi][ci].measure_as;
      if (from < 0) continue;
      copy_variant(result(gi, ci), result(gi, static_cast<size_t>(from)), e_.cands[gi][ci]);
      ++done_;
    }
}

// The progress callback: candidates done of all, elapsed, and the remaining time (the rate so
// far, no later than the limit).
void MeasureScheduler::report(const std::string& table, const std::string& candidate) {
  if (!progress_) return;
  TuneProgress p;
  p.done = done_;
  p.total = r_.candidates_total;
  p.elapsed_s = elapsed();
  if (done_ > 0) {
    const double est = p.elapsed_s / static_cast<double>(done_) * static_cast<double>(p.total - done_);
    p.remaining_s = limit_ > 0 ? std::min(est, std::max(0.0, limit_ - p.elapsed_s)) : est;
  }
  p.table = table;
  p.candidate = candidate;
  progress_(p);
}

void MeasureScheduler::finish(size_t gi, size_t ci) {
  ++done_;
  report(e_.w.groups[gi].name, e_.cands[gi][ci].spec);
}

}  // namespace edo::tuner
