// The plan's objective (docs/tuning.md "Objective"), on hand-built results whose right answer
// is known (replan() measures nothing, so times, errors and bytes are exactly as written):
// the least-change default keeps what fits as recorded, takes lossless changes before lossy
// ones and lossy ones before retraining, and among equal loss the fastest; `speed` keeps the
// fastest within the error limit; the recorded optimizer is kept unless its bytes are needed;
// a tied output layer never gets a sparse-gradient optimizer.
#include <gtest/gtest.h>

#include <cmath>

#include "candidates.h"
#include "edo/tuner/plan_io.h"
#include "edo/tuner/tuner.h"
#include "hand_built_plan.h"
#include "recordings.h"
#include "workload.h"

namespace edo::tuner {
namespace {

using model::TuneCandidate;
using model::TuneResult;

constexpr uint64_t kMiB = uint64_t{1} << 20;

using testing::Opt;

TuneResult hand_built(const std::vector<std::pair<std::string, std::vector<Opt>>>& tables, const std::string& objective) {
  return testing::hand_built(tables, {.objective = *edo::model::from_string<edo::model::Objective>(objective)});
}

const TuneCandidate& pick(const TuneResult& r, const std::string& table) {
  if (const TuneCandidate* c = testing::chosen(r, table)) return *c;
  throw std::runtime_error("no choice for " + table);
}

// The first case: everything fits, and fp16/int8 are faster than the recorded fp32.
TEST(Objective, LeastChangeKeepsEverythingAsRecordedWhenItFits) {
  const std::vector<Opt> opts{{"fp32", 64 * kMiB, 100}, {"fp16", 32 * kMiB, 60, 0.0002}, {"int8", 17 * kMiB, 50, 0.005}};
  TuneResult r = hand_built({{"a", opts}, {"b", opts}}, "least-change");
  replan(r, 1024 * kMiB, INFINITY);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(pick(r, "a").strategy, "fp32");
  EXPECT_EQ(pick(r, "b").strategy, "fp32");
  EXPECT_EQ(r.plan_step_us, 200);
  for (const auto& ch : r.choices) EXPECT_NE(ch.why.find("nothing needs to change"), std::string::npos) << ch.why;
  // --objective speed: the fastest within the limit, as before.
  TuneResult s = r;
  s.objective = edo::model::Objective::kSpeed;
  replan(s, 1024 * kMiB, INFINITY);
  EXPECT_EQ(pick(s, "a").strategy, "int8");
  EXPECT_EQ(s.plan_step_us, 100);
  // The frontier is the same (bytes vs step time) whatever the objective.
  EXPECT_EQ(r.frontier, s.frontier);
}

// The second case: with no error limit, PQ at error 0.51 is faster and smaller than a
// lossless offload that also fits: least change takes the offload.
TEST(Objective, LosslessBeforeLossyEvenWithoutAnErrorLimit) {
  TuneResult r = hand_built({{"t", {{"fp32", 100 * kMiB, 100}, {"offload", 30 * kMiB, 140}, {"pq", 5 * kMiB, 40, 0.51}}}},
                            "least-change");
  replan(r, 40 * kMiB, INFINITY);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(pick(r, "t").strategy, "offload");
  // Only when the budget needs it: PQ.
  replan(r, 10 * kMiB, INFINITY);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(pick(r, "t").strategy, "pq");
  EXPECT_NE(r.choices[0].why.find("that change less need more memory"), std::string::npos) << r.choices[0].why;
  TuneResult s = r;
  s.objective = edo::model::Objective::kSpeed;
  replan(s, 40 * kMiB, INFINITY);
  EXPECT_EQ(pick(s, "t").strategy, "pq");
}

// The least loss over the whole plan: of two tables, the one whose lossy format loses less
// goes lossy; equal loss (two lossless offloads) goes to the faster.
TEST(Objective, TheLeastTotalLossThenTheFastest) {
  TuneResult r = hand_built({{"a", {{"fp32", 100 * kMiB, 100}, {"int8", 26 * kMiB, 90, 0.02}}},
                             {"b", {{"fp32", 100 * kMiB, 100}, {"int8", 26 * kMiB, 90, 0.004}}}},
                            "least-change");
  replan(r, 130 * kMiB, INFINITY);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(pick(r, "a").strategy, "fp32");
  EXPECT_EQ(pick(r, "b").strategy, "int8");
  TuneResult o = hand_built({{"t", {{"fp32", 100 * kMiB, 100}, {"offload", 30 * kMiB, 180}, {"offload", 40 * kMiB, 130}}}},
                            "least-change");
  o.candidates[1].spec = "offload:slow";
  o.candidates[2].spec = "offload:fast";
  replan(o, 50 * kMiB, INFINITY);
  ASSERT_TRUE(o.feasible);
  EXPECT_EQ(pick(o, "t").spec, "offload:fast");
}

// The training case: the recorded optimizer and its row-wise Adagrad twin take the
// same time (the twin has fewer bytes). The recorded optimizer is kept (under either
// objective) unless the budget needs the twin's bytes; a lossy format comes before retraining.
TEST(Objective, TheRecordedOptimizerIsKeptUnlessItsBytesAreNeeded) {
  const std::vector<Opt> opts{{"fp32", 300 * kMiB, 100},
                              {"fp32", 110 * kMiB, 100, 0, true, "rowwise_adagrad"},
                              {"int8", 80 * kMiB, 90, 0.005},
                              {"int8", 30 * kMiB, 90, 0.005, true, "rowwise_adagrad"}};
  for (const char* objective : {"least-change", "speed"}) {
    TuneResult r = hand_built({{"emb", opts}}, objective);
    replan(r, 1024 * kMiB, INFINITY);
    ASSERT_TRUE(r.feasible);
    EXPECT_TRUE(pick(r, "emb").optimizer.empty()) << objective;
    EXPECT_EQ(pick(r, "emb").strategy, objective == std::string("speed") ? "int8" : "fp32") << objective;
    EXPECT_FALSE(pick(r, "emb").needs_retraining) << objective;
  }
  TuneResult r = hand_built({{"emb", opts}}, "least-change");
  replan(r, 120 * kMiB, INFINITY);  // int8 with its optimizer fits: lossy beats retraining
  EXPECT_EQ(pick(r, "emb").strategy, "int8");
  EXPECT_TRUE(pick(r, "emb").optimizer.empty());
  replan(r, 50 * kMiB, INFINITY);  // only the twin's bytes fit
  EXPECT_EQ(pick(r, "emb").optimizer, "rowwise_adagrad");
  EXPECT_NE(r.choices[0].why.find("needs retraining"), std::string::npos) << r.choices[0].why;
}

TEST(Objective, ThePlanDocumentRecordsItAndReadsItBack) {
  TuneResult r = hand_built({{"t", {{"fp32", 100 * kMiB, 100}}}}, "least-change");
  replan(r, 1024 * kMiB, INFINITY);
  const auto doc = plan_to_json(r);
  EXPECT_EQ(doc["objective"], "least-change");
  EXPECT_EQ(edo::model::to_string(plan_from_json(doc).objective), "least-change");
  auto old = doc;
  old.erase("objective");
  EXPECT_EQ(edo::model::to_string(plan_from_json(old).objective), "speed") << "plans made before objectives were the fastest";
  old["objective"] = "cheapest";
  EXPECT_THROW(plan_from_json(old), PlanError);
  // The step-time interval of each choice travels too, and only as a [low, high] pair.
  r.candidates[0].step_us_lo = 95;
  r.candidates[0].step_us_hi = 104;
  auto with = plan_to_json(r);
  EXPECT_EQ(with["tables"][0]["step_us_interval"], nlohmann::ordered_json::array({95.0, 104.0}));
  const TuneResult back = plan_from_json(with);
  EXPECT_EQ(back.candidates.at(0).step_us_lo, 95);
  EXPECT_EQ(back.candidates.at(0).step_us_hi, 104);
  with["tables"][0]["step_us_interval"] = nlohmann::ordered_json::array({104.0, 95.0});
  EXPECT_THROW(plan_from_json(with), PlanError);
}

// A tied output layer (an LM head on the embedding's weights) has a dense gradient: no
// sparse-gradient row-wise Adagrad for it; an untied training table of the same shape has one.
TEST(Objective, NoSparseGradientOptimizerForATiedOutputLayer) {
  auto emb = edo::testing::synthetic_table("model.emb", 20000, 16, 1.1, 60000, 9);
  emb.optimizer_bytes = 2 * emb.weight_bytes;
  emb.extra_by_kind = {{"adam.exp_avg", emb.weight_bytes}, {"adam.exp_avg_sq", emb.weight_bytes}};
  auto head = edo::testing::synthetic_table("model.lm_head", 20000, 16, 1.1, 20000, 10);
  auto tied = edo::testing::synthetic_profile({emb, head}, 10);
  tied.ties.push_back({1, "model.emb", "model.lm_head"});
  auto size = [](const kernels::StrategySpec&, uint64_t rows, uint32_t dim, uint64_t) { return FormatSize{rows * dim * 4, 0}; };
  const Workload wt = build_workload(tied, {}, "*");
  ASSERT_EQ(wt.groups.size(), 1u);
  ASSERT_FALSE(wt.groups[0].members.empty());
  for (const auto& c : enumerate_candidates(wt.groups[0], size)) EXPECT_NE(c.optimizer, "rowwise_adagrad") << c.spec;
  const Workload wu = build_workload(edo::testing::synthetic_profile({emb}, 10), {}, "*");
  size_t lever = 0;
  for (const auto& c : enumerate_candidates(wu.groups[0], size)) lever += c.optimizer == "rowwise_adagrad";
  EXPECT_GT(lever, 0u);
}

}  // namespace
}  // namespace edo::tuner
