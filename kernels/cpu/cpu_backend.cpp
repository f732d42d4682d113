// The CPU backend behind make_backend("cpu"): lookups run on the EncodedTable itself (its host
// arrays); a pass is timed with the steady clock.
#include <chrono>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_training.h"
#include "edo/kernels/backend.h"
#include "edo/kernels/cpu.h"

namespace edo::kernels::cpu {
namespace {

class CpuLoaded final : public LoadedTable {
 public:
  CpuLoaded(const EncodedTable& t, const Workload& w)
      : LoadedTable(w.indices()), t_(t), w_(w), out_(static_cast<std::size_t>(w.max_batch()) * t.dim()) {
    w_.check();
    for (const auto& b : w_.batches) check_indices(b.data(), static_cast<std::int64_t>(b.size()), t_.rows());
  }
  double pass(bool bag) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < w_.batches.size(); ++i) {
      const auto& b = w_.batches[i];
      const auto n = static_cast<std::int64_t>(b.size());
      if (bag) t_.bag(b.data(), n, w_.offsets[i].data(), static_cast<std::int64_t>(w_.offsets[i].size()) - 1, nullptr, Pooling::Sum, out_.data());
      else t_.gather(b.data(), n, out_.data());
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double hit_rate() const override { return t_.hit_rate(); }
  void reset_stats() override { t_.reset_stats(); }

 private:
  const EncodedTable& t_;
  const Workload& w_;
  std::vector<float> out_;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string description() const override { return "cpu kernels: " + isa(); }
  std::unique_ptr<LoadedTable> load(const EncodedTable& table, const Workload& work) override {
    return std::make_unique<CpuLoaded>(table, work);
  }
  std::unique_ptr<TrainingTable> load_training(EncodedTable& table, const Workload& work, const TrainingSpec& spec) override {
    return load_cpu_training(table, work, spec);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace edo::kernels::cpu
