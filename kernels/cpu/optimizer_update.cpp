// Optimizer updates on the host: torch.optim's rules for sgd, momentum sgd, adagrad and adam,
// FBGEMM's exact row-wise Adagrad (edo/kernels/training.h), on sparse or dense gradients.
#include "cpu/optimizer_update.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace edo::kernels::cpu {

namespace {
// Elements (rows x dim) below which the loops run on the calling thread alone: on a busy
// machine a team's start and barrier can cost more than a sparse step's work.
constexpr std::int64_t kTeamMinElements = std::int64_t{1} << 16;
// Rows per block of a dense step: the update buffer stays a few MB.
constexpr std::int64_t kDenseBlock = 16384;
}  // namespace

RowOptimizer::RowOptimizer(const TrainingSpec& spec, std::uint64_t rows, std::uint32_t dim)
    : s_(spec), rows_(rows), dim_(dim) {
  const std::uint64_t per_row = state_floats_per_row(spec.optimizer, dim);
  if (spec.optimizer == OptimizerKind::Adam) {
    a_.assign(rows * dim, 0.f);
    b_.assign(rows * dim, 0.f);
  } else if (per_row > 0) {
    a_.assign(rows * per_row, 0.f);
  }
}

void RowOptimizer::compute(const std::int64_t* rows, const float* grads, std::int64_t count, float* updates) {
  const std::uint32_t D = dim_;
  const float lr = s_.lr, eps = s_.eps;
  const OptimizerKind k = s_.optimizer;
  // Adam's bias corrections for this step (torch.optim.Adam, SparseAdam).
  const double t = static_cast<double>(step_);
  const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(s_.beta1), t));
  const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(s_.beta2), t));
  const float b1 = s_.beta1, b2 = s_.beta2, mu = s_.momentum;
  float* A = a_.data();
  float* B = b_.data();
#pragma omp parallel for num_threads(num_threads()) schedule(static) if (count * static_cast<std::int64_t>(D) >= kTeamMinElements)
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint64_t r = static_cast<std::uint64_t>(rows[i]);
    const float* g = grads + static_cast<std::uint64_t>(i) * D;
    float* u = updates + static_cast<std::uint64_t>(i) * D;
    switch (k) {
      case OptimizerKind::Sgd:
        for (std::uint32_t d = 0; d < D; ++d) u[d] = lr * g[d];
        break;
      case OptimizerKind::MomentumSgd: {
        float* buf = A + r * D;
        for (std::uint32_t d = 0; d < D; ++d) {
          buf[d] = mu * buf[d] + g[d];
          u[d] = lr * buf[d];
        }
        break;
      }
      case OptimizerKind::Adagrad: {
        float* sum = A + r * D;
        for (std::uint32_t d = 0; d < D; ++d) {
          sum[d] += g[d] * g[d];
          u[d] = lr * g[d] / (std::sqrt(sum[d]) + eps);
        }
        break;
      }
      case OptimizerKind::RowwiseAdagrad: {
        float sq = 0.f;
        for (std::uint32_t d = 0; d < D; ++d) sq += g[d] * g[d];
        A[r] += sq / static_cast<float>(D);
        const float scale = lr / (std::sqrt(A[r]) + eps);
        for (std::uint32_t d = 0; d < D; ++d) u[d] = scale * g[d];
        break;
      }
      case OptimizerKind::Adam: {
        float* m = A + r * D;
        float* v = B + r * D;
        for (std::uint32_t d = 0; d < D; ++d) {
          m[d] = b1 * m[d] + (1.f - b1) * g[d];
          v[d] = b2 * v[d] + (1.f - b2) * g[d] * g[d];
          u[d] = lr * (m[d] / c1) / (std::sqrt(v[d] / c2) + eps);
        }
        break;
      }
    }
  }
}

void RowOptimizer::sparse_step(EncodedTable& table, const RowGradients& g) {
  ++step_;
  const auto n = static_cast<std::int64_t>(g.count());
  if (n == 0) return;
  updates_.resize(g.grads.size());
  compute(g.rows.data(), g.grads.data(), n, updates_.data());
  table.apply_row_updates(g.rows.data(), updates_.data(), n);
}

void RowOptimizer::dense_step(EncodedTable& table, float* grad) {
  ++step_;
  const std::uint32_t D = dim_;
  const auto R = static_cast<std::int64_t>(rows_);
  updates_.resize(static_cast<std::size_t>(std::min(R, kDenseBlock)) * D);
  block_rows_.resize(static_cast<std::size_t>(std::min(R, kDenseBlock)));
  for (std::int64_t first = 0; first < R; first += kDenseBlock) {
    const std::int64_t cnt = std::min(kDenseBlock, R - first);
    std::iota(block_rows_.begin(), block_rows_.begin() + cnt, first);
    float* g = grad + static_cast<std::uint64_t>(first) * D;
    compute(block_rows_.data(), g, cnt, updates_.data());
    table.apply_row_updates(block_rows_.data(), updates_.data(), cnt);
  }
  // optimizer.zero_grad(): the next step's backward accumulates into zeros.
  const std::uint64_t total = rows_ * D;
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (std::int64_t blk = 0; blk < static_cast<std::int64_t>((total + 65535) / 65536); ++blk) {
    const std::uint64_t at = static_cast<std::uint64_t>(blk) * 65536;
    std::memset(grad + at, 0, std::min<std::uint64_t>(65536, total - at) * sizeof(float));
  }
}

void RowOptimizer::scatter(const RowGradients& g, std::uint32_t dim, float* dense) {
  const auto n = static_cast<std::int64_t>(g.count());
  // Distinct rows (row_gradients coalesced them): no two threads write one row.
#pragma omp parallel for num_threads(num_threads()) schedule(static) if (n * static_cast<std::int64_t>(dim) >= kTeamMinElements)
  for (std::int64_t i = 0; i < n; ++i) {
    float* dst = dense + static_cast<std::uint64_t>(g.rows[static_cast<std::size_t>(i)]) * dim;
    const float* src = g.grads.data() + static_cast<std::uint64_t>(i) * dim;
    for (std::uint32_t d = 0; d < dim; ++d) dst[d] += src[d];
  }
}

}  // namespace edo::kernels::cpu
