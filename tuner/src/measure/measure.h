// Measuring one table group's candidates on a backend (docs/tuning.md "Measurement"):
//
//  * Access pattern: the group's recorded counts as an AccessModel (the most-read rows with
//    their counts, the rest of the lookups spread evenly over the other rows that were read);
//    index batches are drawn from it, so the measured lookups hit the same hot set the job did.
//  * Scaled measurement: a table whose fp32 weights exceed the measurement memory (`cap_bytes`)
//    is measured on R' = cap / (4 * dim) rows (at least min(rows, 2^18)): the hottest rows keep
//    their counts at distinct positions (up to R'/2 of them), the remaining lookups spread
//    evenly over all the other positions (as wide a tail as R' rows allow). Time is per lookup, so the step time scales with the recorded lookups per step;
//    offload keeps its cache in rows (capped at R'), hashing keeps its rows per bucket.
//  * Weights: the recording's snapshot rows where there is one (the rest filled with values of
//    the snapshot's per-column mean and spread), otherwise synthetic N(0, 1) weights.
//  * Error: access-frequency-weighted relative L2 error over reference rows, each weighing
//    (recorded count) x (rows it stands for): the snapshot's rows, or for synthetic weights
//    the hot rows and a uniform sample of the other rows read.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "candidates.h"
#include "step_timing.h"
#include "edo/kernels/backend.h"
#include "edo/kernels/strategy.h"
#include "edo/kernels/workload.h"
#include "edo/tuner/tuner.h"
#include "workload.h"

namespace edo::tuner {

struct AccessModel {
  std::vector<uint64_t> hot_rows;  // most read first (original row ids)
  std::vector<double> hot_counts;
  double tail_lookups = 0;         // lookups on the other rows
  uint64_t tail_rows = 0;          // rows those lookups went to (read at least once, not hot)
  uint64_t rows = 0;
};
AccessModel access_model(const stats::TableAggregate& counts, uint64_t rows, size_t max_hot);

// The rows a table is measured on: all of them when its fp32 weights fit `cap_bytes`, else
// cap / (4 * dim), but never fewer than min(rows, 2^18).
uint64_t measured_rows(uint64_t rows, uint32_t dim, uint64_t cap_bytes);

// A kernels spec for the measured table: the candidate's spec with its row-count parameters
// rescaled from `rows` to `measured` (offload: same cache rows, capped; hashing: same rows per
// bucket).
kernels::StrategySpec measured_spec(const Candidate& c, uint64_t rows, uint64_t measured);

struct Measurement {
  double step_us = 0;
  // The spread of the repetitions (their range), as step times; NaN when
  // the time is modelled from the baseline's (offload on the CPU: the caller shifts the
  // baseline's interval).
  double step_us_lo = std::numeric_limits<double>::quiet_NaN();
  double step_us_hi = std::numeric_limits<double>::quiet_NaN();
  double error = 0;
  // What step_us covers (step_timing.h step_covers()) and its forward, backward and update
  // parts, which add up to it (NaN for an inference step: the forward is all of it).
  std::string covers;
  double forward_us = std::numeric_limits<double>::quiet_NaN();
  double backward_us = std::numeric_limits<double>::quiet_NaN();
  double update_us = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> hit_rate;  // offload
  uint64_t measured_rows = 0;
  std::string note;
};

// The reference rows of an error estimate: fp32 values and the weight of each row.
struct ReferenceRows {
  std::vector<uint64_t> positions;  // rows of the measured table
  std::vector<float> values;        // positions.size() x dim, the exact (reference) weights
  std::vector<double> weights;      // count x rows stood for
};
// sqrt(sum w ||x - decode(x)||^2 / sum w ||x||^2) over the reference rows of `table`.
double weighted_error(const kernels::EncodedTable& table, const ReferenceRows& ref);

// One group's measurement setup, built once and used for each of its candidates.
class TableBench {
 public:
  TableBench(const TableGroup& group, const TuneOptions& options, uint64_t cap_bytes, uint64_t seed);
  uint64_t rows() const { return rows_; }            // measured rows R'
  // Host memory it may hold: the weights and the baseline's encoded copy (timed next to each
  // candidate).
  // Training: the baseline's optimizer state and dense gradient too.
  uint64_t bytes() const {
    const uint64_t w = weights_.size() * sizeof(float);
    if (!train_.training) return 2 * w;
    const double state = static_cast<double>(kernels::state_floats_per_row(train_.spec.optimizer, g_.dim)) / std::max(1u, g_.dim);
    return 2 * w + static_cast<uint64_t>(static_cast<double>(w) * (state + (train_.spec.dense_gradient ? 1.0 : 0.0)));
  }
  bool recorded_weights() const { return recorded_; }
  const ReferenceRows& reference() const { return ref_; }
  const std::vector<uint64_t>& counts() const { return counts_; }
  const kernels::Workload& workload() const { return work_; }
  const std::vector<float>& weights() const { return weights_; }

