// The training levers of issue 33 (llm_candidates.h): a sparse gradient for a table trained
// densely by Adam/AdamW/Adagrad, and freezing for a fine-tune. Bytes are hand-computed from the
// table's shape and the lookups per step the synthetic recording has.
#include "llm_candidates.h"

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "edo/kernels/encode.h"
#include "step_timing.h"
#include "edo/tuner/plan_io.h"
#include "edo/tuner/tuner.h"
#include "recordings.h"
#include "workload.h"

namespace edo::tuner {
namespace {

FormatSize lever_size(const kernels::StrategySpec& spec, uint64_t rows, uint32_t dim, uint64_t) {
  const auto s = kernels::strategy_size(spec, rows, dim, nullptr);
  return {s.device_bytes, s.host_bytes};
}

model::OptimizerParams lever_params(const std::string& kind, double weight_decay) {
  model::OptimizerParams p;
  p.kind = kind;
  p.lr = 1e-3;
  p.eps = kind == "adagrad" ? 1e-10 : 1e-8;
  p.weight_decay = weight_decay;
  if (kind != "adagrad") p.beta1 = 0.9, p.beta2 = 0.999;
  return p;
}

// 20000 x 16 fp32 rows, 50000 lookups over 10 steps (5000 a step), a dense gradient.
model::Table trained(const std::string& kind, double weight_decay) {
  model::Table t = testing::synthetic_table("tok", 20000, 16, 1.0, 50000, 4);
  const bool adam = kind != "adagrad";
  t.optimizer_bytes = (adam ? 2 : 1) * t.weight_bytes;
  t.grad_bytes = t.weight_bytes;
  const std::string k = adam ? "adam" : "adagrad";
  if (adam) t.extra_by_kind = {{"adam.exp_avg", t.weight_bytes}, {"adam.exp_avg_sq", t.weight_bytes}, {"grad", t.weight_bytes}};
  else t.extra_by_kind = {{"adagrad.sum", t.weight_bytes}, {"grad", t.weight_bytes}};
  t.optimizer_params = lever_params(kind, weight_decay);
  return t;
}

const Candidate* lever_of(const std::vector<Candidate>& cands, const std::string& optimizer) {
  for (const auto& c : cands)
    if (c.optimizer == optimizer) return &c;
  return nullptr;
}

TEST(TrainingLevers, SparseGradientHoldsOneRowAndOneIndexPerLookupOfAStep) {
  const model::Table t = trained("adam", 0);
  const TableGroup g = build_workload(testing::synthetic_profile({t}, 10), {}, "*").groups.at(0);
  EXPECT_EQ(sparse_optimizer_for(g), "sparse_adam");
  EXPECT_DOUBLE_EQ(sparse_gradient_rows_per_step(g), 5000.0);
  const auto cands = enumerate_candidates(g, lever_size);
  const Candidate* c = lever_of(cands, "sparse_adam");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->strategy, "fp32");
  EXPECT_FALSE(c->baseline);
  EXPECT_FALSE(c->needs_retraining);
  // Weights (1,280,000) + Adam's two moments (2,560,000) + 5000 x (16 x 4 + 8) gradient bytes.
  EXPECT_EQ(c->device_bytes, uint64_t{1280000} + 2560000 + 5000 * 72);
  EXPECT_EQ(c->params.gradient, "sparse");
  EXPECT_EQ(c->params.sparse_gradient_bytes, 360000u);
  EXPECT_EQ(c->params.dense_gradient_bytes, 1280000u);
  EXPECT_EQ(lever_of(cands, "frozen"), nullptr) << "freezing is offered only for a fine-tune";
}

TEST(TrainingLevers, AdagradKeepsItsOptimizerAndSgdOrASparseGradientGetNone) {
  const TableGroup ada = build_workload(testing::synthetic_profile({trained("adagrad", 0)}, 10), {}, "*").groups.at(0);
  EXPECT_EQ(sparse_optimizer_for(ada), "sparse_adagrad");
  const Candidate* c = lever_of(enumerate_candidates(ada, lever_size), "sparse_adagrad");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->device_bytes, uint64_t{1280000} * 2 + 5000 * 72);
  model::Table sgd = trained("adam", 0);
  sgd.optimizer_bytes = 0;
  sgd.extra_by_kind = {{"grad", sgd.weight_bytes}};
  sgd.optimizer_params = lever_params("sgd", 0);
  EXPECT_EQ(sparse_optimizer_for(build_workload(testing::synthetic_profile({sgd}, 10), {}, "*").groups.at(0)), "");
  model::Table sparse = trained("adam", 0);
  sparse.grad_bytes = 5000 * 72;  // already sparse: not the weights' bytes
  sparse.extra_by_kind["grad"] = sparse.grad_bytes;
  EXPECT_EQ(sparse_optimizer_for(build_workload(testing::synthetic_profile({sparse}, 10), {}, "*").groups.at(0)), "");
  model::Table head = trained("adam", 0);
  head.dense_use = "nn.Linear 'lm_head' holds the weight";
  EXPECT_EQ(sparse_optimizer_for(build_workload(testing::synthetic_profile({head}, 10), {}, "*").groups.at(0)), "");
}

