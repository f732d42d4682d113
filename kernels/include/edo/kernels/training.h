// A whole training step of an embedding table on a backend: the forward pooled bag, the
// backward (the row gradients of the bag's output gradient) and the optimizer's update of the
// rows, as a recommender's training step runs them (issue 19 point 4). The tuner times it for
// a training recording; `edo bench` and inference plans time the forward alone (backend.h).
//
//   TrainingSpec spec{OptimizerKind::Adagrad, /*dense_gradient=*/false};
//   auto train = backend->load_training(*table, work, spec);   // nullptr: the backend cannot train
//   StepPhases t = train->pass();                             // every batch once: one step each
//
// The optimizers follow PyTorch's update rules (torch/optim/{sgd,adagrad,adam,sparse_adam}.py,
// 1.13; foreach=False paths) and FBGEMM's EXACT_ROWWISE_ADAGRAD (one accumulator per row, the
// mean of the row's squared gradient; edo.RowwiseAdagrad in profiler/python/edo/plan/_apply.py is
// the same rule):
//   sgd            w -= lr * g
//   momentum sgd   b = mu * b + g (b = g at the first step), w -= lr * b
//   adagrad        s += g^2, w -= lr * g / (sqrt(s) + eps)
//   rowwise adagrad a[row] += mean(g^2), w -= lr * g / (sqrt(a[row]) + eps)
//   adam           m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
//                  w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
// A sparse gradient (nn.Embedding(sparse=True), SparseAdam, TorchRec's fused TBE) updates the
// rows the step read, their duplicates summed first; a dense gradient (the default
// nn.Embedding, a tied output layer) is a rows x dim tensor: zeroed, scattered into, and every
// row of the table updated from it at every step (torch.optim's dense paths).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edo::kernels {

enum class OptimizerKind { Sgd, MomentumSgd, Adagrad, RowwiseAdagrad, Adam };

// "sgd", "momentum sgd", "adagrad", "rowwise adagrad", "adam".
const char* optimizer_name(OptimizerKind k);
// fp32 optimizer state per table row of `dim` elements (0 for sgd, 1 for rowwise adagrad).
std::uint64_t state_floats_per_row(OptimizerKind k, std::uint32_t dim);

struct TrainingSpec {
  OptimizerKind optimizer = OptimizerKind::Sgd;
  bool dense_gradient = false;
  float lr = 0.01f;
  float eps = 1e-8f;     // adagrad, rowwise adagrad: 1e-10 in torch.optim.Adagrad, 1e-8 in FBGEMM; adam: 1e-8
  float momentum = 0.9f;
  float beta1 = 0.9f, beta2 = 0.999f;
};

// Seconds of each phase, summed over the batches of one pass. For a dense gradient the update
// phase includes the reset of the rows x dim gradient (optimizer.zero_grad()): both scale with
// the table's rows, not with the lookups.
struct StepPhases {
  double forward_s = 0, backward_s = 0, update_s = 0;
  double total() const { return forward_s + backward_s + update_s; }
};

// A table loaded on a backend for training with a workload: each batch of the workload is one
// step (forward pooled bag, sum; backward of a fixed output gradient; update). The table's
// weights change at every pass (the update is real): after a pass the EncodedTable holds them
// (a device backend copies them back, outside the timed phases).
class TrainingTable {
 public:
  virtual ~TrainingTable() = default;
  virtual StepPhases pass() = 0;
};

// The row gradients of one batch (the backward of the pooled bag): for each distinct row read,
// the sum in fp32 of w_p * grad_out[bag(p)] (/ bag length for mean) over its positions p, in
// increasing row order. Buffers are kept between calls: once they have grown to a batch's
// size, a batch of that size allocates nothing.
struct RowGradients {
  std::vector<std::int64_t> rows;
  std::vector<float> grads;  // rows.size() x dim
  // Scratch.
  std::vector<std::int64_t> bag_of, order, starts;
  std::size_t count() const { return rows.size(); }
};

}  // namespace edo::kernels
