// A candidate's typed strategy parameters (edo/model/strategy_params.h): what the producers
// set is written as the JSON text edo wrote before they were typed, stored runs of that edo
// read into the typed fields and write back the same text, and what this edo does not know is
// kept as it was.
#include "edo/model/strategy_params_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "candidates.h"
#include "recordings.h"
#include "workload.h"

namespace edo::tuner {
namespace {

using model::params_from_text;
using model::params_to_text;
using P = model::StrategyParams;

// tune_candidates.params of a run by edo at d56d87e (before the parameters were typed):
// `edo synth --tables 3 --rows 20000 --dim 32 --min-rows 5000 --min-zipf 0.8 --zipf 1.2`, then
// `edo tune --budget 2MiB`, one row of each strategy.
const char* const kOffload =
    R"({"cache_rows":1166,"policy":"lru","heldout":{"fit_fraction":0.7,"sample_rate":0.125,"heldout_sampled_refs":14562},)"
    R"("knee_rows":2511,"policy_replays":{"cache_rows":1166,"slots":1184,"sample_rate":0.125,"lru":0.4596896030765005,)"
    R"("lfu":0.5932564208213158,"fbgemm_lru":0.1958522181019091,"fbgemm_lfu":0.6019090784232936,)"
    R"("fbgemm_lru_prefetch":0.1826672160417525,"optimal":0.6795769811839033},"policy_headroom":0.07766790276060975,)"
    R"("cache_policy":"lfu"})";
const char* const kMch =
    R"({"slots":1166,"policy":"distance_lfu","eviction_interval":1,"decay_exponent":1.0,"hit_rate":0.5822976878612717,)"
    R"("insert_rate":0.0,"collision_rate":0.4177023121387283,"eviction_rate":0.0,"own_row_rate":0.5822976878612717,)"
    R"("module_bytes":1180176,"heldout":{"fit_fraction":0.7,"sample_rate":0.125,"sampled_slots":146,"heldout_steps":2,)"
    R"x("heldout_sampled_refs":13840},"steps_approximated":"step boundaries every 57142.857143 lookups (the recording's average step)"})x";

TEST(StrategyParams, AStoredRunFromBeforeReadsIntoTheTypedFieldsAndWritesBackTheSameText) {
  const std::vector<std::string> stored = {"{}",
                                           R"({"scale":"row"})",
                                           kOffload,
                                           R"({"kept_rows":13334})",
                                           R"({"rank":4})",
                                           R"({"m":4,"k":256,"iters":5,"sample":16384})",
                                           R"({"buckets":3336,"k":2})",
                                           R"({"m":4})",
                                           kMch};
  for (const auto& text : stored) {
    const P p = params_from_text(text);
    EXPECT_TRUE(p.unknown.empty()) << text << ": every key typed";
    EXPECT_EQ(params_to_text(p), text);
  }
  const P off = params_from_text(kOffload);
  EXPECT_EQ(off.cache_rows, 1166u);
  EXPECT_EQ(off.policy, "lru");
  EXPECT_EQ(off.knee_rows, 2511u);
  EXPECT_EQ(off.cache_policy, "lfu");
  ASSERT_TRUE(off.heldout && off.policy_replays);
  EXPECT_EQ(off.heldout->heldout_sampled_refs, 14562u);
  EXPECT_FALSE(off.heldout->sampled_slots);
  EXPECT_EQ(off.policy_replays->slots, 1184u);
  EXPECT_EQ(off.policy_replays->fbgemm_lfu, 0.6019090784232936);
  const P mch = params_from_text(kMch);
  EXPECT_EQ(mch.decay_exponent, 1.0);
  EXPECT_EQ(mch.heldout->sampled_slots, 146u);
  EXPECT_EQ(params_from_text(R"({"buckets":3336,"k":2})").buckets, 3336u);
}

// Today's producers (candidates.cpp) on one table: each candidate's text is the one edo wrote
// before (the literals above, by the same rules), and reads back into equal parameters.
TEST(StrategyParams, TodaysProducersWriteTheTextEdoWroteBefore) {
  const auto p = testing::synthetic_profile({testing::synthetic_table("t", 50000, 32, 1.1, 60000, 1)}, 4);
  const TableGroup g = build_workload(p, {}, "*").groups.at(0);
  const auto cands = enumerate_candidates(g, [](const kernels::StrategySpec&, uint64_t rows, uint32_t dim, uint64_t) {
    return FormatSize{rows * dim * 4, 0};
  });
  std::vector<std::string> texts;
  for (const auto& c : cands) {
    const std::string text = params_to_text(c.params);
    EXPECT_EQ(params_from_text(text), c.params) << c.spec;
    EXPECT_EQ(params_to_text(params_from_text(text)), text) << c.spec;
    if (c.strategy != "offload") texts.push_back(c.spec + " " + text);
  }
  for (const char* want : {"fp32 {}", "fp16 {}", "int8 {}", R"(fp8 {"scale":"row"})", R"(lowrank:rank=4 {"rank":4})",
                           R"(pq:m=4:iters=5:sample=16384 {"m":4,"k":256,"iters":5,"sample":16384})",
                           R"(multihash:buckets=12500:k=2 {"buckets":12500,"k":2})", R"(qr:m=16 {"m":16})"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end()) << want;
  // An offload: its keys in the order the producer has always written them.
  const Candidate* lru = nullptr;
  for (const auto& c : cands)
    if (c.strategy == "offload" && c.params.policy == "lru") lru = &c;
  ASSERT_NE(lru, nullptr);
  std::vector<std::string> keys;
  const auto j = model::params_to_json(lru->params);
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  ASSERT_GE(keys.size(), 3u) << params_to_text(lru->params);
  EXPECT_EQ(keys[0], "cache_rows");
  EXPECT_EQ(keys[1], "policy");
  EXPECT_EQ(keys.back(), "cache_policy");
}

TEST(StrategyParams, KeysThisEdoDoesNotKnowOrCannotTypeAreKeptAsTheyWere) {
  const std::string text = R"({"x":[1,{"y":2}],"cache_rows":"many","policy":"lru","heldout":{"fit_fraction":0.7,"z":1}})";
  const P p = params_from_text(text);
  EXPECT_EQ(p.policy, "lru");
  EXPECT_FALSE(p.cache_rows) << "text is not a count";
  EXPECT_FALSE(p.heldout) << "a key the held-out object does not have";
  ASSERT_EQ(p.unknown.size(), 3u);
  EXPECT_EQ(p.unknown[0].first, "x");
  EXPECT_EQ(params_to_text(p), text);
}

TEST(StrategyParams, KeysAreWrittenInTheOrderTheyWereSetAndTheOrderIsNotAValue) {
  P a, b;
  a.set(&P::cache_policy, "lru").set(&P::device_cache_rows, 32);
  b.set(&P::device_cache_rows, 32).set(&P::cache_policy, "lru");
  EXPECT_EQ(a, b);
  EXPECT_EQ(params_to_text(a), R"({"cache_policy":"lru","device_cache_rows":32})");
  EXPECT_EQ(params_to_text(b), R"({"device_cache_rows":32,"cache_policy":"lru"})");
  // Set without set(): after the ordered keys, in the declaration's order.
  b.kept_rows = 7;
  b.scale = "row";
  EXPECT_EQ(params_to_text(b), R"({"device_cache_rows":32,"cache_policy":"lru","scale":"row","kept_rows":7})");
  // A whole number a hand-written plan spelt as a float is a count.
  EXPECT_EQ(params_from_text(R"({"cache_rows":300.0})").cache_rows, 300u);
}

TEST(StrategyParams, TextThatIsNotAJsonObjectIsRefused) {
  EXPECT_EQ(params_from_text(""), P{});
  EXPECT_THROW(params_from_text("{\"cache_rows\":"), std::invalid_argument);
  EXPECT_THROW(params_from_text("[1,2]"), std::invalid_argument);
}

}  // namespace
}  // namespace edo::tuner
