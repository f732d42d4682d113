// Training levers that change how a table is trained rather than how it is stored (issue 33
// points 3 and 4; docs/tuning.md "Sparse gradients and freezing"):
//   - "sparse gradient": a table trained with a dense gradient by Adam/AdamW/Adagrad moves to
//     nn.Embedding(sparse=True) with an optimizer that takes sparse gradients (torch.optim.
//     SparseAdam for Adam/AdamW, torch.optim.Adagrad itself for Adagrad); candidate optimizer
//     "sparse_adam" or "sparse_adagrad";
//   - "frozen" (`edo tune --fine-tune` only): requires_grad=False, no gradient and no optimizer
//     state, the weights kept; candidate optimizer "frozen";
//   - "tie head to embedding": an untied LM head of the table's shape holds the table's weight
//     instead of its own; candidate optimizer "tie_head", needs retraining (the model changes).
#pragma once

#include <string>
#include <vector>

#include "candidates.h"
#include "edo/model/tune.h"
#include "workload.h"

namespace edo::tuner {

// The sparse gradient's rows per step: what one step's gradient holds. PyTorch's sparse
// embedding backward keeps one value row and one int64 index per lookup, uncoalesced
// (aten/src/ATen/native/Embedding.cpp, embedding_sparse_backward: `values = grad.reshape({-1,
// num_features})`, `index = indices.reshape({1, -1})`). The recording keeps lookups per step
// (their mean over the recorded steps), not each step's own count, nor the distinct rows of a
// step: this is that mean, rounded up (a job of fixed batch shapes reads as many every step).
double sparse_gradient_rows_per_step(const TableGroup& g);

// The optimizer a sparse gradient needs for this group ("sparse_adam", "sparse_adagrad"), or ""
// when it is not a candidate (not training, a gradient already sparse, tied or read whole, an
// optimizer without a sparse form).
std::string sparse_optimizer_for(const TableGroup& g);

// Why the job's own optimizer settings cannot be carried over to the sparse optimizer ("" when
// they can): PyTorch refuses or drops them. torch/optim/adagrad.py: "weight_decay option is not
// compatible with sparse gradients" (RuntimeError); torch/optim/sparse_adam.py takes lr, betas
// and eps only (no weight_decay, amsgrad or maximize): AdamW's decoupled decay would be lost.
std::string sparse_gradient_refusal(const TableGroup& g);

// Appends the sparse-gradient, (fine-tune) frozen and tie-head candidates of the baseline `base`.
// The tie-head candidate's bytes are the table's own (its gradient dense: the head's reaches
// every row); what it frees is the head's, outside the tables' budget: in its params
// ("saved_bytes" and its parts), never counted as a table's saving.
// `base` is a copy: it is usually an element of `out`, which appending moves.
void add_training_lever_candidates(const TableGroup& g, Candidate base, std::vector<Candidate>& out);

// The numerical check of the sparse-gradient candidates: a refused one gets `rejected` (never
// offered) with the reason; a kept one a note of what was checked.
void check_training_lever_candidates(const TableGroup& g, const std::vector<Candidate>& cands,
                                     std::vector<model::TuneCandidate*> results);

}  // namespace edo::tuner