  // The candidate's error on the reference rows alone, encoded as a table of their own (the
  // error gate: cheap, no lookups timed). Exact for row formats (fp16, bf16, fp8, int8, int4:
  // each row is encoded on its own, and measure() computes the error on the same rows); an
  // estimate for the fitted formats (PQ, low rank, multi-hash, QR: fitted on these rows, with
  // the table's rows per bucket), which tends to be lower than on the whole table (fitted
  // in-sample). 0 for the lossless strategies (baseline, offload, pruning).
  double reference_error(const Candidate& c, const TuneOptions& options) const;

  // The candidate's error as measure() computes it (the whole measured table encoded, the
  // error over the reference rows), without timing anything.
  double full_error(const Candidate& c, const TuneOptions& options) const;

  // Hit rate of the offload LRU (edo/kernels/lru.h) with `slots` rows on a stream of accesses
  // drawn from the access model in batches of one step's lookups (as many warm-up accesses as
  // counted ones, each at least a pass and four times the slots), deterministic for a seed.
  double lru_hit_rate(uint64_t slots, uint64_t seed) const;

  // The hit rate the plan gives an offload candidate (`spec` as measured): the held-out replay
  // of the recorded order when there is one (cache_replay.h: what the cache hits on lookups it
  // was not fitted to); else, with `fresh_lru` (the index batches repeat, so an LRU holding
  // all the rows they read would hit every access after the first pass), an LRU policy's rate
  // on a fresh stream from the access model (lru_hit_rate()); else `measured`, what the
  // backend's cache hit (< 0: none).
  double offload_hit_rate(const Candidate& c, const kernels::StrategySpec& spec, double measured, bool fresh_lru,
                          const TuneOptions& o) const;

  // Encodes, checks the error, times the lookups. Throws std::invalid_argument for a spec the
  // kernels refuse (reported as the candidate's note) and std::bad_alloc when it does not fit.
  //
  // `baseline_us`: the group's measured baseline step time (NaN until the baseline is
  // measured). Given it, a candidate is timed paired with the baseline (their repetitions
  // alternate; the step time is baseline_us times the median ratio), so a load on the machine
  // that comes and goes slows both alike instead of deciding which is faster. On the CPU
  // backend an offloaded table is the baseline's lookups plus the modelled transfer of the
  // misses measured here (only the passes the hit rate needs are run).
  //
  // A training recording (step_timing.h): the forward, backward and optimizer update of each
  // step, timed on the backend where it can train the format (paired with the baseline's
  // training step), else the forward timed and the backward and update modelled
  // (measure_training).
  Measurement measure(const Candidate& c, kernels::Backend& backend, const TuneOptions& options,
                      double baseline_us = std::numeric_limits<double>::quiet_NaN());

 private:
  // The measured rows encoded as `spec` (with their recorded counts and the run's seed): what
  // every candidate's error and timing start from.
  std::unique_ptr<kernels::EncodedTable> encode_measured(const kernels::StrategySpec& spec, const TuneOptions& options) const;
  // The baseline's encoded table, made on first use and kept for this setup's paired timing.
  kernels::EncodedTable& baseline_table(const TuneOptions& options);  // (training updates it in place)

  // The constructor's steps (measure.cpp): where the recorded counts go among the measured
  // rows, the index batches drawn from them, and the weights with the error's reference rows.
  struct Placement;
  Placement place_counts(const AccessModel& m, const std::vector<int64_t>& perm);
  void draw_batches(const Placement& at, const std::vector<int64_t>& perm, const TuneOptions& o, kernels::Rng& rng);
  void place_snapshot(const model::WeightSnapshot& s, const Placement& at, const std::vector<int64_t>& perm);
  void sample_synthetic_reference(const AccessModel& m, const Placement& at, const std::vector<int64_t>& perm,
                                  kernels::Rng& rng);
  void uniform_reference_if_unread(const std::vector<int64_t>& perm);

