// Plans that cannot hurt the job (issue 29): the numerical check of training candidates
// (numerics.h) on cases whose answer is known by hand (Adagrad's and Adam's eps are 0 in fp16;
// a 1e-5 update is below half a bf16 ulp of 1; 1e6 overflows fp16), and tune() on recordings
// that must not get a harmful plan: a table read whole every step (a tied LM head), pruning
// whose loss could not be validated, held-out validation over several ranks, and the bytes of
// low-precision training.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <random>

#include "edo/model/strategy_params_json.h"
#include "edo/model/first_seen.h"
#include "edo/tuner/plan_io.h"
#include "edo/tuner/summary.h"
#include "edo/tuner/tuner.h"
#include "numerics.h"
#include "recordings.h"

namespace edo::tuner {
namespace {

SimSetup gaussian_rows(size_t n, uint32_t dim, double touched, bool dense, float scale = 1.f) {
  SimSetup su;
  su.dim = dim;
  su.touched_fraction = touched;
  su.dense_gradient = dense;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.f, scale);
  su.rows.resize(n * dim);
  for (auto& x : su.rows) x = normal(rng);
  return su;
}

model::OptimizerParams params(const std::string& kind, double lr, double eps) {
  model::OptimizerParams p;
  p.kind = kind;
  p.lr = lr;
  p.eps = eps;
  if (kind == "adam") p.beta1 = 0.9, p.beta2 = 0.999;
  return p;
}

const StoragePlan kPlainFp16{WeightStore::kFp16, WeightStore::kFp16, Rounding::kNearest};   // PyTorch's .half()
const StoragePlan kEdoFp16{WeightStore::kFp16, WeightStore::kFp32, Rounding::kStochastic};  // FBGEMM's way

TEST(Numerics, AdagradsEpsIsZeroInFp16SoAPlainFp16TableTrainsToNaNAtItsFirstStep) {
  const SimOptimizer opt = sim_optimizer(params("adagrad", 0.01, 1e-10), "adagrad");
  const SimSetup su = gaussian_rows(100, 16, 0.02, /*dense=*/true);
  const SimVerdict plain = simulate_training(opt, kPlainFp16, su);
  EXPECT_FALSE(plain.safe);
  EXPECT_EQ(plain.first_bad_step, 1);
  EXPECT_NE(plain.why.find("eps 1e-10 is 0 in fp16"), std::string::npos) << plain.why;
  const SimVerdict edo = simulate_training(opt, kEdoFp16, su);
  EXPECT_TRUE(edo.safe) << edo.why;
}

TEST(Numerics, AdamInPlainFp16GoesNonFiniteAndIsFiniteWithFp32State) {
  const SimOptimizer opt = sim_optimizer(params("adam", 1e-3, 1e-8), "adam");
  const SimSetup su = gaussian_rows(100, 16, 0.05, /*dense=*/true);
  EXPECT_FALSE(simulate_training(opt, kPlainFp16, su).safe);
  const SimVerdict edo = simulate_training(opt, kEdoFp16, su);
  EXPECT_TRUE(edo.safe) << edo.why;
  // A sparse gradient updates only the rows read: no 0/0 on untouched rows, even in fp16.
  SimSetup sparse = su;
  sparse.dense_gradient = false;
  EXPECT_TRUE(simulate_training(sim_optimizer(params("adagrad", 0.01, 1e-10), "adagrad"), kEdoFp16, sparse).safe);
}

TEST(Numerics, UpdatesBelowHalfAnUlpRoundAwayWithoutStochasticRounding) {
  // SGD, lr 0.01, gradients of 1e-3: updates of 1e-5 on weights near 1, where a bf16 ulp is
  // 2^-7 = 0.0078: round to nearest never moves them; stochastic rounding does, on average.
  const SimOptimizer opt = sim_optimizer(params("sgd", 0.01, 0), "");
  const SimSetup su = gaussian_rows(200, 16, 0.5, /*dense=*/false);
  const SimVerdict nearest = simulate_training(opt, StoragePlan{WeightStore::kBf16, WeightStore::kFp32, Rounding::kNearest}, su);
  EXPECT_FALSE(nearest.safe);
  EXPECT_NE(nearest.why.find("round away"), std::string::npos) << nearest.why;
  EXPECT_GT(nearest.stalled_fraction, 0.9);
  const SimVerdict sr = simulate_training(opt, StoragePlan{WeightStore::kBf16, WeightStore::kFp32, Rounding::kStochastic}, su);
  EXPECT_TRUE(sr.safe) << sr.why;
}

TEST(Numerics, AnUpdateBeyondFp16sRangeIsNonFinite) {
  const SimOptimizer opt = sim_optimizer(params("sgd", 1e6, 0), "");
  const SimSetup su = gaussian_rows(50, 8, 1.0, /*dense=*/false);
  const SimVerdict v = simulate_training(opt, kEdoFp16, su);
  EXPECT_FALSE(v.safe);
  EXPECT_EQ(v.first_bad_step, 1) << v.why;
  EXPECT_TRUE(simulate_training(opt, StoragePlan{WeightStore::kBf16, WeightStore::kFp32, Rounding::kStochastic}, su).safe)
      << "bf16 has fp32's range";
}

TEST(Numerics, WhatWasNotRecordedIsPyTorchsDefaultAndSaidSo) {
  const SimOptimizer o = sim_optimizer(std::nullopt, "adagrad");
  EXPECT_EQ(o.kind, "adagrad");
  EXPECT_DOUBLE_EQ(o.p.lr, 0.01);
  EXPECT_DOUBLE_EQ(o.p.eps, 1e-10);
  EXPECT_NE(o.words().find("not recorded"), std::string::npos) << o.words();
  model::OptimizerParams p = params("adamw", 0.002, 1e-6);
  const SimOptimizer w = sim_optimizer(p, "adam");
  EXPECT_EQ(w.kind, "adamw") << "the hooks' class name wins over the state's kind";
  EXPECT_NE(w.words().find("betas 0.9/0.999"), std::string::npos) << "betas not in the note: torch's default";
  EXPECT_NE(w.words().find("[PyTorch's default betas: not recorded]"), std::string::npos) << w.words();
  p.beta1 = 0.8, p.beta2 = 0.99;
  EXPECT_EQ(sim_optimizer(p, "adam").words(), "adamw (lr 0.002, eps 1e-06, betas 0.8/0.99)");
}

// ---- tune() ----

TuneOptions cpu_options(uint64_t budget, const std::string& strategies = "") {
  TuneOptions o;
  o.backend = "cpu";
  o.reps = 1;
  o.budget_bytes = budget;
  o.strategies = strategies;
  o.time_limit_s = 0;
  return o;
}

const model::TuneCandidate* chosen(const model::TuneResult& r, const std::string& table) {
  for (const auto& ch : r.choices)
    if (ch.table == table && ch.candidate >= 0) return &r.candidates[static_cast<size_t>(ch.candidate)];
  return nullptr;
}

const model::TuneChoice* choice(const model::TuneResult& r, const std::string& table) {
  for (const auto& ch : r.choices)
    if (ch.table == table) return &ch;
  return nullptr;
}

// A training table: Adam state (two floats an element) and a dense gradient as PyTorch keeps them.
model::Table adam_table(const std::string& name, uint64_t rows, uint32_t dim, uint64_t lookups) {
  model::Table t = testing::synthetic_table(name, rows, dim, 1.05, lookups, 3);
  t.optimizer_bytes = 2 * t.weight_bytes;
  t.grad_bytes = t.weight_bytes;
  t.extra_by_kind = {{"adam.exp_avg", t.weight_bytes}, {"adam.exp_avg_sq", t.weight_bytes}, {"grad", t.weight_bytes}};
  t.optimizer_params = params("adam", 1e-3, 1e-8);
  return t;
}

TEST(PlanSafety, ATableReadWholeEveryStepIsNeverOffloadedPrunedOrHashed) {
  // A tied LM head's token table: 4096 rows, few read by lookups (the rest is what offload
  // and pruning would like), every row read by the head's matmul each step.
  model::Table tok = testing::synthetic_table("tok", 4096, 32, 1.3, 20000, 5);
  tok.dense_use = "the gradient reached 4096 of 4096 rows in a step whose lookups read 180 ids";
  model::Table other = testing::synthetic_table("other", 4096, 32, 1.3, 20000, 6);
  const auto p = testing::synthetic_profile({tok, other}, 10);
  TuneOptions o = cpu_options(uint64_t{4096} * 32 * 4 * 3 / 2, "offload,pruned,multihash,qr,fp16");
  o.max_error = INFINITY;
  const model::TuneResult r = tune(p, {}, o);
  size_t other_kinds = 0;
  for (const auto& c : r.candidates) {
    if (c.table == "tok")
      EXPECT_EQ(c.strategy, "fp32") << c.strategy << " offered for a table read whole (its head reads the weight as it is)";
    else
      other_kinds += c.strategy == "offload" || c.strategy == "pruned" || c.strategy == "multihash" || c.strategy == "qr";
  }
  EXPECT_GT(other_kinds, 0u) << "the same table without dense use gets them";
  ASSERT_TRUE(r.feasible);
  const model::TuneChoice* ch = choice(r, "tok");
  ASSERT_NE(ch, nullptr);
  EXPECT_EQ(chosen(r, "tok")->strategy, "fp32");
  EXPECT_NE(chosen(r, "other")->strategy, "fp32") << "the budget is met by the other table";
  EXPECT_NE(ch->why.find("read whole every step"), std::string::npos) << ch->why;
  EXPECT_EQ(r.table_named("tok")->dense_use, tok.dense_use);
  // Its step counts the dense read: every row once (4096 rows for ~2000 lookups a step: about
  // three times the lookups' own time).
  const model::TuneCandidate* tok_base = nullptr;
  const model::TuneCandidate* other_base = nullptr;
  for (const auto& c : r.candidates)
    if (c.strategy == "fp32") (c.table == "tok" ? tok_base : other_base) = &c;
  ASSERT_TRUE(tok_base && other_base);
  EXPECT_NE(tok_base->step_covers.find("dense read"), std::string::npos) << tok_base->step_covers;
  EXPECT_GT(tok_base->step_us, 2 * other_base->step_us) << tok_base->note;
  const auto j = plan_to_json(r);
  for (const auto& t : j["tables"])
    if (t["name"] == "tok") EXPECT_EQ(t["dense_use"], tok.dense_use);
}

// Rows 0..999 read in the first half, 0..1999 in the second (rows 1000..4095 never read).
model::Table drifting_table(const std::string& name, int64_t session, bool with_first_seen) {
  std::vector<std::vector<int64_t>> segments(2);
  for (int k = 0; k < 4; ++k)
    for (int64_t r = 0; r < 1000; ++r) segments[0].push_back(r);
  for (int k = 0; k < 2; ++k)
    for (int64_t r = 0; r < 2000; ++r) segments[1].push_back(r);
  return testing::segmented_table(name, 4096, segments, session, with_first_seen);
}

TEST(PlanSafety, PruningWhoseLossWasNotMeasuredOnHeldOutLookupsIsNotChosenNorShownAsZero) {
  const auto p = testing::synthetic_profile({drifting_table("emb", 1, /*with_first_seen=*/false)}, 8);
  TuneOptions o = cpu_options(4096 * 16 * 4 * 3 / 4, "pruned");
  o.max_error = INFINITY;
  model::TuneResult r = tune(p, {}, o);
  const model::TuneCandidate* pruned = nullptr;
  for (const auto& c : r.candidates)
    if (c.strategy == "pruned") pruned = &c;
  ASSERT_NE(pruned, nullptr);
  EXPECT_FALSE(pruned->validated);
  EXPECT_EQ(error_text(*pruned), "not validated");
  EXPECT_FALSE(r.feasible) << "only pruning fits, and it is not validated";
  // Asked for: chosen, and still not shown as 0 anywhere.
  o.allow_unvalidated = true;
  r = tune(p, {}, o);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(chosen(r, "emb")->strategy, "pruned");
  EXPECT_NE(choice(r, "emb")->why.find("error not validated"), std::string::npos) << choice(r, "emb")->why;
  const auto j = plan_to_json(r);
  EXPECT_TRUE(j["tables"][0]["error"].is_null());
  EXPECT_EQ(j["tables"][0]["validated"], false);
  EXPECT_EQ(j["allow_unvalidated"], true);
  const model::TuneResult back = plan_from_json(j);
  ASSERT_FALSE(back.candidates.empty());
  EXPECT_FALSE(back.candidates[0].validated);
  EXPECT_TRUE(back.allow_unvalidated);
}

TEST(PlanSafety, HeldOutValidationWorksAcrossRanksAsTheSumOfEachRanksLoss) {
  // Two ranks each read the drifting stream: each alone loses half its held-out lookups.
  auto p = testing::synthetic_profile({drifting_table("emb", 1, true), drifting_table("emb", 2, true)}, 8);
  model::Session s2 = p.sessions[0];
  s2.id = 2;
  s2.pid = 2;
  p.sessions.push_back(s2);
  TuneOptions o = cpu_options(uint64_t{1} << 30, "pruned");
  o.max_error = INFINITY;
  const model::TuneResult r = tune(p, {}, o);
  const model::TuneCandidate* pruned = nullptr;
  for (const auto& c : r.candidates)
    if (c.strategy == "pruned") pruned = &c;
  ASSERT_NE(pruned, nullptr);
  EXPECT_TRUE(pruned->validated) << pruned->note;
  EXPECT_DOUBLE_EQ(pruned->error, std::sqrt(0.5)) << pruned->note;
  EXPECT_EQ(pruned->params.held_out_streams, 2u) << model::params_to_text(pruned->params);
  // One rank without a record of its first reads: the whole table cannot be validated.
  auto q = p;
  q.tables[1].first_seen.clear();
  const model::TuneResult r2 = tune(q, {}, o);
  for (const auto& c : r2.candidates)
    if (c.strategy == "pruned") EXPECT_FALSE(c.validated);
}

TEST(PlanSafety, Fp16TrainingCountsFp32OptimizerStateAndFp16Gradients) {
  const model::Table t = adam_table("emb", 8192, 16, 50000);
  const auto p = testing::synthetic_profile({t}, 10);
  TuneOptions o = cpu_options(uint64_t{1} << 30, "fp16,bf16");
  const model::TuneResult r = tune(p, {}, o);
  const uint64_t w = t.weight_bytes;
  for (const auto& c : r.candidates) {
    if (c.strategy != "fp16" || !c.optimizer.empty()) continue;  // the recorded optimizer kept
    // fp16 weights + Adam's two fp32 moments + an fp16 dense gradient (what edo.apply_plan's
    // fp16 training keeps, and what autograd makes for an fp16 parameter).
    EXPECT_EQ(c.device_bytes, w / 2 + 2 * w + w / 2);
    EXPECT_TRUE(c.rejected.empty()) << c.rejected;
    EXPECT_NE(c.note.find("fp32 optimizer state and stochastic rounding"), std::string::npos) << c.note;
    EXPECT_NE(c.note.find("plain PyTorch, state in fp16"), std::string::npos) << "the NaN it avoids is said: " << c.note;
    EXPECT_EQ(strategy_label(r, c), "fp16+fp32_state+sr");
  }
}

TEST(PlanSafety, ACandidateTheJobsOptimizerBreaksIsRejectedWithItsReasonInTheWhy) {
  // SGD at lr 1e6 (a job that knows its gradients are tiny): an update overflows fp16, not bf16.
  model::Table t = testing::synthetic_table("emb", 8192, 16, 1.05, 50000, 3);
  t.grad_bytes = t.weight_bytes;
  t.extra_by_kind = {{"grad", t.weight_bytes}};
  t.optimizer_params = params("sgd", 1e6, 0);
  const auto p = testing::synthetic_profile({t}, 10);
  // Recorded: fp32 weights and gradient (2w); a 16-bit format with its 16-bit gradient: w.
  const model::TuneResult r = tune(p, {}, cpu_options(t.weight_bytes + 1, "fp16,bf16"));
  for (const auto& c : r.candidates)
    if (c.strategy == "fp16") {
      EXPECT_EQ(c.rejection, edo::model::RejectionCause::kUnsafeInFormat);
      EXPECT_NE(c.rejected.find("non-finite"), std::string::npos) << c.rejected;  // what the user reads
    } else if (c.strategy == "bf16") {
      EXPECT_TRUE(c.rejected.empty()) << c.rejected;
    }
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(chosen(r, "emb")->strategy, "bf16");
  EXPECT_NE(choice(r, "emb")->why.find("rejected as unsafe for the job's training (fp16:"), std::string::npos)
      << choice(r, "emb")->why;
}

// A run stopped early (the time limit, Ctrl-C) keeps the best feasible plan it has: what is
// sure to fit is measured with the baselines. Stopped once as many candidates as the baselines
// and one per table are done, a budget that needs every table halved still gets a plan.
TEST(PlanSafety, ARunStoppedAfterTheBaselinesStillHasAPlanWhenOneFits) {
  std::vector<model::Table> tables;
  for (int i = 0; i < 3; ++i) tables.push_back(testing::synthetic_table("t" + std::to_string(i), 8192, 16, 1.05, 40000, 10 + i));
  const auto p = testing::synthetic_profile(tables, 10);
  const uint64_t w = tables[0].weight_bytes;
  std::atomic<bool> cancel{false};
  TuneOptions o = cpu_options(3 * w * 55 / 100, "fp16,bf16,int8,int4,offload");
  o.representatives = false;  // each table measured (a class would lend its times to all three)
  const model::TuneResult r = tune(p, {}, o,
                                   [&](const TuneProgress& pr) { if (pr.done >= 6) cancel = true; }, &cancel);
  EXPECT_FALSE(r.complete);
  ASSERT_TRUE(r.feasible) << verdict_text(r);
  EXPECT_LE(r.plan_device_bytes, 3 * w * 55 / 100);
}

}  // namespace
}  // namespace edo::tuner
