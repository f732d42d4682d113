// edo's tuner (docs/tuning.md): for every table of a recording, every memory-saving
// strategy is measured on this machine's GPU or CPU with the job's own access pattern (index
// batches drawn from the recorded per-row counts) and its error computed on the job's weights
// (the recording's weight snapshot, or synthetic weights of the same shape when there is none);
// a multiple-choice knapsack then picks one strategy per table: least step time within a
// device-memory budget and a per-table error limit, with the Pareto frontier of whole plans.
// A GPU job's recording tuned without a GPU (or any recording with --target-device) has its
// step times modelled for the GPU instead (edo/tuner/device_model.h); the result says which
// (TuneResult::timing_kind), never mixing the two.
//
// Used by `edo tune` and by the dashboard. tune() is synchronous and may run for minutes: call
// it off the UI thread. It reports progress through a callback (called on the tuning thread)
// and stops cleanly when the cancel flag is set or the time limit passes, keeping every
// candidate measured so far (the plan is made from those). It has no global state: two tunes
// may run at once (they compete for the machine).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/tune.h"
#include "edo/model/weights.h"

namespace edo::kernels {
class Backend;
}

namespace edo::tuner {

// The per-table error limit when the user gives none (`edo tune` without --max-error): 0.02
// admits fp16, bf16 and row-wise int8 (about 0.0002, 0.002 and 0.005 on Gaussian rows; int8
// reaches 0.02 only on rows whose largest value is ~9x their RMS) and keeps out fp8 (about
// 0.025), int4 (about 0.09) and the fitted formats (PQ, low rank, hashing: 0.1 to 0.8 on
// weights without structure). Lossy plans are asked for with a larger --max-error (or inf).
inline constexpr double kDefaultMaxError = 0.02;

struct TuneOptions {
  uint64_t budget_bytes = 0;           // device memory for all tables (weights + optimizer state + metadata), per device
  // Devices the tables are placed on (docs/tuning.md "Placement"): the plan's candidates fit
  // devices x budget_bytes together and its tables are placed table-wise, row-wise or
  // column-wise so that each device holds at most budget_bytes. 1: today's single-device plan.
  uint32_t devices = 1;
  // The other tiers' budgets for the whole plan (`edo tune --host-budget`, `--ssd-budget`; 0:
  // no limit): a plan's host bytes (offload's tables, the SSD tier's host caches) and SSD bytes
  // (the SSD tier's tables) fit them. Either one given offers the SSD tier (ssd candidates) to
  // the tables that do not fit the host budget or what the device budget leaves them.
  uint64_t host_budget_bytes = 0;
  uint64_t ssd_budget_bytes = 0;
  // Per-table error limit (infinity: none). Candidates over it are not chosen; with a finite
  // limit, those whose error (computed first, on the reference rows) is clearly over it are
  // not timed at all (docs/tuning.md "Error gate").
  double max_error = kDefaultMaxError;
  // What the plan optimises (docs/tuning.md "Objective"):
  //  least change: the plan that fits the budget with the least loss (the sum over tables of
  //    the error, plus kRetrainingLoss for each table that needs retraining), then the fastest:
  //    no lossy format and no retraining unless the budget needs them. An offload that slows
  //    the step counts the loss of an error of kNegligibleError (explain.h) when the table has a
  //    format of smaller error that fits and is no slower (plan.cpp charge_slow_offloads);
  //  speed: the fastest plan within the error limit (then the least loss, then bytes).
  model::Objective objective = model::Objective::kLeastChange;
  // Candidates that drop or merge rows by what they were fitted on (pruning) are chosen only
  // when their loss was measured on held-out lookups, unless this is set (`edo tune
  // --allow-unvalidated`): the recording could not say, and the user takes the risk.
  bool allow_unvalidated = false;
  // The run is a fine-tune: freezing a training table is offered (docs/tuning.md).
  bool fine_tune = false;
  std::string backend = "auto";        // "auto" (CUDA when a device is usable, else CPU), "cuda", "cpu"
  // A GPU to model the times for instead of measuring them (a stored profile's name or an
  // edo.device/1 / edo.bench/1 file: edo/tuner/device_profile.h); "": measured, except that a
  // GPU recording tuned by backend "auto" on a CPU is modelled for its own GPU when a stored
  // profile has its name (tuner/src/measure/timing_target.h).
  std::string target_device;
  std::string tables = "*";            // glob over table names: only matching tables are tuned
  // Comma-separated strategy names to consider besides each table's baseline (fp16, bf16, fp8,
  // int8, int4, offload, pruned, lowrank, pq, multihash, qr, mch, ssd, sparse_gradient); empty:
  // all of them.
  std::string strategies;
  double time_limit_s = 0;             // 0: none; else measuring stops by then and the plan uses what was measured
  uint64_t seed = 42;                  // index batches, synthetic weights, k-means, hashing
  int threads = 0;                     // CPU threads (0: all this process may use)
  // Measurement: timed passes (median), untimed warm-up passes, rotating index batches.
  int reps = 5;
  int warmup = 1;
  int batches = 4;
  double min_rep_s = 0.01;  // a timed repetition runs passes over the batches for at least this long
  // Indices per timed batch at most; a step with more lookups is timed on this many and scaled
  // linearly (lookup time is linear in the lookups once a batch fills the machine).
  uint64_t max_batch = uint64_t{1} << 18;
  // Bytes of fp32 weights one measured table may take on the backend (0: decided by the
  // backend: an eighth of available host memory, at most 256 MiB on the CPU and 1 GiB on a
  // GPU). A larger table is measured at a scaled size (docs/tuning.md, "Scaled measurement").
  uint64_t measure_bytes = 0;
  // Tables are grouped into timing classes (shape, dtype, rows and lookups per step in
  // factor-4 buckets, LRU curve shape: docs/tuning.md "Representatives"); one representative
  // of each class is measured and the others' times are predicted from its per-lookup time
  // (each candidate says which, TuneCandidate::timing_kind). false: every table is measured but
  // for exact twins (same shape, dtype and access counts), which are timed once either way.
  bool representatives = true;
};

struct TuneProgress {
  uint64_t done = 0;       // candidates finished (measured or skipped)
  uint64_t total = 0;      // candidates in all
  double elapsed_s = 0;
  double remaining_s = -1; // estimate; -1 while unknown
  std::string table;       // what is being measured now
  std::string candidate;
};
using ProgressFn = std::function<void(const TuneProgress&)>;

// A tuning that cannot start (no table matches --tables, a bad option, no CUDA device for
// backend "cuda"): one line naming the problem and the fix.
// Its message is in the edo command's words; `reasons` are marked in it (edo/model/tune_reasons.h)
// for a front end that words them its own way.
class TuneError : public std::runtime_error {
 public:
  explicit TuneError(const std::string& what, std::vector<model::TuneReason> reasons = {})
      : std::runtime_error(what), reasons(std::move(reasons)) {}
  std::vector<model::TuneReason> reasons;
};

// A bad option value (std::invalid_argument, as every other) whose message marks its reasons.
class TuneArgumentError : public std::invalid_argument {
 public:
  TuneArgumentError(const std::string& what, std::vector<model::TuneReason> reasons)
      : std::invalid_argument(what), reasons(std::move(reasons)) {}
  std::vector<model::TuneReason> reasons;
};

// Measures and plans. `weights` are the recording's snapshots (db::load_weight_snapshots), may
// be empty. The result holds every candidate (measured or with a note saying why not), the plan
// (result.feasible false when no choice fits the budget: result.min_feasible_bytes names the
// smallest budget that does), the frontier and the machine. Throws TuneError or
// std::invalid_argument for unusable options; never for an infeasible budget.
//
// The measurement runs on `backend` (make_tune_backend(), or a fake in the tests); the result
// names it. The overload without one makes the backend options.backend names.
model::TuneResult tune(const model::Profile& profile, const std::vector<model::WeightSnapshot>& weights,
                       const TuneOptions& options, kernels::Backend& backend, const ProgressFn& progress = {},
                       const std::atomic<bool>* cancel = nullptr);
model::TuneResult tune(const model::Profile& profile, const std::vector<model::WeightSnapshot>& weights,
                       const TuneOptions& options, const ProgressFn& progress = {},
                       const std::atomic<bool>* cancel = nullptr);
// The same, taking the recording over: the statistics tuning no longer needs (all of the
// profile's once grouped, and those of the tables not tuned once their candidates are
// enumerated) are freed as it goes (issue 31: `edo tune` at 10,000 tables within 4 GB).
model::TuneResult tune(model::Profile&& profile, const std::vector<model::WeightSnapshot>& weights,
                       const TuneOptions& options, kernels::Backend& backend, const ProgressFn& progress = {},
                       const std::atomic<bool>* cancel = nullptr);

// The backend `requested` ("auto", "cuda", "cpu") names on this machine (shared: callers need
// not see the kernels' headers). Throws TuneError naming the fix when CUDA is asked for and
// cannot run.
std::shared_ptr<kernels::Backend> make_tune_backend(const std::string& requested);

// The loss a table's retraining counts as in the least-change objective: more than any error
// a format may have (errors are relative L2 errors, below 1 for every format but a broken
// one), so a lossy format is always preferred to retraining when either would fit.
inline constexpr double kRetrainingLoss = 1.0;

// Recomputes the plan of `result` for another budget and error limit, under its objective
// (result.objective), from its candidates, measuring nothing (the dashboard's what-if; `edo tune` uses it too): choices, totals,
// frontier, feasibility and every choice's `why`; over result.devices devices (budget per
// device) also each table's placement (edo/tuner/placement.h).
void replan(model::TuneResult& result, uint64_t budget_bytes, double max_error);

// The backend "auto" resolves to on this machine ("cuda" or "cpu"), and a line describing it
// (GPU name, or CPU model and threads).
std::string resolve_backend(const std::string& requested);
std::string describe_backend(const std::string& backend);

}  // namespace edo::tuner
