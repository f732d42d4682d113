// A training step on the CPU backend: per batch the forward pooled bag, the backward (row
// gradients of a fixed output gradient; for a dense gradient scattered into a rows x dim
// tensor) and the optimizer's update, each phase timed with the steady clock.
#include "cpu/cpu_training.h"

#include <chrono>

#include "cpu/optimizer_update.h"
#include "edo/kernels/workload.h"

namespace edo::kernels::cpu {
namespace {

using clock = std::chrono::steady_clock;

double seconds(clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

class CpuTraining final : public TrainingTable {
 public:
  CpuTraining(EncodedTable& t, const Workload& w, const TrainingSpec& s)
      : t_(t), w_(w), spec_(s), opt_(s, t.rows(), t.dim()) {
    w_.check();
    std::uint64_t bags = 0;
    for (std::size_t i = 0; i < w_.batches.size(); ++i) {
      check_indices(w_.batches[i].data(), static_cast<std::int64_t>(w_.batches[i].size()), t_.rows());
      bags = std::max<std::uint64_t>(bags, w_.offsets[i].size() - 1);
    }
    out_.resize(static_cast<std::size_t>(bags) * t.dim());
    // The output gradient the loss would send back: small values of either sign (their values
    // do not change what the step costs).
    grad_out_.resize(out_.size());
    Rng rng(0x6e4d);
    for (auto& g : grad_out_) g = static_cast<float>(rng.uniform() - 0.5) * 1e-3f;
    if (spec_.dense_gradient) dense_.assign(static_cast<std::size_t>(t.rows()) * t.dim(), 0.f);
  }

  StepPhases pass() override {
    StepPhases p;
    for (std::size_t i = 0; i < w_.batches.size(); ++i) {
      const auto& b = w_.batches[i];
      const auto n = static_cast<std::int64_t>(b.size());
      const auto n_bags = static_cast<std::int64_t>(w_.offsets[i].size()) - 1;
      const auto t0 = clock::now();
      t_.bag(b.data(), n, w_.offsets[i].data(), n_bags, nullptr, Pooling::Sum, out_.data());
      const auto t1 = clock::now();
      t_.row_gradients(b.data(), n, w_.offsets[i].data(), n_bags, nullptr, Pooling::Sum, grad_out_.data(), grads_);
      if (spec_.dense_gradient) RowOptimizer::scatter(grads_, t_.dim(), dense_.data());
      const auto t2 = clock::now();
      if (spec_.dense_gradient) opt_.dense_step(t_, dense_.data());
      else opt_.sparse_step(t_, grads_);
      const auto t3 = clock::now();
      p.forward_s += seconds(t0, t1);
      p.backward_s += seconds(t1, t2);
      p.update_s += seconds(t2, t3);
    }
    return p;
  }

 private:
  EncodedTable& t_;
  const Workload& w_;
  TrainingSpec spec_;
  RowOptimizer opt_;
  std::vector<float> out_, grad_out_, dense_;
  RowGradients grads_;
};

}  // namespace

std::unique_ptr<TrainingTable> load_cpu_training(EncodedTable& table, const Workload& work, const TrainingSpec& spec) {
  if (!table.has_backward()) return nullptr;
  return std::make_unique<CpuTraining>(table, work, spec);
}

}  // namespace edo::kernels::cpu
