// tune() and replan() on small synthetic recordings with known skew, on the CPU backend:
// plans respect the budget and the error limit, a budget above the baseline is no slower, the
// frontier is non-dominated, a strongly skewed table gets an offload cache while a uniform one
// does not, a fixed seed gives the same plan, Ctrl-C (the cancel flag) keeps what was measured,
// ties, identical tables and untuned tables are accounted, bad options are one-line errors.
#include "edo/model/strategy_params_json.h"
#include "edo/tuner/tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "edo/kernels/cuda.h"
#include "edo/tuner/plan_io.h"
#include "recordings.h"

namespace edo::tuner {
namespace {

using model::TuneResult;

const model::TuneCandidate* chosen(const TuneResult& r, const std::string& table) {
  for (const auto& c : r.choices)
    if (c.table == table && c.candidate >= 0) return &r.candidates[static_cast<size_t>(c.candidate)];
  return nullptr;
}

class TuneSkew : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto p = testing::synthetic_profile({testing::synthetic_table("skewed", 100000, 64, 1.2, 400000, 1),
                                         testing::synthetic_table("uniform", 100000, 64, 0.0, 400000, 2),
                                         testing::synthetic_table("small", 2000, 16, 1.0, 100000, 3)},
                                        25);
    TuneOptions o;
    o.backend = "cpu";
    o.budget_bytes = uint64_t{1} << 40;
    o.strategies = "fp16,int8,int4,offload,lowrank";
    o.max_error = INFINITY;  // time every candidate (replan() applies the limits under test)
    result_ = std::make_unique<TuneResult>(tune(p, {}, o));
  }
  static void TearDownTestSuite() { result_.reset(); }
  static std::unique_ptr<TuneResult> result_;
};
std::unique_ptr<TuneResult> TuneSkew::result_;

TEST_F(TuneSkew, RecordsTheMachineAndMeasuresEverything) {
  const TuneResult& r = *result_;
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_FALSE(r.device.empty());
  EXPECT_EQ(r.weights, "synthetic");
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.candidates_measured, r.candidates_total);
  EXPECT_GT(r.candidates_total, 10u);
  for (const auto& c : r.candidates) {
    EXPECT_TRUE(c.usable()) << c.table << " " << c.spec << ": " << c.note;
    EXPECT_GT(c.step_us, 0);
    if (c.strategy == "fp32" || c.strategy == "offload") {
      EXPECT_EQ(c.error, 0.0) << c.spec;
    }
    if (c.strategy == "int4") {
      EXPECT_GT(c.error, 0.01);
    }
    if (c.strategy == "offload") {
      ASSERT_TRUE(c.hit_rate && c.recorded_hit_rate && c.heldout_hit_rate) << c.table << " " << c.spec;
      // The hit rate the plan uses is the held-out one: fitted on the first 70 % of the
      // recorded order, replayed on the rest (cache_replay.h).
      EXPECT_EQ(*c.hit_rate, *c.heldout_hit_rate);
      ASSERT_TRUE(c.params.cache_rows) << c.spec;
      const double k = static_cast<double>(*c.params.cache_rows);
      const double rows = c.table == "small" ? 2000 : 100000;
      if (c.spec.find("static") != std::string::npos) {
        // A hot set scored on lookups it was not fitted to does not beat the whole recording's
        // coverage of its size (in-sample); on the uniform table it is any k rows: k / rows.
        EXPECT_LE(*c.hit_rate, *c.recorded_hit_rate + 0.03) << c.table << " " << c.spec;
        if (c.table == "uniform") {
          EXPECT_NEAR(*c.hit_rate, k / rows, 0.03) << c.spec;
        }
      } else {
        // These streams are stationary (each batch drawn from the same Zipf law): a warm LRU
        // misses no more on the last 30 % than the whole recording does, whose curve also
        // counts every row's first miss (the uniform table's 4 lookups a row: 0.58 held out,
        // 0.53 recorded).
        EXPECT_GE(*c.hit_rate, *c.recorded_hit_rate - 0.02) << c.table << " " << c.spec;
      }
    }
  }
  EXPECT_EQ(r.baseline_device_bytes, 2 * 100000u * 64 * 4 + 2000u * 16 * 4);
}