TEST(TrainingLevers, FrozenKeepsTheWeightsOnlyAndIsOfferedForAFineTune) {
  TableGroup g = build_workload(testing::synthetic_profile({trained("adam", 0)}, 10), {}, "*").groups.at(0);
  g.fine_tune = true;
  const auto cands = enumerate_candidates(g, lever_size);
  const Candidate* c = lever_of(cands, "frozen");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->device_bytes, 1280000u) << "no gradient, no optimizer state";
  EXPECT_EQ(candidate_step(training_step_of(g), *c).training, false);
}

TuneOptions lever_options(uint64_t budget) {
  TuneOptions o;
  o.backend = "cpu";
  o.reps = 1;
  o.budget_bytes = budget;
  o.strategies = "fp32,sparse_gradient";
  o.time_limit_s = 0;
  o.max_error = INFINITY;
  return o;
}

const model::TuneCandidate* tuned_lever(const model::TuneResult& r, const std::string& optimizer) {
  for (const auto& c : r.candidates)
    if (c.optimizer == optimizer) return &c;
  return nullptr;
}

TEST(TrainingLevers, SparseGradientIsRefusedWhenTheJobsWeightDecayCannotBeCarriedOver) {
  // AdamW's decoupled decay: torch.optim.SparseAdam has none, so the job would train differently.
  const model::TuneResult bad = tune(testing::synthetic_profile({trained("adamw", 0.01)}, 10), {}, lever_options(0));
  const model::TuneCandidate* c = tuned_lever(bad, "sparse_adam");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->rejected.find("SparseAdam has no weight decay"), std::string::npos) << c->rejected;
  EXPECT_EQ(c->rejection, edo::model::RejectionCause::kSparseGradientRefused);
  EXPECT_FALSE(c->plannable(true));
  // Adagrad with weight decay: torch.optim.Adagrad raises on a sparse gradient.
  const model::TuneResult ada = tune(testing::synthetic_profile({trained("adagrad", 0.1)}, 10), {}, lever_options(0));
  ASSERT_NE(tuned_lever(ada, "sparse_adagrad"), nullptr);
  EXPECT_NE(tuned_lever(ada, "sparse_adagrad")->rejected.find("not compatible with sparse gradients"), std::string::npos);
  // Adam without decay: kept, with what was checked in its note; its step is a sparse one.
  const model::TuneResult ok = tune(testing::synthetic_profile({trained("adam", 0)}, 10), {}, lever_options(0));
  const model::TuneCandidate* k = tuned_lever(ok, "sparse_adam");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->rejected.empty()) << k->rejected;
  EXPECT_NE(k->note.find("SparseAdam"), std::string::npos) << k->note;
  EXPECT_NE(k->step_covers.find("sparse gradient"), std::string::npos) << k->step_covers;
  EXPECT_EQ(tuned_lever(ok, "frozen"), nullptr);
}

