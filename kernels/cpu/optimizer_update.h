// The optimizer's update of an embedding table's rows on the host (edo/kernels/training.h has
// the rules and what they model). Internal to the CPU backend.
#pragma once

#include <cstdint>
#include <vector>

#include "edo/kernels/strategy.h"
#include "edo/kernels/training.h"

namespace edo::kernels::cpu {

class RowOptimizer {
 public:
  RowOptimizer(const TrainingSpec& spec, std::uint64_t rows, std::uint32_t dim);
  // Sparse gradient: the rows in `g` and their state, nothing else.
  void sparse_step(EncodedTable& table, const RowGradients& g);
  // Dense gradient (rows x dim): every row of the table and of the state, then the gradient is
  // reset to zero for the next step (optimizer.zero_grad()).
  void dense_step(EncodedTable& table, float* grad);
  // Scatters a step's row gradients into a dense gradient (the dense backward's last part).
  static void scatter(const RowGradients& g, std::uint32_t dim, float* dense);

 private:
  // updates[i] from grads[i] for rows[i] (state updated), i < count.
  void compute(const std::int64_t* rows, const float* grads, std::int64_t count, float* updates);
  TrainingSpec s_;
  std::uint64_t rows_;
  std::uint32_t dim_;
  std::int64_t step_ = 0;          // adam's t
  std::vector<float> a_, b_;       // state: momentum / sum / row accumulators / adam's m; adam's v
  std::vector<float> updates_;     // scratch, kept between steps
  std::vector<std::int64_t> block_rows_;
};

}  // namespace edo::kernels::cpu