TEST_F(TuneSkew, ABudgetAboveTheBaselineIsNoSlower) {
  TuneResult r = *result_;
  replan(r, 2 * r.baseline_device_bytes, INFINITY);
  ASSERT_TRUE(r.feasible);
  EXPECT_LE(r.plan_step_us, r.baseline_step_us);
  EXPECT_LE(r.plan_device_bytes, 2 * r.baseline_device_bytes);
}

TEST_F(TuneSkew, PlansRespectBudgetAndErrorLimit) {
  for (double frac : {0.15, 0.3, 0.5, 0.8}) {
    for (double max_error : {0.0, 0.01, 0.1, double(INFINITY)}) {
      TuneResult r = *result_;
      const auto budget = static_cast<uint64_t>(frac * static_cast<double>(r.baseline_device_bytes));
      replan(r, budget, max_error);
      if (!r.feasible) {
        EXPECT_GT(r.min_feasible_bytes, budget);
        TuneResult again = *result_;
        replan(again, r.min_feasible_bytes, max_error);
        EXPECT_TRUE(again.feasible) << "the named smallest budget works";
        continue;
      }
      EXPECT_LE(r.plan_device_bytes, budget);
      uint64_t bytes = 0;
      double us = 0;
      ASSERT_EQ(r.choices.size(), 3u);
      for (const auto& ch : r.choices) {
        const auto* c = chosen(r, ch.table);
        ASSERT_NE(c, nullptr);
        EXPECT_LE(c->error, max_error) << ch.table;
        EXPECT_FALSE(ch.why.empty());
        bytes += ch.device_bytes;
        us += ch.step_us;
      }
      EXPECT_EQ(bytes, r.plan_device_bytes);
      EXPECT_NEAR(us, r.plan_step_us, 1e-6 * r.plan_step_us);
    }
  }
}

TEST_F(TuneSkew, FrontierIsNonDominatedAndHoldsThePlan) {
  TuneResult r = *result_;
  r.objective = edo::model::Objective::kSpeed;  // the frontier is bytes vs time: the fastest plan is on it
  // Without intervals no two candidates tie: the plan is the exact knapsack's (with them,
  // StableTiming.* checks the ties).
  for (auto& c : r.candidates) c.step_us_lo = c.step_us_hi = NAN;
  replan(r, r.baseline_device_bytes / 2, INFINITY);
  ASSERT_TRUE(r.feasible);
  ASSERT_GE(r.frontier.size(), 2u);
  for (size_t i = 1; i < r.frontier.size(); ++i) {
    EXPECT_GT(r.frontier[i].first, r.frontier[i - 1].first);
    EXPECT_LT(r.frontier[i].second, r.frontier[i - 1].second);
  }
  bool on = false;
  for (const auto& [b, us] : r.frontier) on = on || (b == r.plan_device_bytes && std::fabs(us - r.plan_step_us) < 1e-9);
  EXPECT_TRUE(on);
  // No measured combination beats a frontier point: in particular no single-table change of the
  // plan is both smaller and faster.
  for (const auto& ch : r.choices) {
    const auto* cur = chosen(r, ch.table);
    for (const auto& c : r.candidates) {
      if (c.table != ch.table || !c.usable()) continue;
      const uint64_t b = r.plan_device_bytes - cur->device_bytes + c.device_bytes;
      const double t = r.plan_step_us - cur->step_us + c.step_us;
      EXPECT_FALSE(b <= r.budget_bytes && t < r.plan_step_us - 1e-9) << "a better plan exists with " << c.spec;
    }
  }
}

TEST_F(TuneSkew, ASkewedTableGetsAnOffloadCacheAUniformOneDoesNot) {
  // Lossless only (max error 0), and 60 % of one big table must go: only an offload cache of a
  // few rows can do that, and only the skewed table's curve allows a small cache. The verdict
  // does not depend on timing: on the CPU an offloaded table costs its baseline's time plus
  // its misses' modelled transfer (hit rates of seeded batches), so whichever table is
  // offloaded, both baselines are in the total and only the misses decide.
  TuneResult r = *result_;
  const uint64_t table = 100000u * 64 * 4;
  replan(r, r.baseline_device_bytes - table * 6 / 10, 0.0);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(chosen(r, "skewed")->strategy, "offload");
  EXPECT_EQ(chosen(r, "uniform")->strategy, "fp32") << [&] {
    std::string s;
    for (const auto& c : r.candidates)
      if (c.table == "uniform") s += c.spec + " " + std::to_string(c.step_us) + " us, " + std::to_string(c.device_bytes) + " B\n";
    return s;
  }();
  const auto* off = chosen(r, "skewed");
  EXPECT_LT(off->device_bytes, table / 2);
  EXPECT_GT(*off->hit_rate, 0.5);
}

