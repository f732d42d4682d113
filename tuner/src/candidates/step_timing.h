// What one step of a table does, and how its time is obtained (docs/tuning.md "What a step
// is"): for an inference recording the forward pooled bag; for a training recording the
// forward, the backward and the recorded optimizer's update, with the gradient sparse or dense
// as recorded (issue 19 point 4).
#pragma once

#include <cstdint>
#include <string>

#include "candidates.h"
#include "edo/kernels/training.h"
#include "workload.h"

namespace edo::tuner {

struct TrainingStep {
  bool training = false;
  kernels::TrainingSpec spec;  // optimizer and gradient
  // How the recording named them ("adam: its state's kind adam.exp_avg; dense gradient: its
  // bytes equal the weights'").
  std::string basis;
};

// The step of a group as recorded: training when the recording saw optimizer state or
// gradients for it. The optimizer from its state's kind (sgd with state: momentum sgd; no
// state: plain sgd; adam, adamw, sparseadam: adam; adagrad; rowwiseadagrad; another name: the
// rule with as much state per element). The gradient is dense when the group's weights are
// tied to another layer (an output layer's gradient reaches every row), when its recorded
// gradient bytes equal its weights' (a dense tensor of the weights' shape), or when the
// optimizer takes dense gradients only (adam, adamw); sparse when its gradient bytes differ
// (a sparse tensor: values and indices of the rows read) or the optimizer takes sparse ones
// only (sparseadam); without gradient bytes, dense (nn.Embedding's default).
TrainingStep training_step_of(const TableGroup& g);

// The step a candidate is timed with: the group's, except for the optimizer-state lever
// (candidate optimizer "rowwise_adagrad": row-wise Adagrad on sparse gradients).
TrainingStep candidate_step(const TrainingStep& group, const Candidate& c);

// Formats a training step can update in place on the backends (the kernels' backward: fp32,
// fp16 and bf16 rows). The others (fp8, int8, int4, PQ, low rank, hashing, QR, pruned,
// offload) are timed as their forward plus a modelled backward and update.
bool trainable_in_place(const std::string& strategy);

// In a training job, a format that cannot be trained as it is stored (fp8, int8, int4, PQ:
// the inference formats; low rank: factors the job would have to train instead of the table)
// needs retraining, as hashing, QR and pruning do: the job trains the table as recorded and
// converts it after training, or is retrained with the format. Offload and fp16/bf16 train in
// place.
bool training_needs_retraining(const std::string& strategy);

// What a candidate's step time covers, in words: "forward pooled bag";
// "forward+backward+adam update (dense gradient)"; with `modelled`, "forward pooled bag
// measured + backward and adam update modelled (...)".
std::string step_covers(const TrainingStep& s, bool modelled);

// The bytes one training step's backward and update move for a table stored with `row_bytes`
// bytes a row of `dim` elements: the output gradient read per lookup, the row gradients
// written and read, and per updated row (the distinct rows read; every row for a dense
// gradient) the weights read and written, the gradient read and the optimizer state read and
// written. And the bytes the forward reads (the rows of every lookup). The model of the
// backward and update where a backend cannot train a format: its measured forward time times
// the ratio of the two.
struct StepBytes {
  double forward = 0, backward = 0, update = 0;
};
StepBytes step_bytes(const TrainingStep& s, double lookups, double distinct_rows, uint64_t rows, uint32_t dim,
                     double row_bytes);

}  // namespace edo::tuner
