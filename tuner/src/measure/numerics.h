// Numerical safety of a training candidate (docs/tuning.md "Numerical safety"): before a
// low-precision format is offered to a training job, the job's own optimizer (kind and
// hyperparameters as recorded: model::OptimizerParams) is simulated for a few steps on a sample
// of the table's rows stored in that format, with gradients shaped like the recorded ones
// (every row for a dense gradient, zeros on the rows a step does not read; the rows a step
// reads for a sparse one), beside the same steps in fp32. A run that makes a row non-finite, or
// whose stored weights do not move where fp32's do for most rows, is unsafe.
//
// Why it matters: PyTorch keeps an fp16 parameter's optimizer state in fp16, so Adagrad's eps
// (1e-10) is 0 there and a row with a zero gradient computes 0/0 = NaN at its first step; an
// update below half an fp16/bf16 ulp of the weight is rounded away. FBGEMM trains
// low-precision tables with fp32 optimizer state and stochastic rounding of the weight update
// (its "stochastic_rounding" TBE option), which is what edo.apply_plan does for a training
// table planned as fp16/bf16, and what is simulated as the candidate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/tune.h"

namespace edo::tuner {

// How weights and optimizer state are stored in a simulated run.
enum class WeightStore { kFp32, kFp16, kBf16 };
enum class Rounding { kNearest, kStochastic };

struct StoragePlan {
  WeightStore weights = WeightStore::kFp32;
  WeightStore state = WeightStore::kFp32;  // PyTorch: the parameter's dtype; FBGEMM/edo: fp32
  Rounding rounding = Rounding::kNearest;  // of the weight update into `weights`
};

// The optimizer the simulation runs: the recorded kind and hyperparameters, PyTorch's defaults
// for what was not recorded (`assumed` lists them).
struct SimOptimizer {
  std::string kind;  // "adam", "adamw", "adagrad", "sgd", "rmsprop", "rowwise_adagrad"
  model::OptimizerParams p;
  std::vector<std::string> assumed;
  std::string words() const;  // "adagrad (lr 0.01, eps 1e-10)"
};
// `recorded`: the hooks' hyperparameters (may be unset); `state_kind`: the kind read off the
// optimizer state's names when nothing else is known ("adam", "adagrad", "sgd", "").
SimOptimizer sim_optimizer(const std::optional<model::OptimizerParams>& recorded, const std::string& state_kind);

struct SimSetup {
  uint32_t dim = 0;
  std::vector<float> rows;       // sample rows, row-major (n x dim), fp32 values as recorded
  double touched_fraction = 1;   // of the rows, read per step (sparse: the rows updated)
  bool dense_gradient = true;    // every row gets a gradient (zero where not read)
  int steps = 20;
  uint64_t seed = 42;
};

struct SimVerdict {
  bool safe = true;
  std::string why;                // unsafe: what happened ("row 3 became NaN at step 1")
  int first_bad_step = 0;         // 1-based; 0 when finite throughout
  double stalled_fraction = 0;    // rows fp32 moved whose stored weights did not
};

// Simulates `opt` on `setup` stored as `store`, and the same steps in fp32, with gradients
// drawn at several scales (1e-6 to 1 per element): unsafe when any step makes a weight or state
// non-finite, or when more than half of the rows fp32 moves stay put in the stored format.
SimVerdict simulate_training(const SimOptimizer& opt, const StoragePlan& store, const SimSetup& setup);

struct TableGroup;
struct Candidate;

// Checks every low-precision candidate (fp16, bf16 trained in place) of a training group: the
// format as edo.apply_plan trains it (fp32 state, stochastic rounding). An unsafe one gets
// `rejected` (never offered); each checked one gets a note saying what was simulated, and
// what plain PyTorch (state in the parameter's dtype) would have done. The sample: up to 256 of
// the recorded snapshot's rows, else rows drawn as nn.Embedding initialises them (N(0, 1)).
void check_training_numerics(const TableGroup& g, const std::vector<Candidate>& cands,
                             std::vector<model::TuneCandidate*> results, uint64_t seed);

}  // namespace edo::tuner