TEST_F(TuneSkew, AnImpossibleBudgetNamesTheSmallestFeasibleOne) {
  TuneResult r = *result_;
  replan(r, 1000, INFINITY);
  EXPECT_FALSE(r.feasible);
  EXPECT_TRUE(r.choices.empty());
  EXPECT_GT(r.min_feasible_bytes, 1000u);
  EXPECT_EQ(r.min_feasible_bytes, r.frontier.front().first);
}

TEST(Tune, FixedSeedGivesTheSamePlanAndTheSameErrors) {
  auto p = testing::synthetic_profile({testing::synthetic_table("a", 30000, 32, 1.1, 100000, 4),
                                       testing::synthetic_table("b", 30000, 32, 0.8, 100000, 5)},
                                      10);
  TuneOptions o;
  o.backend = "cpu";
  o.strategies = "int8,int4,lowrank";
  o.reps = 1;
  o.seed = 123;
  // Under this error limit only fp32 and int8 rows qualify (int4 and low rank of random
  // weights are far worse), and only int8 for both tables fits: the plan is decided by bytes
  // and errors, which a seed fixes, not by timing.
  o.max_error = 0.02;
  o.budget_bytes = 2 * (30000u * 48);
  const TuneResult r1 = tune(p, {}, o), r2 = tune(p, {}, o);
  ASSERT_TRUE(r1.feasible && r2.feasible);
  ASSERT_EQ(r1.candidates.size(), r2.candidates.size());
  for (size_t i = 0; i < r1.candidates.size(); ++i) {
    EXPECT_EQ(r1.candidates[i].spec, r2.candidates[i].spec);
    EXPECT_EQ(r1.candidates[i].error, r2.candidates[i].error) << r1.candidates[i].spec;
    EXPECT_EQ(r1.candidates[i].device_bytes, r2.candidates[i].device_bytes);
  }
  ASSERT_EQ(r1.choices.size(), r2.choices.size());
  for (size_t i = 0; i < r1.choices.size(); ++i) {
    EXPECT_EQ(r1.choices[i].candidate, r2.choices[i].candidate) << r1.choices[i].table;
    EXPECT_EQ(r1.candidates[static_cast<size_t>(r1.choices[i].candidate)].strategy, "int8");
  }
  o.seed = 124;
  const TuneResult r3 = tune(p, {}, o);
  bool differs = false;
  for (size_t i = 0; i < r1.candidates.size(); ++i) differs = differs || r1.candidates[i].error != r3.candidates[i].error;
  EXPECT_TRUE(differs) << "another seed draws other synthetic weights";
}

TEST(Tune, CancelKeepsWhatWasMeasuredAndPlansWithIt) {
  auto p = testing::synthetic_profile({testing::synthetic_table("a", 20000, 16, 1.1, 50000, 6),
                                       testing::synthetic_table("b", 20000, 16, 1.1, 50000, 7)},
                                      5);
  TuneOptions o;
  o.backend = "cpu";
  o.budget_bytes = uint64_t{1} << 40;
  o.reps = 1;
  std::atomic<bool> cancel{false};
  uint64_t seen_total = 0;
  const TuneResult r = tune(p, {}, o,
                            [&](const TuneProgress& pr) {
                              seen_total = pr.total;
                              if (pr.done >= 4) cancel.store(true);
                            },
                            &cancel);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(edo::model::to_string(r.stop_reason), "cancelled");
  EXPECT_GE(r.candidates_measured, 4u);
  EXPECT_LT(r.candidates_measured, r.candidates_total);
  EXPECT_EQ(seen_total, r.candidates_total);
  EXPECT_TRUE(r.feasible);  // both baselines were measured first
  size_t notes = 0;
  // (b is in a's timing class: its candidates whose match in a was not measured say so after
  // the reason, "...; its class's representative a was not measured".)
  for (const auto& c : r.candidates) {
    notes += !c.measured && (c.not_timed == edo::model::NotTimedCause::kStopped || c.not_timed == edo::model::NotTimedCause::kRepresentativeNot);
    if (!c.measured) EXPECT_EQ(c.note.rfind("not measured: cancelled", 0), 0u) << c.note;  // what the user reads
  }
  EXPECT_EQ(notes, r.candidates_total - r.candidates_measured);
}

