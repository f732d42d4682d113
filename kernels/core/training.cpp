// Names and state sizes of the optimizers a training step is timed with (edo/kernels/training.h).
#include "edo/kernels/training.h"

namespace edo::kernels {

const char* optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::Sgd: return "sgd";
    case OptimizerKind::MomentumSgd: return "momentum sgd";
    case OptimizerKind::Adagrad: return "adagrad";
    case OptimizerKind::RowwiseAdagrad: return "rowwise adagrad";
    case OptimizerKind::Adam: return "adam";
  }
  return "?";
}

std::uint64_t state_floats_per_row(OptimizerKind k, std::uint32_t dim) {
  switch (k) {
    case OptimizerKind::Sgd: return 0;
    case OptimizerKind::MomentumSgd:
    case OptimizerKind::Adagrad: return dim;
    case OptimizerKind::RowwiseAdagrad: return 1;
    case OptimizerKind::Adam: return std::uint64_t{2} * dim;
  }
  return 0;
}

}  // namespace edo::kernels