  const TableGroup& g_;
  uint64_t rows_ = 0;
  bool recorded_ = false;
  std::vector<float> weights_;       // rows_ x dim
  std::vector<uint64_t> counts_;     // rows_: recorded counts at their measured positions
  ReferenceRows ref_;
  kernels::Workload work_;
  double lookups_per_pass_ = 0;
  // The access model the batches are drawn from: hot rows' counts, then the tail's lookups.
  std::vector<double> model_weights_;
  uint64_t hot_ = 0, tail_ = 0;
  uint64_t batch_ = 1;  // lookups per batch (one step's, at most TuneOptions::max_batch)
  // The baseline, encoded and loaded once per setup, for paired timing.
  std::unique_ptr<kernels::EncodedTable> base_table_;
  std::unique_ptr<kernels::LoadedTable> base_loaded_;
  // Training (step_timing.h): the group's step, the baseline's training table (paired with
  // candidates trained on the backend) and the baseline's phases as measured here (the
  // reference of a candidate whose backward and update are modelled).
  TrainingStep train_;
  double distinct_per_batch_ = 0;  // distinct rows one batch reads, on average
  std::unique_ptr<kernels::TrainingTable> base_train_;
  bool base_known_ = false, base_trained_ = false;
  double base_fwd_us_ = 0, base_bwd_us_ = 0, base_upd_us_ = 0, base_row_bytes_ = 0;
  // One candidate's training step (measure() for a training recording), and its steps
  // (measure_training.cpp): the passes timed, their median, the phases modelled.
  Measurement measure_training(const Candidate& c, kernels::Backend& backend, const TuneOptions& o, double baseline_us);
  struct Phases;
  struct PassScale;
  struct PhaseReps;
  PassScale pass_scale(const TrainingStep& step, const kernels::EncodedTable& table) const;
  PhaseReps time_training(kernels::TrainingTable& train, const TrainingStep& step, const PassScale& scale,
                          kernels::Backend& backend, const TuneOptions& o, bool paired);
  PhaseReps time_forward(kernels::LoadedTable& loaded, const PassScale& scale, kernels::Backend& backend,
                         const TuneOptions& o, bool paired);
  Phases modelled_backward_update(const PassScale& scale, double fwd_us, bool scale_base) const;
  std::string model_offload_step(const Candidate& c, const kernels::StrategySpec& spec, kernels::LoadedTable& loaded,
                                 const TrainingStep& step, const PassScale& scale, const TuneOptions& o, Phases& med,
                                 Measurement& out) const;
  std::string model_untrained_phases(const Candidate& c, const kernels::Backend& backend, const PassScale& scale,
                                     bool scale_base, Phases& med, double& lo, double& hi) const;
  void remember_baseline(const Phases& med, bool trained, const kernels::EncodedTable& table);
};

// Host-link bandwidth the CPU backend's offload misses are charged at (bytes/s): a CPU
// backend reads a "device" cache and the host table from the same memory, so the transfer a
// GPU would make for each miss cannot be measured there. 25e9 = PCIe 4.0 x16 in practice.
inline constexpr double kModelledHostLinkBytesPerS = 25e9;

// The error gate skips a candidate when its reference-rows error exceeds the limit by this
// factor: 1 for row formats (exact), 1.25 for PQ and low rank (fitted on the reference rows
// in-sample: their estimate is within 3 % of the table's error in the tests), 3 for
// the hashing formats (multi-hash, QR: on the reference rows alone other rows share a bucket
// or a quotient row than in the table, and the estimate overstates the table's error by up
// to about 2x in the tests).
double gate_margin(const std::string& strategy);

// Strategies whose rows are encoded each on its own (the error gate is exact for them).
bool row_format(const std::string& strategy);
// Strategies that lose nothing on the rows the job reads (no error gate).
bool lossless(const std::string& strategy, bool baseline);

// The median of repeated timings (the upper middle one of an even count); v is not empty.
double median_of(std::vector<double> v);

// A weight snapshot's values (fp32, fp16 or bf16) as fp32, row-major.
std::vector<float> snapshot_fp32(const model::WeightSnapshot& s);

}  // namespace edo::tuner