TEST(Tune, TimeLimitStopsMeasuring) {
  auto p = testing::synthetic_profile({testing::synthetic_table("a", 50000, 32, 1.1, 50000, 8)}, 5);
  TuneOptions o;
  o.backend = "cpu";
  o.budget_bytes = uint64_t{1} << 40;
  o.time_limit_s = 0.3;
  const TuneResult r = tune(p, {}, o);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(edo::model::to_string(r.stop_reason), "time limit");
  EXPECT_LT(r.candidates_measured, r.candidates_total);
  EXPECT_GE(r.candidates_measured, 1u);  // the baseline always gets its turn first
}

TEST(Tune, TiesTrainingTablesAndUntunedTables) {
  auto emb = testing::synthetic_table("model.emb", 20000, 16, 1.1, 60000, 9);
  emb.optimizer_bytes = 2 * emb.weight_bytes;
  emb.extra_by_kind = {{"adam.exp_avg", emb.weight_bytes}, {"adam.exp_avg_sq", emb.weight_bytes}};
  auto head = testing::synthetic_table("model.lm_head", 20000, 16, 1.1, 20000, 10);
  auto other = testing::synthetic_table("other", 5000, 8, 1.0, 10000, 11);
  auto p = testing::synthetic_profile({emb, head, other}, 10);
  p.ties.push_back({1, "model.emb", "model.lm_head"});
  TuneOptions o;
  o.backend = "cpu";
  o.tables = "model.*";
  o.strategies = "int8";
  o.reps = 1;
  // The moments are twice the weights. The tied head's gradient is dense: no row-wise Adagrad
  // with sparse gradients for the pair; int8 with the recorded Adam (state sized to the int8
  // parameters) is what fits.
  // Half the fp32 weights (int8 rows with their scales take less) plus the full Adam state.
  o.budget_bytes = emb.weight_bytes / 2 + 2 * emb.weight_bytes + other.weight_bytes;
  const TuneResult r = tune(p, {}, o);
  ASSERT_TRUE(r.feasible) << r.min_feasible_bytes;
  for (const auto& c : r.candidates) EXPECT_NE(c.optimizer, "rowwise_adagrad") << c.spec;
  ASSERT_EQ(r.choices.size(), 3u);
  const auto& ch_emb = r.choices[0];
  EXPECT_EQ(ch_emb.table, "model.emb");
  const auto* c = chosen(r, "model.emb");
  EXPECT_EQ(c->strategy, "int8");
  EXPECT_TRUE(c->optimizer.empty()) << "the recorded optimizer";
  EXPECT_EQ(r.choices[1].table, "model.lm_head");
  EXPECT_EQ(r.choices[1].shares_with, "model.emb");
  EXPECT_EQ(r.choices[1].device_bytes, 0u);
  // The head's lookups are a quarter of the pair's: so is its part of the step time.
  EXPECT_NEAR(r.choices[1].step_us, 0.25 * c->step_us, 1e-9 * c->step_us);
  EXPECT_EQ(r.choices[2].table, "other");
  EXPECT_EQ(r.choices[2].candidate, -1);
  EXPECT_EQ(r.choices[2].device_bytes, other.weight_bytes);  // kept, and counted against the budget
  EXPECT_EQ(r.plan_device_bytes, c->device_bytes + other.weight_bytes);
}

