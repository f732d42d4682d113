// Measuring every enumerated candidate within --time-limit (docs/tuning.md "Measurement",
// "Time limit", "Representatives"): which candidates are timed, in what order, what is skipped
// when it would not finish, the progress shown, and how each result lands in the TuneResult.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "candidates.h"
#include "edo/kernels/backend.h"
#include "edo/model/tune.h"
#include "edo/tuner/device_profile.h"
#include "edo/tuner/tuner.h"
#include "measure.h"
#include "representatives.h"
#include "workload.h"

namespace edo::tuner {

// Enumerate's result (tuner.cpp): the workload's groups, every tuned group's candidates (within
// --strategies) and where each candidate's result is in TuneResult::candidates.
struct Enumerated {
  Workload w;
  std::vector<std::vector<Candidate>> cands;  // per group
  std::vector<std::vector<size_t>> index;     // group, candidate -> result index
};

// The seed of one table's synthetic weights, batches and simulations: the run's --seed mixed
// with the table's name, so that each table draws its own and a fixed seed repeats them all.
uint64_t table_seed(uint64_t seed, const std::string& table);

// Measures the enumerated candidates level by level (every table's baseline first, then the
// cheap formats, then the rest); within a level the tables whose measurement setup is still in
// memory first, and a timing class's members after its representative (they take its times).
// What would not finish within the time limit is skipped with a note.
class MeasureScheduler {
 public:
  using Clock = std::chrono::steady_clock;
  // `device_model`: times modelled for that GPU instead of measured on `backend` (null: measured).
  // `t0`: when the run started (the time limit counts from it).
  MeasureScheduler(Enumerated& e, model::TuneResult& r, kernels::Backend& backend, const TuneOptions& o,
                   const ProgressFn& progress, const std::atomic<bool>* cancel, Clock::time_point t0,
                   const DeviceProfile* device_model);
  MeasureScheduler(const MeasureScheduler&) = delete;
  MeasureScheduler& operator=(const MeasureScheduler&) = delete;
  ~MeasureScheduler();

  // Fills every candidate's measurement (or its note saying why it has none); returns the
  // reason measuring stopped early (kNone when it did not).
  model::StopReason run();

 private:
  class BenchCache;
  // Which candidates, in what order.
  void assign_levels();
  std::vector<size_t> level_order() const;
  void schedule(size_t gi, size_t ci);
  const model::TuneCandidate* representative_of(size_t gi, size_t ci) const;
  // The deadline and what measuring costs.
  double elapsed() const;
  void update_limit();
  bool stopped();
  bool too_late(double need) const { return limit_ > 0 && elapsed() + need > limit_; }
  double predict(const Candidate& c, size_t gi, double elems) const;
  double predict_gate(const Candidate& c, size_t gi, double elems) const;
  double predict_setup(size_t gi, double elems) const;
  bool would_not_finish(size_t gi, const Candidate& c, bool timed_elsewhere) const;
  // Measuring one candidate and collecting its result.
  void take_from_representative(size_t gi, size_t ci, const model::TuneCandidate& same);
  void measure_here(size_t gi, size_t ci, const model::TuneCandidate* same);
  TableBench& bench_for(size_t gi, uint64_t rows, Clock::time_point started);
  bool passes_gate(TableBench& b, size_t gi, size_t ci, double elems);
  void time_candidate(TableBench& b, size_t gi, size_t ci, double elems);
  void share_variants();
  // Progress.
  void report(const std::string& table, const std::string& candidate);
  void finish(size_t gi, size_t ci);
  model::TuneCandidate& result(size_t gi, size_t ci) { return r_.candidates[e_.index[gi][ci]]; }

  Enumerated& e_;
  model::TuneResult& r_;
  kernels::Backend& backend_;
  const TuneOptions& o_;
  const ProgressFn& progress_;
  const std::atomic<bool>* cancel_;
  const Clock::time_point t0_;
  const DeviceProfile* device_model_;
  const uint64_t cap_;  // fp32 bytes of one measured table at most
  const bool gate_;     // an error limit is set: lossy candidates pass the error gate first

  // One table of each timing class is measured; the others take its times (representatives.h).
  TimingClasses classes_;
  // Per candidate: the representative's candidate that stands for it (-1: none, measured
  // here), and the level it is taken at (not before its source's is measured).
  std::vector<std::vector<int>> match_, level_of_;
  int max_level_ = 0;

  double enumerate_s_ = 0;                 // what enumerating took (planning takes about as long)
  double limit_ = 0.0, counted_at_ = -1.0;  // when measuring stops; when that was last counted
  std::unique_ptr<BenchCache> benches_;
  // What measuring costs, to skip what would not finish in time: per strategy the seconds it
  // took on the largest table measured so far (elements = measured rows x dim), the error
  // gate's check likewise; per group the seconds its measurement setup and baseline took.
  std::map<std::string, std::pair<double, double>> cost_, gate_cost_;  // strategy -> (elements, seconds)
  std::vector<double> setup_s_, baseline_s_;
  // A setup is about linear in the measured elements (weights, permutation, batches): a group
  // never set up is predicted from the largest setup so far.
  std::pair<double, double> setup_cost_{0, 0};  // (elements, seconds)
  uint64_t done_ = 0;
  model::StopReason stop_ = model::StopReason::kNone;
};

}  // namespace edo::tuner
