// The "trim vocabulary" candidate (trim_candidates.h) on the hand-worked stream of
// vocab_hand_stream.h: an 8 x 4 fp32 token table trained with Adam holds 4 x 128 = 512 bytes
// (weights, gradient, two moments: 64 bytes a row); its remap is 8 int64 = 64 bytes.
//   99 %:    ids {1, 2, 3} kept, 5 dropped: 512 - 320 + 64 = 256 bytes; held out 20 of 300 lost
//   99.9 %:  ids {1..5} kept, 3 dropped:    512 - 192 + 64 = 384 bytes; held out 10 of 300 lost
//   99.99 %: the same five ids: not offered twice
// An untied head of the same shape and state gives back the dropped share of its 512 bytes; the
// logits of 100 tokens a step (a 10 x 10 x 4 fp32 output: 1600 bytes) and their gradient shrink
// by 2 x 100 x dropped x 4 bytes.
#include "trim_candidates.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "edo/tuner/tuner.h"
#include "edo/tuner/vocab_coverage.h"
#include "recordings.h"
#include "vocab_hand_stream.h"

namespace edo::tuner {
namespace {

TableGroup token_group(bool tied, uint64_t sample_refs = 1 << 16) {
  TableGroup g;
  g.name = "wte";
  g.rows = testing::kVocab;
  g.dim = 4;
  g.dtype = "f32";
  g.weight_bytes = g.grad_bytes = 128;
  g.optimizer_bytes = 256;
  g.optimizer = "adam";
  g.counts = testing::recorded_vocab(testing::hand_stream(), sample_refs);
  LmHead h;
  h.name = "lm_head";
  h.tied = tied;
  h.rows = testing::kVocab;
  h.dim = 4;
  h.dtype = "f32";
  if (!tied) {
    h.weight_bytes = h.grad_bytes = 128;
    h.optimizer_bytes = 256;
  }
  g.lm_head = h;
  Activation a;
  a.output_bytes = a.grad_bytes = 1600;
  a.shape = {10, 10, 4};
  a.dtype = "f32";
  g.activation = a;
  if (tied) {
    g.dense_use = "F.linear";
    g.members = {"lm_head"};  // the tied head, registered under its own name on the same weights
  }
  return g;
}

Candidate baseline_of(const TableGroup& g) {
  Candidate c;
  c.strategy = "fp32";
  c.set_spec("fp32");
  c.baseline = true;
  c.device_bytes = g.recorded_device_bytes();
  return c;
}

TEST(TrimVocab, UntiedTableHandComputed) {
  const TableGroup g = token_group(false);
  EXPECT_EQ(trim_vocab_not_offered(g), "");
  std::vector<Candidate> out;
  add_trim_vocab_candidates(g, baseline_of(g), out);
  ASSERT_EQ(out.size(), 2u) << "99.99 % keeps the 99.9 % set: offered once";
  const uint64_t want_bytes[] = {256, 384}, dropped[] = {5, 3}, lost[] = {20, 10};
  const char* cov[] = {"99", "99.9"};
  for (size_t i = 0; i < 2; ++i) {
    const Candidate& c = out[i];
    EXPECT_EQ(c.strategy, "fp32");
    EXPECT_EQ(c.optimizer, "trim_vocab");
    EXPECT_TRUE(c.needs_retraining);
    EXPECT_FALSE(c.baseline);
    EXPECT_EQ(c.measure_as, 0);
    EXPECT_EQ(c.device_bytes, want_bytes[i]) << i;
    ASSERT_TRUE(c.held_out_error);
    EXPECT_DOUBLE_EQ(*c.held_out_error, lost[i] / 300.0);
    const model::StrategyParams& p = c.params;
    EXPECT_EQ(p.vocab_coverage, cov[i]);
    EXPECT_EQ(p.kept_rows, 8 - dropped[i]);
    EXPECT_EQ(p.unk_old_id, 1u) << "the lowest kept id, as edo export --format vocab-remap";
    EXPECT_EQ(p.held_out_lost_lookups, lost[i]);
    EXPECT_EQ(p.held_out_lookups, 300u);
    EXPECT_EQ(p.saved_table_bytes, 64 * dropped[i]);
    EXPECT_EQ(p.remap_bytes, 64u);
    EXPECT_EQ(p.head, "lm_head");
    EXPECT_EQ(p.head_kind, "untied");
    EXPECT_EQ(p.saved_head_bytes, 64 * dropped[i]);
    EXPECT_EQ(p.saved_logit_bytes_per_step, 2 * 100 * dropped[i] * 4);
  }
  // The rows kept are the export's remap's.
  std::string why;
  const auto remap = vocab_trim_remap(g.counts, g.rows, 9990, std::nullopt, why);
  ASSERT_TRUE(remap) << why;
  EXPECT_EQ(remap->kept, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

TEST(TrimVocab, TiedTableIsOfferedThoughReadWholeAndItsHeadFreesNothingApart) {
  const TableGroup g = token_group(true);
  std::vector<Candidate> out;
  add_trim_vocab_candidates(g, baseline_of(g), out);
  ASSERT_EQ(out.size(), 2u);
  const model::StrategyParams& p = out[1].params;
  EXPECT_EQ(p.head_kind, "tied");
  EXPECT_EQ(p.saved_head_bytes, 0u);
  EXPECT_EQ(out[1].device_bytes, 384u);
  EXPECT_EQ(p.saved_logit_bytes_per_step, 2u * 100 * 3 * 4);
  // Through enumerate_candidates, a table read whole keeps only its baseline and the trims.
  const auto all = enumerate_candidates(g, [](const kernels::StrategySpec&, uint64_t rows, uint32_t dim, uint64_t) {
    return FormatSize{rows * dim * 4, 0};
  });
  size_t trims = 0;
  for (const auto& c : all) trims += c.optimizer == "trim_vocab";
  EXPECT_EQ(trims, 2u);
}

TEST(TrimVocab, NeverForARecommenderTableNorFromASampledOrder) {
  TableGroup g = token_group(false);
  g.lm_head.reset();
  std::vector<Candidate> out;
  add_trim_vocab_candidates(g, baseline_of(g), out);
  EXPECT_TRUE(out.empty());
  EXPECT_NE(trim_vocab_not_offered(g).find("not a token table"), std::string::npos);
  const TableGroup sampled = token_group(false, 64);
  add_trim_vocab_candidates(sampled, baseline_of(sampled), out);
  EXPECT_TRUE(out.empty()) << "a sampled order names not every id a remap needs";
  TableGroup shared = token_group(true);
  shared.members.push_back("decoder_input");
  EXPECT_NE(trim_vocab_not_offered(shared).find("decoder_input"), std::string::npos);
}

// Through tune(): the hand stream's table trained by plain SGD (weights and gradient, 32 bytes a
// row: 256), its untied head noted by the hooks. Under a budget of 224 bytes (the 99.9 % trim: 5
// rows, 160, + the 64-byte remap) the plan takes that trim, with the held-out error 10/300 (not
// the baseline's measured 0); a --strategies list without trim_vocab offers none.
TEST(TrimVocab, ThePlannerTakesItUnderABudgetAndAListMustNameIt) {
  model::Table t;
  t.id = 1;
  t.session_id = 1;
  t.name = "wte";
  t.rows = testing::kVocab;
  t.dim = 4;
  t.dtype = "fp32";
  t.weight_bytes = t.grad_bytes = 128;
  t.extra_by_kind = {{"grad", 128}};
  t.aggregate = testing::recorded_vocab(testing::hand_stream(), 1 << 16);
  model::Profile p = edo::testing::synthetic_profile({t}, 10);
  p.metadata["pytorch.lm_head.wte"] =
      R"({"head": "lm_head", "tied": false, "rows": 8, "dim": 4, "dtype": "fp32", "weight_bytes": 128, "grad_bytes": 128,)"
      R"( "optimizer_bytes": 0, "dense_reads_per_step": 1, "dense_read_bytes_per_step": 128})";
  TuneOptions o;
  o.backend = "cpu";
  o.reps = 1;
  o.time_limit_s = 0;
  o.max_error = INFINITY;
  o.budget_bytes = 224;
  o.strategies = "trim_vocab";
  const model::TuneResult r = tune(p, {}, o);
  ASSERT_TRUE(r.feasible);
  const model::TuneCandidate& c = r.candidates.at(static_cast<size_t>(r.choices.at(0).candidate));
  EXPECT_EQ(c.optimizer, "trim_vocab");
  EXPECT_EQ(c.device_bytes, 224u);
  EXPECT_DOUBLE_EQ(c.error, 10.0 / 300.0);
  EXPECT_TRUE(c.needs_retraining);
  EXPECT_NE(r.choices[0].why.find("edo export --format vocab-remap --coverage 99.9"), std::string::npos) << r.choices[0].why;
  // The command is a reason marked in the why (the dashboard words it without the flag).
  ASSERT_EQ(r.choices[0].why_reasons.size(), 1u);
  EXPECT_EQ(r.choices[0].why_reasons[0].code, edo::model::Reason::kVocabRemapExport);
  EXPECT_EQ(r.choices[0].why_reasons[0].name, "99.9");
  o.strategies = "fp16";
  o.budget_bytes = 1 << 20;
  for (const auto& x : tune(p, {}, o).candidates) EXPECT_NE(x.optimizer, "trim_vocab");
}

// Issue 33 point 4: a low-rank lookup of rank r keeps a tokens x r intermediate and, trained,
// its gradient: 100 tokens a step (a 100 x 16 fp32 output recorded, 6,400 bytes, with its
// gradient) at ranks 2, 4 and 8 add 100 x r x 4 x 2 bytes. Without a recorded activation nothing
// is added (golden outputs of C API recordings stay as they were).
TEST(ActivationBytes, LowRankCountsItsIntermediateAndGradient) {
  TableGroup g = token_group(false);
  g.lm_head.reset();  // a plain table: only the formats
  g.dim = 16;
  g.weight_bytes = g.grad_bytes = 8 * 16 * 4;
  g.optimizer_bytes = 2 * g.weight_bytes;
  g.activation->output_bytes = g.activation->grad_bytes = 100 * 16 * 4;
  TableGroup none = g;
  none.activation.reset();
  const SizeFn size = [](const kernels::StrategySpec&, uint64_t rows, uint32_t dim, uint64_t) { return FormatSize{rows * dim * 4, 0}; };
  const std::vector<Candidate> a = enumerate_candidates(g, size), b = enumerate_candidates(none, size);
  auto lowrank = [](const std::vector<Candidate>& v) {
    std::map<uint64_t, const Candidate*> by_rank;
    for (const auto& c : v)
      if (c.strategy == "lowrank" && c.optimizer.empty()) by_rank[c.params.rank.value_or(0)] = &c;
    return by_rank;
  };
  const auto with = lowrank(a), without = lowrank(b);
  ASSERT_EQ(with.size(), 3u);
  for (uint64_t r : {2u, 4u, 8u}) {
    ASSERT_TRUE(with.count(r) && without.count(r)) << r;
    EXPECT_EQ(with.at(r)->device_bytes - without.at(r)->device_bytes, 100 * r * 4 * 2) << r;
    EXPECT_EQ(with.at(r)->params.activation_bytes, 100 * r * 4 * 2);
    EXPECT_FALSE(without.at(r)->params.activation_bytes);
  }
}

}  // namespace
}  // namespace edo::tuner
