// The training step on the CPU backend (edo/kernels/training.h): each optimizer's update
// against the rule written out here, sparse against dense gradients, and the backend's
// training passes.
#include <gtest/gtest.h>

#include <cmath>

#include "common.h"
#include "cpu/optimizer_update.h"
#include "edo/kernels/backend.h"
#include "edo/kernels/training.h"

using namespace edo::kernels;
using namespace edo::kernels::test;

namespace {

// Two steps of one optimizer on rows {1, 4, 1} then {4, 6}, written out element by element.
std::vector<double> reference(OptimizerKind k, const std::vector<float>& w0, std::uint32_t D,
                              const std::vector<std::vector<std::pair<std::int64_t, std::vector<float>>>>& steps,
                              const TrainingSpec& s) {
  std::vector<double> w(w0.begin(), w0.end()), a(w.size(), 0.0), b(w.size(), 0.0), row_acc(w.size() / D, 0.0);
  int t = 0;
  for (const auto& step : steps) {
    ++t;
    for (const auto& [r, g] : step) {
      double sq = 0;
      for (std::uint32_t d = 0; d < D; ++d) sq += double(g[d]) * g[d];
      row_acc[r] += sq / D;
      for (std::uint32_t d = 0; d < D; ++d) {
        const std::size_t i = r * D + d;
        const double gd = g[d];
        double u = 0;
        switch (k) {
          case OptimizerKind::Sgd: u = s.lr * gd; break;
          case OptimizerKind::MomentumSgd: a[i] = s.momentum * a[i] + gd; u = s.lr * a[i]; break;
          case OptimizerKind::Adagrad: a[i] += gd * gd; u = s.lr * gd / (std::sqrt(a[i]) + s.eps); break;
          case OptimizerKind::RowwiseAdagrad: u = s.lr * gd / (std::sqrt(row_acc[r]) + s.eps); break;
          case OptimizerKind::Adam:
            a[i] = s.beta1 * a[i] + (1 - s.beta1) * gd;
            b[i] = s.beta2 * b[i] + (1 - s.beta2) * gd * gd;
            u = s.lr * (a[i] / (1 - std::pow(double(s.beta1), t))) / (std::sqrt(b[i] / (1 - std::pow(double(s.beta2), t))) + s.eps);
            break;
        }
        w[i] -= u;
      }
    }
  }
  return w;
}

RowGradients grads_of(const std::vector<std::pair<std::int64_t, std::vector<float>>>& step) {
  RowGradients g;
  for (const auto& [r, v] : step) {
    g.rows.push_back(r);
    g.grads.insert(g.grads.end(), v.begin(), v.end());
  }
  return g;
}

}  // namespace

TEST(Training, EachOptimizerFollowsItsRuleOnSparseGradients) {
  const std::uint64_t R = 8;
  const std::uint32_t D = 4;
  const auto w = weights(R, D, 5);
  const std::vector<std::vector<std::pair<std::int64_t, std::vector<float>>>> steps{
      {{1, {0.5f, -0.25f, 0.125f, 1.f}}, {4, {-1.f, 0.f, 2.f, 0.75f}}},
      {{4, {0.25f, 0.5f, -0.5f, 0.f}}, {6, {1.5f, -1.f, 0.5f, 0.25f}}}};
  TrainingSpec s;
  s.lr = 0.1f;
  for (OptimizerKind k : {OptimizerKind::Sgd, OptimizerKind::MomentumSgd, OptimizerKind::Adagrad, OptimizerKind::RowwiseAdagrad,
                          OptimizerKind::Adam}) {
    s.optimizer = k;
    auto t = enc("fp32", w, R, D);
    cpu::RowOptimizer opt(s, R, D);
    for (const auto& step : steps) opt.sparse_step(*t, grads_of(step));
    const auto got = decode_all(*t);
    const auto want = reference(k, w, D, steps, s);
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << optimizer_name(k) << " " << i;
  }
}

