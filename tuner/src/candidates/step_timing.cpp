#include "step_timing.h"

#include <algorithm>
#include <cmath>

namespace edo::tuner {

namespace {

using kernels::OptimizerKind;

// The optimizer a recorded name stands for; `per_element`: its state bytes per weight element
// (fp32 state: 4 per float), the fallback for a name edo does not know.
OptimizerKind kind_of(const std::string& name, double per_element, bool& known) {
  known = true;
  if (name.empty()) return OptimizerKind::Sgd;  // gradients but no state: plain SGD
  if (name == "sgd") return per_element > 0 ? OptimizerKind::MomentumSgd : OptimizerKind::Sgd;
  if (name == "adagrad") return OptimizerKind::Adagrad;
  if (name == "rowwiseadagrad" || name == "rowwise_adagrad") return OptimizerKind::RowwiseAdagrad;
  if (name == "adam" || name == "adamw" || name == "sparseadam") return OptimizerKind::Adam;
  known = false;
  if (per_element >= 6) return OptimizerKind::Adam;
  if (per_element >= 2) return OptimizerKind::Adagrad;
  return per_element > 0 ? OptimizerKind::RowwiseAdagrad : OptimizerKind::Sgd;
}

std::string bytes_words(uint64_t a) { return std::to_string(a) + " bytes"; }

}  // namespace

TrainingStep training_step_of(const TableGroup& g) {
  TrainingStep s;
  s.training = g.optimizer_bytes > 0 || g.grad_bytes > 0;
  if (!s.training) return s;
  const double elements = static_cast<double>(g.rows) * g.dim * static_cast<double>(1 + g.identical.size());
  const double per_element = elements > 0 ? static_cast<double>(g.optimizer_bytes) / elements : 0.0;
  bool known = true;
  s.spec.optimizer = kind_of(g.optimizer, per_element, known);
  const std::string name = kernels::optimizer_name(s.spec.optimizer);
  if (g.optimizer.empty()) s.basis = "sgd: gradients recorded, no optimizer state";
  else if (!known) s.basis = name + ": '" + g.optimizer + "' taken as the rule with as much state per element";
  else if (s.spec.optimizer == OptimizerKind::MomentumSgd) s.basis = name + ": sgd with a momentum buffer recorded";
  else s.basis = name + ": its state's kind " + g.optimizer + ".*";
  // The gradient.
  const uint64_t dense_bytes = g.weight_bytes + g.identical_bytes;
  const bool tied = g.members.size() > g.identical.size();
  std::string why;
  if (tied) {
    s.spec.dense_gradient = true;
    why = "dense gradient: tied to another layer, whose gradient reaches every row";
  } else if (!g.dense_use.empty()) {
    s.spec.dense_gradient = true;
    why = "dense gradient: read whole every step (" + g.dense_use + ")";
  } else if (g.optimizer == "sparseadam") {
    s.spec.dense_gradient = false;
    why = "sparse gradient: sparseadam takes sparse gradients only";
  } else if (g.grad_bytes > 0 && g.grad_bytes == dense_bytes) {
    s.spec.dense_gradient = true;
    why = "dense gradient: its " + bytes_words(g.grad_bytes) + " equal the weights'";
  } else if (g.grad_bytes > 0) {
    s.spec.dense_gradient = false;
    why = "sparse gradient: its " + bytes_words(g.grad_bytes) + " are not the weights' " + bytes_words(dense_bytes);
  } else if (g.optimizer == "adam" || g.optimizer == "adamw") {
    s.spec.dense_gradient = true;
    why = "dense gradient: " + g.optimizer + " takes dense gradients only";
  } else {
    s.spec.dense_gradient = true;
    why = "dense gradient: no gradient bytes recorded, taken as nn.Embedding's default";
  }
  s.basis += "; " + why;
  return s;
}

TrainingStep candidate_step(const TrainingStep& group, const Candidate& c) {
  TrainingStep s = group;
  if (s.training && c.optimizer == "rowwise_adagrad") {
    s.spec.optimizer = OptimizerKind::RowwiseAdagrad;
    s.spec.dense_gradient = false;
    s.basis = "the optimizer-state lever: rowwise adagrad on sparse gradients";
  } else if (s.training && (c.optimizer == "sparse_adam" || c.optimizer == "sparse_adagrad")) {
    // The job's own update rule on a sparse gradient (SparseAdam updates only the rows read).
    s.spec.optimizer = c.optimizer == "sparse_adam" ? OptimizerKind::Adam : OptimizerKind::Adagrad;
    s.spec.dense_gradient = false;
    s.basis = std::string("the sparse-gradient lever: ") + (c.optimizer == "sparse_adam" ? "sparseadam" : "adagrad") +
              " on sparse gradients";
  } else if (s.training && c.optimizer == "frozen") {
    // requires_grad=False: no backward and no update, the forward only.
    s.training = false;
    s.basis = "frozen: forward only";
  }
  return s;
}

bool trainable_in_place(const std::string& strategy) {
  return strategy == "fp32" || strategy == "fp16" || strategy == "bf16";
}

bool training_needs_retraining(const std::string& strategy) {
  return !trainable_in_place(strategy) && strategy != "offload";
}

std::string step_covers(const TrainingStep& s, bool modelled) {
  if (!s.training) return "forward pooled bag";
  const std::string update = std::string(kernels::optimizer_name(s.spec.optimizer)) + " update";
  const std::string gradient = s.spec.dense_gradient ? "dense gradient" : "sparse gradient";
  if (modelled) return "forward pooled bag measured + backward and " + update + " modelled (" + gradient + ")";
  return "forward+backward+" + update + " (" + gradient + ")";
}

StepBytes step_bytes(const TrainingStep& s, double lookups, double distinct_rows, uint64_t rows, uint32_t dim,
                     double row_bytes) {
  StepBytes b;
  const double D = dim;
  b.forward = lookups * row_bytes;
  if (!s.training) return b;
  // Output gradient read per lookup, row gradients written once per distinct row.
  b.backward = lookups * D * 4 + distinct_rows * D * 4;
  const double updated = s.spec.dense_gradient ? static_cast<double>(rows) : distinct_rows;
  const double state = static_cast<double>(kernels::state_floats_per_row(s.spec.optimizer, dim)) * 4;
  // Weights read and written, gradient read, state read and written; a dense gradient is also
  // reset (written) and was scattered into (read and written) in the backward.
  b.update = updated * (2 * row_bytes + D * 4 + 2 * state);
  if (s.spec.dense_gradient) {
    b.update += static_cast<double>(rows) * D * 4;
    b.backward += distinct_rows * D * 4 * 2;
  }
  return b;
}

}  // namespace edo::tuner
