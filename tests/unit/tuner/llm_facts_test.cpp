// tuner/llm_facts: the PyTorch hooks' pytorch.lm_head / pytorch.activation notes read back from a
// recording's metadata (issue 33), as `edo report` and the dashboard read them.
#include <gtest/gtest.h>

#include "edo/tuner/llm_facts.h"

namespace edo::tuner {
namespace {

TEST(LlmFacts, UntiedHeadAndActivationFromTheNotes) {
  model::Profile p;
  // V=500, D=16 fp32: 32000 bytes each for weights, gradient, exp_avg, exp_avg_sq.
  p.metadata["pytorch.lm_head.wte"] =
      R"({"head": "lm_head", "tied": false, "rows": 500, "dim": 16, "dtype": "fp32", "weight_bytes": 32000,)"
      R"( "grad_bytes": 32000, "optimizer_bytes": 64000, "optimizer_state": {"adamw.exp_avg": 32000, "adamw.exp_avg_sq": 32000},)"
      R"( "dense_reads_per_step": 2, "dense_read_bytes_per_step": 64000})";
  p.metadata["pytorch.activation.wte"] =
      R"({"output_bytes": 3072, "grad_bytes": 3072, "peak_bytes": 6144, "calls": 1, "shape": [4, 12, 16], "dtype": "fp32"})";
  const auto h = lm_head_of(p, "wte");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->name, "lm_head");
  EXPECT_FALSE(h->tied);
  EXPECT_EQ(h->total_bytes(), 128000u);
  EXPECT_EQ(h->optimizer_state.at("adamw.exp_avg_sq"), 32000u);
  EXPECT_EQ(h->dense_reads_per_step, 2u);
  const auto a = activation_of(p, "wte");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->peak_bytes, 6144u);
  EXPECT_EQ(shape_text(a->shape), "4 x 12 x 16");
  EXPECT_FALSE(lm_head_of(p, "wpe"));
  EXPECT_FALSE(activation_of(p, "wt"));   // a prefix of a name is not the name
}

TEST(LlmFacts, TiedHeadAddsNothingAndTheLargestProcessWins) {
  model::Profile p;
  p.metadata["session.1.pytorch.lm_head.tok"] =
      R"({"head": "out", "tied": true, "weight_bytes": 0, "dense_reads_per_step": 1, "dense_read_bytes_per_step": 800})";
  EXPECT_EQ(lm_head_of(p, "tok")->total_bytes(), 0u);
  // Two ranks: the step with the most activation memory of either.
  p.metadata["session.1.pytorch.activation.tok"] = R"({"output_bytes": 100, "grad_bytes": 100})";
  p.metadata["session.2.pytorch.activation.tok"] = R"({"output_bytes": 300, "grad_bytes": 0})";
  p.metadata["session.3.pytorch.activation.xtok"] = R"({"output_bytes": 9000, "grad_bytes": 0})";
  EXPECT_EQ(activation_of(p, "tok")->peak_bytes, 300u);
}

TEST(LlmFacts, MalformedNotesAreIgnored) {
  model::Profile p;
  p.metadata["pytorch.lm_head.t"] = "not json";
  p.metadata["pytorch.activation.t"] = R"({"output_bytes": "many"})";
  p.metadata["session.1.pytorch.lm_head.t"] = R"({"tied": true})";   // no head name
  EXPECT_FALSE(lm_head_of(p, "t"));
  EXPECT_FALSE(activation_of(p, "t"));
}

}  // namespace
}  // namespace edo::tuner