model::WeightSnapshot snapshot(const model::Table& t, uint64_t seed) {
  model::WeightSnapshot s;
  s.session_id = 1;
  s.table = t.name;
  s.dtype = "fp32";
  s.dim = t.dim;
  s.table_rows = t.rows;
  const auto top = t.aggregate.top_rows(64);
  for (const auto& [row, count] : top) s.rows.push_back(row);
  s.hot_count = s.rows.size();
  for (uint64_t r : s.rows)
    for (uint32_t d = 0; d < t.dim; ++d) {
      const float v = static_cast<float>((r * 31 + d * 7 + seed) % 97) / 97.0f - 0.5f;
      s.values.append(reinterpret_cast<const char*>(&v), 4);
    }
  return s;
}

TEST(Tune, IdenticalTablesMayShareOneCopy) {
  // Two untied tables with the same weights (a model loaded twice): tuned together; under a
  // budget that holds one copy only, losslessly, they share it.
  auto a = testing::synthetic_table("enc.emb", 20000, 16, 1.1, 60000, 13);
  auto b = testing::synthetic_table("dec.emb", 20000, 16, 1.1, 60000, 13);
  auto c = testing::synthetic_table("other", 20000, 16, 1.1, 60000, 14);
  const std::vector<model::WeightSnapshot> snaps{snapshot(a, 1), snapshot(b, 1), snapshot(c, 2)};
  auto p = testing::synthetic_profile({a, b, c}, 10);
  TuneOptions o;
  o.backend = "cpu";
  o.strategies = "int8";
  o.reps = 1;
  o.max_error = 0;
  o.budget_bytes = 2 * a.weight_bytes;  // one copy of the pair + "other" as recorded
  const TuneResult r = tune(p, snaps, o);
  EXPECT_EQ(r.weights, "recorded");
  ASSERT_TRUE(r.feasible) << r.min_feasible_bytes << [&] {
    std::string s;
    for (const auto& n : r.notes) s += "\nnote: " + n;
    for (const auto& c : r.candidates)
      s += "\n" + c.table + " " + c.spec + " " + model::params_to_text(c.params) + " " + std::to_string(c.device_bytes) + " B, error " +
           std::to_string(c.error) + " " + c.note;
    return s;
  }();
  ASSERT_EQ(r.choices.size(), 3u);
  // One of the pair owns the copy (in its recorded format: int8 has error), the other shares it.
  std::string owner_name, member_name;
  for (const auto& ch : r.choices) {
    if (ch.table == "other") continue;
    (ch.shares_with.empty() ? owner_name : member_name) = ch.table;
  }
  ASSERT_FALSE(owner_name.empty());
  ASSERT_FALSE(member_name.empty());
  const auto* owner = chosen(r, owner_name);
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner->strategy, "fp32");
  EXPECT_EQ(owner->params.shared_by, std::vector<std::string>{member_name}) << model::params_to_text(owner->params);
  EXPECT_EQ(owner->device_bytes, a.weight_bytes);
  for (const auto& ch : r.choices) {
    if (ch.table == owner_name) { EXPECT_NE(ch.why.find("one copy shared with " + member_name), std::string::npos) << ch.why; }
    if (ch.table != member_name) continue;
    EXPECT_EQ(ch.shares_with, owner_name);
    EXPECT_EQ(ch.device_bytes, 0u);
    EXPECT_NE(ch.why.find("same weights"), std::string::npos) << ch.why;
  }
  EXPECT_EQ(r.plan_device_bytes, 2 * a.weight_bytes);
  // With room for both copies the pair may stay apart; the plan's bytes add up either way.
  TuneResult wide = r;
  replan(wide, 10 * a.weight_bytes, 0);
  uint64_t bytes = 0;
  for (const auto& ch : wide.choices) bytes += ch.device_bytes;
  EXPECT_EQ(bytes, wide.plan_device_bytes);
  // Sharing made slower: the baseline keeps the pair apart, each table with its own copy.
  TuneResult apart = r;
  for (auto& c : apart.candidates)
    if (c.params.shared_by) c.step_us *= 2;  // sharing made slower
  replan(apart, 10 * a.weight_bytes, 0);
  ASSERT_TRUE(apart.feasible);
  for (const auto& ch : apart.choices) {
    if (ch.table == "other") continue;
    EXPECT_TRUE(ch.shares_with.empty()) << ch.table;
    EXPECT_EQ(ch.device_bytes, a.weight_bytes) << ch.table;
    if (ch.table == member_name) { EXPECT_NE(ch.why.find("kept apart"), std::string::npos) << ch.why; }
  }
  // In the plan document: the shared member is "shared" with its owner, the apart one names it.
  for (const auto& [result, strategy] : {std::pair<const TuneResult*, std::string>{&r, "shared"}, {&apart, "fp32"}}) {
    const auto doc = plan_to_json(*result);
    for (const auto& t : doc["tables"]) {
      if (t["name"] != member_name) continue;
      EXPECT_EQ(t["strategy"], strategy);
      EXPECT_EQ(t["params"].value(strategy == "shared" ? "with" : "same_weights_as", ""), owner_name) << t.dump();
    }
  }
  // A table whose weights differ in one compared row is not identical.
  auto snaps2 = snaps;
  snaps2[1].values[5] ^= 1;
  const TuneResult differ = tune(p, snaps2, o);
  for (const auto& ch : differ.choices) EXPECT_TRUE(ch.shares_with.empty()) << ch.table;
  EXPECT_FALSE(differ.feasible) << "one copy each does not fit the budget";
}