// A dense gradient updates every row at every step: under Adam a row read only in the first
// step still moves in the second (its moment decays into the update), under sparse Adam it
// does not; for plain SGD both give the same weights.
TEST(Training, DenseGradientsUpdateEveryRow) {
  const std::uint64_t R = 8;
  const std::uint32_t D = 4;
  const auto w = weights(R, D, 9);
  const std::vector<std::pair<std::int64_t, std::vector<float>>> first{{1, {0.5f, -0.25f, 0.125f, 1.f}}}, second{{6, {1.f, 1.f, 1.f, 1.f}}};
  auto run = [&](OptimizerKind k, bool dense) {
    TrainingSpec s;
    s.optimizer = k;
    s.lr = 0.1f;
    auto t = enc("fp32", w, R, D);
    cpu::RowOptimizer opt(s, R, D);
    std::vector<float> g(R * D, 0.f);
    std::vector<std::vector<float>> after;
    for (const auto* step : {&first, &second}) {
      const RowGradients rg = grads_of(*step);
      if (dense) {
        cpu::RowOptimizer::scatter(rg, D, g.data());
        opt.dense_step(*t, g.data());
        for (float x : g) EXPECT_EQ(x, 0.f) << "the dense gradient is reset after the update";
      } else {
        opt.sparse_step(*t, rg);
      }
      after.push_back(decode_all(*t));
    }
    return after;
  };
  const auto dense = run(OptimizerKind::Adam, true), sparse = run(OptimizerKind::Adam, false);
  for (std::uint32_t d = 0; d < D; ++d) {
    EXPECT_EQ(dense[0][1 * D + d], sparse[0][1 * D + d]) << "same first step";
    EXPECT_NE(dense[1][1 * D + d], dense[0][1 * D + d]) << "dense adam moves row 1 again";
    EXPECT_EQ(sparse[1][1 * D + d], sparse[0][1 * D + d]) << "sparse adam leaves row 1 alone";
    EXPECT_EQ(dense[1][3 * D + d], w[3 * D + d]) << "a row never read has zero moments";
  }
  const auto sgd_dense = run(OptimizerKind::Sgd, true), sgd_sparse = run(OptimizerKind::Sgd, false);
  EXPECT_EQ(sgd_dense[1], sgd_sparse[1]);
}

// The backend's training passes: the rows read move, the others stay (sparse); fp16 and bf16
// train in place; a format the CPU cannot update has no training table.
TEST(Training, CpuBackendTrainsRowFormatsInPlace) {
  const std::uint64_t R = 500;
  const std::uint32_t D = 8;
  const auto w = weights(R, D, 3);
  auto backend = make_backend("cpu");
  const Workload work = Workload::fixed_bags({{1, 2, 3, 3, 10, 11}, {2, 40, 41, 42}}, 2);
  for (const char* fmt : {"fp32", "fp16", "bf16"}) {
    auto t = enc(fmt, w, R, D);
    const auto before = decode_all(*t);
    TrainingSpec s;
    s.optimizer = OptimizerKind::Adagrad;
    auto train = backend->load_training(*t, work, s);
    ASSERT_NE(train, nullptr) << fmt;
    const StepPhases p = train->pass();
    EXPECT_GE(p.forward_s, 0);
    EXPECT_GE(p.backward_s, 0);
    EXPECT_GE(p.update_s, 0);
    const auto after = decode_all(*t);
    for (std::uint64_t r : {1, 2, 3, 10, 11, 40, 41, 42}) {
      bool moved = false;
      for (std::uint32_t d = 0; d < D; ++d) moved = moved || after[r * D + d] != before[r * D + d];
      EXPECT_TRUE(moved) << fmt << " row " << r;
    }
    for (std::uint64_t r : {0, 4, 100, 499})
      for (std::uint32_t d = 0; d < D; ++d) EXPECT_EQ(after[r * D + d], before[r * D + d]) << fmt << " row " << r;
  }
  for (const char* fmt : {"int8", "int4", "fp8", "pq:m=2"}) {
    auto t = enc(fmt, w, R, D);
    EXPECT_EQ(backend->load_training(*t, work, TrainingSpec{}), nullptr) << fmt;
  }
}

TEST(Training, NamesAndStateSizes) {
  EXPECT_STREQ(optimizer_name(OptimizerKind::RowwiseAdagrad), "rowwise adagrad");
  EXPECT_EQ(state_floats_per_row(OptimizerKind::Adam, 16), 32u);
  EXPECT_EQ(state_floats_per_row(OptimizerKind::RowwiseAdagrad, 16), 1u);
  EXPECT_EQ(state_floats_per_row(OptimizerKind::Sgd, 16), 0u);
}
