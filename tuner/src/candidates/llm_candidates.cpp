#include "llm_candidates.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "edo/model/profile.h"
#include "step_timing.h"

namespace edo::tuner {

using P = model::StrategyParams;

namespace {

// The job's optimizer class, lower case: the hooks' record first, else the state's kind.
std::string lever_optimizer_kind(const TableGroup& g) {
  if (g.optimizer_params && !g.optimizer_params->kind.empty()) return g.optimizer_params->kind;
  return g.optimizer;
}

std::string lever_number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

double sparse_gradient_rows_per_step(const TableGroup& g) {
  // Not capped by the rows read: the gradient is not coalesced, a row read twice is there twice.
  return std::max(0.0, std::ceil(g.lookups_per_step));
}

std::string sparse_optimizer_for(const TableGroup& g) {
  const TrainingStep step = training_step_of(g);
  if (!step.training || !step.spec.dense_gradient) return "";
  // Tied (a head's gradient reaches every row) or read whole: the gradient is dense whatever
  // the lookups do. Tables sharing identical weights are left to the shared-copy candidates.
  if (!g.members.empty() || !g.identical.empty() || !g.dense_use.empty()) return "";
  const std::string kind = lever_optimizer_kind(g);
  if (kind == "adam" || kind == "adamw") return "sparse_adam";
  if (kind == "adagrad") return "sparse_adagrad";
  return "";
}

std::string sparse_gradient_refusal(const TableGroup& g) {
  const std::string kind = lever_optimizer_kind(g);
  if (!g.optimizer_params) return "";
  const model::OptimizerParams& p = *g.optimizer_params;
  // torch.optim.Adagrad maximises sparse gradients too; SparseAdam has no maximize in torch 1.13
  // (and edo.apply_plan builds it from lr, betas and eps).
  if (p.maximize && kind != "adagrad") return kind + " with maximize=True: torch.optim.SparseAdam would minimise";
  if (p.weight_decay != 0) {
    if (kind == "adagrad")
      return "adagrad with weight_decay " + lever_number(p.weight_decay) +
             ": torch.optim.Adagrad raises \"weight_decay option is not compatible with sparse gradients\"";
    return kind + " with weight_decay " + lever_number(p.weight_decay) +
           ": torch.optim.SparseAdam has no weight decay, so the job's decay would be dropped";
  }
  return "";
}

void add_training_lever_candidates(const TableGroup& g, Candidate base, std::vector<Candidate>& out) {
  const double D = g.dim;
  const double element = model::dtype_size(g.dtype);
  const uint64_t weights = g.weight_bytes;
  const std::string sparse = sparse_optimizer_for(g);
  if (!sparse.empty() && g.grad_bytes > 0) {
    const double rows = sparse_gradient_rows_per_step(g);
    // One value row (the weights' dtype) and one int64 index per lookup of a step.
    const auto grad = static_cast<uint64_t>(std::llround(rows * (D * element + 8.0)));
    if (grad < g.grad_bytes) {
      Candidate c = base;
      c.baseline = false;
      c.optimizer = sparse;
      c.measure_as = -1;  // its step (sparse backward and lazy update) is timed on its own
      c.needs_retraining = false;
      // The optimizer state is the recorded one: SparseAdam keeps exp_avg and exp_avg_sq per
      // element as Adam does, Adagrad its sum (torch/optim/sparse_adam.py, adagrad.py).
      c.device_bytes = base.device_bytes - g.grad_bytes + grad;
      c.params.set(&P::gradient, "sparse").set(&P::gradient_rows_per_step, static_cast<uint64_t>(rows));
      c.params.set(&P::gradient_rows_basis,
                   "lookups per step (the recording's mean, rounded up: it keeps no per-step maximum): one value row and one int64 "
                   "index per lookup, uncoalesced, as nn.Embedding(sparse=True) makes it");
      c.params.set(&P::dense_gradient_bytes, g.grad_bytes).set(&P::sparse_gradient_bytes, grad).set(&P::optimizer_from, lever_optimizer_kind(g));
      out.push_back(c);
    }
  }
  // Freezing: only when the user said the run is a fine-tune (it changes what training does).
  const TrainingStep step = training_step_of(g);
  if (g.fine_tune && step.training && g.members.empty() && g.identical.empty() && g.dense_use.empty()) {
    Candidate c = base;
    c.baseline = false;
    c.optimizer = "frozen";
    c.measure_as = -1;  // forward only
    c.needs_retraining = false;
    c.device_bytes = weights;
    c.host_bytes = 0;
    c.params.set(&P::saved_gradient_bytes, g.grad_bytes).set(&P::saved_optimizer_bytes, g.optimizer_bytes);
    out.push_back(c);
  }
  // Tying an untied head of the same shape: the head's weights, gradient and optimizer state go.
  if (!g.untied_head.empty() && g.members.empty() && g.identical.empty()) {
    Candidate c = base;
    c.baseline = false;
    c.optimizer = "tie_head";
    c.needs_retraining = true;  // a model with its own head becomes one whose head is the table
    c.measure_as = 0;           // the lookups are the baseline's; the head's matmul stays
    // Tied, the table's gradient is dense (the head's reaches every row), as autograd keeps it.
    if (step.training) c.device_bytes = base.device_bytes - g.grad_bytes + std::max(g.grad_bytes, weights);
    c.params.set(&P::head, g.untied_head).set(&P::saved_bytes, g.head_weight_bytes + g.head_grad_bytes + g.head_optimizer_bytes);
    c.params.set(&P::saved_weight_bytes, g.head_weight_bytes).set(&P::saved_gradient_bytes, g.head_grad_bytes);
    c.params.set(&P::saved_optimizer_bytes, g.head_optimizer_bytes);
    out.push_back(c);
  }
}

void check_training_lever_candidates(const TableGroup& g, const std::vector<Candidate>& cands,
                                     std::vector<model::TuneCandidate*> results) {
  for (size_t ci = 0; ci < cands.size() && ci < results.size(); ++ci) {
    const Candidate& c = cands[ci];
    if (c.optimizer != "sparse_adam" && c.optimizer != "sparse_adagrad") continue;
    model::TuneCandidate& m = *results[ci];
    const std::string sep = m.note.empty() ? "" : "; ";
    const std::string why = sparse_gradient_refusal(g);
    if (!why.empty()) {
      m.rejected = why;
      m.rejection = model::RejectionCause::kSparseGradientRefused;
      m.note += sep + "numerically unsafe: " + why;
      continue;
    }
    const std::string kind = lever_optimizer_kind(g);
    m.note += sep + "numerics: " + kind + "'s settings carry over to " +
              (c.optimizer == "sparse_adam" ? "torch.optim.SparseAdam (lr, betas, eps; no weight decay recorded)"
                                            : "torch.optim.Adagrad on sparse gradients (no weight decay recorded)") +
              (c.optimizer == "sparse_adam" ? "; rows a step does not read keep their moments (lazy Adam)" : "");
  }
}

}  // namespace edo::tuner