TEST(TrainingLevers, AFineTunePlanFreezesATableWhenOnlyThatFitsAndSaysSoInItsPlan) {
  // Budget: the weights and a tenth more. Only freezing fits (the sparse gradient keeps Adam's
  // moments; row-wise Adagrad its accumulator and gradient).
  TuneOptions o = lever_options(1280000 + 128000);
  o.fine_tune = true;
  const model::TuneResult r = tune(testing::synthetic_profile({trained("adam", 0)}, 10), {}, o);
  ASSERT_TRUE(r.feasible);
  EXPECT_TRUE(r.fine_tune);
  ASSERT_EQ(r.choices.size(), 1u);
  ASSERT_GE(r.choices[0].candidate, 0);
  const model::TuneCandidate& c = r.candidates[static_cast<size_t>(r.choices[0].candidate)];
  EXPECT_EQ(c.optimizer, "frozen");
  EXPECT_EQ(c.device_bytes, 1280000u);
  const auto j = plan_to_json(r);
  EXPECT_EQ(j["fine_tune"], true);
  EXPECT_EQ(j["tables"][0]["optimizer"], "frozen");
  EXPECT_EQ(j["tables"][0]["gradient"], "none");
  EXPECT_EQ(j["tables"][0]["strategy_label"], "fp32+frozen");
  // Round trips: JSON and YAML read back to the same plan; a plan without the key is not a fine-tune.
  EXPECT_EQ(plan_to_json(plan_from_text(plan_to_json_text(r))).dump(), j.dump());
  EXPECT_EQ(plan_to_json(plan_from_text(plan_to_yaml(r))).dump(), j.dump());
  auto old = j;
  old.erase("fine_tune");
  EXPECT_FALSE(plan_from_json(old).fine_tune);
  // Without --fine-tune the same budget has no plan.
  TuneOptions no = lever_options(1280000 + 128000);
  EXPECT_FALSE(tune(testing::synthetic_profile({trained("adam", 0)}, 10), {}, no).feasible);
}

}  // namespace
}  // namespace edo::tuner

namespace edo::tuner {
namespace {

// The hooks' note of an untied head (profiler/python/edo/facts/_family.py's fields).
void note_head(model::Profile& p, const std::string& table, bool tied, uint64_t rows, uint64_t dim) {
  const uint64_t w = rows * dim * 4;
  p.metadata["pytorch.lm_head." + table] = nlohmann::json{{"head", "lm_head"}, {"tied", tied}, {"rows", rows}, {"dim", dim},
                                                          {"dtype", "fp32"}, {"weight_bytes", tied ? 0 : w},
                                                          {"grad_bytes", tied ? 0 : w}, {"optimizer_bytes", tied ? 0 : 2 * w}}
                                               .dump();
}

TEST(TrainingLevers, AnUntiedHeadOfTheTablesShapeGetsATieCandidateWithTheHeadsBytes) {
  model::Profile p = testing::synthetic_profile({trained("adam", 0)}, 10);
  note_head(p, "tok", false, 20000, 16);
  TuneOptions o;
  o.backend = "cpu";
  o.reps = 1;
  o.budget_bytes = uint64_t{1} << 30;
  o.strategies = "fp32";
  o.time_limit_s = 0;
  const model::TuneResult r = tune(p, {}, o);
  const model::TuneCandidate* c = nullptr;
  for (const auto& x : r.candidates)
    if (x.optimizer == "tie_head") c = &x;
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->needs_retraining);
  EXPECT_EQ(c->device_bytes, uint64_t{1280000} * 4) << "the table keeps its own weights, state and dense gradient";
  EXPECT_EQ(c->params.head, "lm_head");
  EXPECT_EQ(c->params.saved_bytes, uint64_t{1280000} * 4);
  EXPECT_EQ(c->params.saved_optimizer_bytes, uint64_t{1280000} * 2);
  // Chosen nowhere by default: what it frees is outside the tables.
  ASSERT_EQ(r.choices.size(), 1u);
  EXPECT_NE(r.candidates[static_cast<size_t>(r.choices[0].candidate)].optimizer, "tie_head");
  // A head of another shape, or one already tied: no candidate.
  for (bool tied : {false, true}) {
    model::Profile q = testing::synthetic_profile({trained("adam", 0)}, 10);
    note_head(q, "tok", tied, tied ? 20000 : 19999, 16);
    for (const auto& x : tune(q, {}, o).candidates) EXPECT_NE(x.optimizer, "tie_head") << tied;
  }
}

}  // namespace
}  // namespace edo::tuner
