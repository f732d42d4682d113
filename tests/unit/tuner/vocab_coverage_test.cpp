// Vocabulary coverage and the trim remap (issue 33 point 6) on a stream whose answer is worked
// out by hand (vocab_hand_stream.h).
#include "edo/tuner/vocab_coverage.h"

#include <gtest/gtest.h>

#include "edo/stats/table_stats.h"
#include "vocab_hand_stream.h"

namespace edo::tuner {
namespace {

using testing::hand_stream;
using testing::kVocab;
using testing::recorded_vocab;

TEST(VocabCoverage, HandComputedStream) {
  const auto s = hand_stream();
  ASSERT_EQ(s.size(), 1000u);
  const stats::TableAggregate agg = recorded_vocab(s, 1 << 16);
  std::string why;
  const auto c = vocab_coverage(agg, kVocab, why);
  ASSERT_TRUE(c) << why;
  EXPECT_TRUE(c->exact());
  EXPECT_EQ(c->fit_lookups, 700u);
  EXPECT_EQ(c->held_out_lookups, 300u);
  EXPECT_EQ(c->fit_ids, 5u);
  ASSERT_EQ(c->targets.size(), 3u);
  EXPECT_EQ(c->targets[0].target_bp, 9900u);
  EXPECT_EQ(c->targets[0].ids, 3u);
  EXPECT_DOUBLE_EQ(c->targets[0].fit_coverage, 693.0 / 700.0);
  EXPECT_DOUBLE_EQ(c->targets[0].held_out_coverage, 280.0 / 300.0);
  EXPECT_EQ(c->targets[0].held_out_missed, 20u);
  for (size_t i : {1u, 2u}) {
    EXPECT_EQ(c->targets[i].ids, 5u) << i;
    EXPECT_DOUBLE_EQ(c->targets[i].fit_coverage, 1.0);
    EXPECT_DOUBLE_EQ(c->targets[i].held_out_coverage, 290.0 / 300.0);
    EXPECT_EQ(c->targets[i].held_out_missed, 10u);
  }
  EXPECT_EQ(vocab_fitted_ids(agg, kVocab, 9900, why), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(vocab_fitted_ids(agg, kVocab, 9990, why), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(target_text(9900), "99 %");
  EXPECT_EQ(target_text(9990), "99.9 %");
  EXPECT_EQ(target_text(9999), "99.99 %");
}

// The trim at 99.9 % of the hand stream keeps ids 1..5 of 8: 3 of 8 rows dropped. A table of
// 8 x 4 fp32 trained with Adam holds 4 x 128 bytes (weights, gradient, two moments): the dropped
// rows' share is 3/8 of 512 = 192 bytes, and an untied head of the same shape and state the same.
TEST(VocabCoverage, TrimBytesByHand) {
  const stats::TableAggregate agg = recorded_vocab(hand_stream(), 1 << 16);
  std::string why;
  const auto c = vocab_coverage(agg, kVocab, why);
  ASSERT_TRUE(c) << why;
  LmHead untied;
  untied.name = "lm_head";
  untied.rows = kVocab;
  untied.dim = 4;
  untied.weight_bytes = untied.grad_bytes = 128;
  untied.optimizer_bytes = 256;
  const VocabTrim t = vocab_trim(*c, 4, 4, 512, untied);
  EXPECT_EQ(t.kept_rows, 5u);
  EXPECT_EQ(t.dropped_rows, 3u);
  EXPECT_EQ(t.kept_weight_bytes, 5u * 4 * 4);
  EXPECT_EQ(t.table_bytes_saved, 192u);
  EXPECT_TRUE(t.has_head);
  EXPECT_FALSE(t.head_tied);
  EXPECT_EQ(t.head_bytes_saved, 192u);
  EXPECT_EQ(t.held_out_lost, 10u);
  EXPECT_EQ(t.held_out_lookups, 300u);
  LmHead tied = untied;
  tied.tied = true;
  tied.weight_bytes = tied.grad_bytes = tied.optimizer_bytes = 0;
  const VocabTrim u = vocab_trim(*c, 4, 4, 512, tied);
  EXPECT_TRUE(u.head_tied);
  EXPECT_EQ(u.head_bytes_saved, 0u) << "a tied head's rows are the table's";
  EXPECT_EQ(vocab_trim(*c, 4, 4, 512, std::nullopt, 9900).kept_rows, 3u);
}

TEST(VocabCoverage, RemapKeepsOrderAndSendsDroppedIdsToUnk) {
  // UNK named by the user and not in the fitted set: added as a kept row.
  const VocabRemap a = vocab_remap({3, 1, 2}, kVocab, 0);
  EXPECT_EQ(a.kept, (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(a.unk_added);
  EXPECT_EQ(a.unk_new, 0u);
  EXPECT_EQ(a.new_of, (std::vector<uint64_t>{0, 1, 2, 3, 0, 0, 0, 0}));
  // The default: the first kept id.
  const VocabRemap b = vocab_remap({1, 2, 3}, kVocab, 1);
  EXPECT_FALSE(b.unk_added);
  EXPECT_EQ(b.new_of, (std::vector<uint64_t>{0, 0, 1, 2, 0, 0, 0, 0}));
  // Applying it: every kept old id comes back through kept[new_of[id]].
  for (uint64_t id : {1u, 2u, 3u}) EXPECT_EQ(b.kept[b.new_of[id]], id);
  EXPECT_THROW(vocab_remap({1}, kVocab, kVocab), std::invalid_argument);
}

TEST(VocabCoverage, SampledOrderGivesEstimatesAndNoRemap) {
  // A bound far below the stream: the sample keeps some ids' references (rate < 1).
  const stats::TableAggregate agg = recorded_vocab(hand_stream(), 64);
  std::string why;
  const auto c = vocab_coverage(agg, kVocab, why);
  if (c) {
    EXPECT_LT(c->sample_rate, 1.0);
    EXPECT_FALSE(c->exact());
    EXPECT_TRUE(vocab_fitted_ids(agg, kVocab, 9900, why).empty());
    EXPECT_NE(why.find("every id"), std::string::npos) << why;
  } else {
    EXPECT_FALSE(why.empty());
  }
}

TEST(VocabCoverage, NoOrderedSampleSaysWhy) {
  stats::StatsConfig cfg;
  cfg.track_lru = false;
  stats::TableIngestor ing(kVocab, cfg);
  const auto s = hand_stream();
  ing.add(s.data(), s.size());
  const stats::TableAggregate agg = ing.take_delta();
  std::string why;
  EXPECT_FALSE(vocab_coverage(agg, kVocab, why));
  EXPECT_NE(why.find("no ordered sample"), std::string::npos) << why;
}

}  // namespace
}  // namespace edo::tuner