TEST(Tune, BadOptionsAreOneLineErrors) {
  auto p = testing::synthetic_profile({testing::synthetic_table("a", 1000, 8, 1.0, 1000, 12)}, 1);
  TuneOptions o;
  o.budget_bytes = 1 << 20;
  o.backend = "cpu";
  o.tables = "nothing*";
  try {
    tune(p, {}, o);
    FAIL();
  } catch (const TuneError& e) {
    EXPECT_NE(std::string(e.what()).find("no table matches --tables 'nothing*' (tables: a)"), std::string::npos) << e.what();
  }
  o.tables = "*";
  o.strategies = "int8,zip";
  EXPECT_THROW(tune(p, {}, o), std::invalid_argument);
  o.strategies = "";
  o.backend = "tpu";
  EXPECT_THROW(tune(p, {}, o), std::invalid_argument);
  if (!kernels::cuda::device_status().empty()) {
    o.backend = "cuda";
    try {
      tune(p, {}, o);
      FAIL();
    } catch (const TuneError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--backend cpu"), std::string::npos) << e.what();
    }
    EXPECT_EQ(resolve_backend("auto"), "cpu");
  }
}

// Issue 33 point 2: a table whose lookup output per step (the pytorch.activation note) is larger
// than anything a format change saves gets the checkpointing note; one with a small output does
// not, and neither does one read without autograd (no output kept for the backward pass).
TEST(Tune, NotesWhenCheckpointingTheOutputSavesMoreThanAnyFormat) {
  // 4000 x 16 fp32 = 256,000 bytes of weights: no format saves more than that.
  auto p = testing::synthetic_profile({testing::synthetic_table("tok", 4000, 16, 1.1, 20000, 21),
                                       testing::synthetic_table("small", 3000, 16, 1.1, 20000, 22),
                                       testing::synthetic_table("serving", 2000, 16, 1.1, 20000, 23)},
                                      5);
  // B=64, T=512, D=16 fp32: 2 MiB of output, the same of gradient.
  p.metadata["session.1.pytorch.activation.tok"] = R"({"output_bytes": 2097152, "grad_bytes": 2097152, "calls": 1})";
  p.metadata["session.1.pytorch.activation.small"] = R"({"output_bytes": 1024, "grad_bytes": 1024, "calls": 1})";
  p.metadata["session.1.pytorch.activation.serving"] = R"({"output_bytes": 2097152, "grad_bytes": 0, "calls": 1})";
  TuneOptions o;
  o.backend = "cpu";
  o.budget_bytes = uint64_t{1} << 40;
  o.time_limit_s = 60;
  const TuneResult r = tune(p, {}, o);
  std::vector<std::string> notes;
  for (const auto& n : r.notes)
    if (n.find("activation checkpointing") != std::string::npos) notes.push_back(n);
  ASSERT_EQ(notes.size(), 1u) << (notes.empty() ? std::string("none") : notes.back());
  EXPECT_EQ(notes[0].rfind("tok: recomputing its lookups' output in the backward pass (activation checkpointing) would free 2.00 MiB per step, "
                           "more than the best format change measured (",
                           0),
            0u)
      << notes[0];
}

}  // namespace
}  // namespace edo::tuner
