// The managed-collision candidate (mch_candidates.h, issue 35 point 4) on a hand-built stream:
// its bytes (hand-computed from torchrec's buffers), its rates (equal to replay_mch on the
// held-out steps of the same stream), when it is offered, and its plan round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "edo/model/strategy_params_json.h"
#include "candidates.h"
#include "edo/tuner/plan_io.h"
#include "edo/tuner/tuner.h"
#include "hand_built_plan.h"
#include "mch_candidates.h"
#include "mch_replay.h"
#include "recordings.h"
#include "workload.h"

namespace edo::tuner {
namespace {

constexpr uint64_t kMchRows = 100000;


TableGroup mch_group(const std::vector<std::vector<int64_t>>& steps, uint64_t sample_refs = 1 << 16) {
  const model::Table t = edo::testing::recorded_steps("ids", kMchRows, steps, sample_refs);
  const auto p = edo::testing::synthetic_profile({t}, static_cast<double>(steps.size()));
  return build_workload(p, {}, "*").groups.at(0);
}

FormatSize fp32_size(const kernels::StrategySpec&, uint64_t rows, uint32_t dim, uint64_t) { return {rows * dim * 4, 0}; }

std::vector<Candidate> mch_of(const TableGroup& g) {
  std::vector<Candidate> out;
  for (Candidate& c : enumerate_candidates(g, fp32_size))
    if (c.strategy == "mch") out.push_back(c);
  return out;
}

TEST(MchCandidates, ModuleBytesAreTorchRecsBuffers) {
  // 100 slots, a first batch of 10 ids, eviction every 2 steps: a history of int(10 x 2 x 1.25)
  // = 25 entries. DistanceLFU: sorted ids, remapped ids, counts, last access per slot (32 B);
  // each history entry its id and last access (16 B); _mch_slots and _delimiter (16 B).
  EXPECT_EQ(mch_module_bytes(100, MchPolicy::kDistanceLfu, 10, 2), 100u * 32 + 25 * 16 + 16);
  EXPECT_EQ(mch_module_bytes(100, MchPolicy::kLfu, 10, 2), 100u * 24 + 25 * 8 + 16);  // counts only
  EXPECT_EQ(mch_module_bytes(100, MchPolicy::kLru, 10, 2), 100u * 24 + 25 * 16 + 16);  // last access only
  // int() truncates: 3 x 1 x 1.25 = 3.75 -> 3 entries.
  EXPECT_EQ(mch_module_bytes(2, MchPolicy::kDistanceLfu, 3, 1), 2u * 32 + 3 * 16 + 16);
}

TEST(MchCandidates, AnIdAdmittedThisStepReadsARowItDidNotHoldBefore) {
  // 3 slots (the last the miss row), eviction every step. Step 1: id 1 is admitted (to the
  // slot of row 1) by profile() before remap() reads it: a hit on a fresh row. Step 2: a hit on
  // the row it now holds. Step 3: id 2 is admitted to row 0, fresh again.
  MchConfig c;
  c.slots = 3;
  const MchStats s = replay_mch({{1}, {1}, {2}}, c);
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.fresh_reads, 2u);
  EXPECT_EQ(s.miss_row_reads, 0u);
  EXPECT_DOUBLE_EQ(s.trained_row_rate(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.own_row_rate(), 1.0);
}

TEST(MchCandidates, RatesAreTheReplayOfTheHeldOutSteps) {
  const auto steps = edo::testing::two_level_steps();
  TableGroup g = mch_group(steps);
  ASSERT_DOUBLE_EQ(g.lookups_per_step, 170.0);
  // 1000 bytes: far below the 1200 distinct ids read (10 + 190 + 1000 new) x 64 bytes.
  g.budget_left_bytes = 1000;
  const auto cands = mch_of(g);
  ASSERT_FALSE(cands.empty());
  for (const Candidate& c : cands) {
    const model::StrategyParams& p = c.params;
    const uint64_t n = p.slots.value();
    EXPECT_GE(n, 2u);
    EXPECT_LT(n, 1200u) << "fewer slots than distinct ids";
    // 17,000 lookups whole in the sample: the cut at 70 % (11,900) is step 70's first lookup.
    MchConfig cfg;
    cfg.slots = n;
    const MchStats want = replay_mch(steps, cfg, 70);
    ASSERT_EQ(want.lookups, 30u * 170);
    EXPECT_EQ(p.heldout.value().heldout_steps, 30u);
    EXPECT_EQ(p.heldout.value().sample_rate, 1.0);
    EXPECT_FALSE(p.steps_approximated);
    EXPECT_DOUBLE_EQ(p.hit_rate.value(), want.hit_rate());
    EXPECT_DOUBLE_EQ(p.insert_rate.value(), want.insert_rate());
    EXPECT_DOUBLE_EQ(p.eviction_rate.value(), want.eviction_rate());
    EXPECT_DOUBLE_EQ(p.own_row_rate.value(), want.trained_row_rate());
    EXPECT_DOUBLE_EQ(p.collision_rate.value(), double(want.miss_row_reads) / double(want.lookups));
    ASSERT_TRUE(c.heldout_hit_rate);
    EXPECT_DOUBLE_EQ(*c.heldout_hit_rate, want.hit_rate());
    ASSERT_TRUE(c.held_out_error);
    EXPECT_DOUBLE_EQ(*c.held_out_error, 1.0 - want.trained_row_rate());
    EXPECT_EQ(p.policy, "distance_lfu");
    EXPECT_EQ(p.eviction_interval, 1u);
    // N fp32 rows of 16, 32 B of buffers a slot, a history of int(170 x 1.25) = 212 entries.
    EXPECT_EQ(c.device_bytes, n * 64 + n * 32 + 212 * 16 + 16);
    EXPECT_EQ(p.module_bytes, n * 32 + 212 * 16 + 16);
    EXPECT_TRUE(c.needs_retraining);
    EXPECT_EQ(c.measure_as, 0);
    EXPECT_EQ(c.spec, "fp32");
  }
  // The stream's answers by construction: the 200 reused rows stay in their slots, and only the
  // new row of each round (1 in 17) is never held before it is read.
  const auto big = std::max_element(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.params.slots < b.params.slots;
  });
  const model::StrategyParams& p = big->params;
  // The largest N offered is the LRU knee (past the 200 reused rows plus a step's new ones).
  ASSERT_GE(p.slots.value(), 220u) << model::params_to_text(p);
  EXPECT_NEAR(p.own_row_rate.value(), 16.0 / 17.0, 1e-12) << model::params_to_text(p);
}

TEST(MchCandidates, ASampledRecordingReplaysNTimesTheRateSlots) {
  // A sample bounded at 4096 of the 17,000 references keeps the rows under a lower threshold
  // (SHARDS): N slots are replayed as N x rate on them, the rates those of the sampled ids.
  const auto steps = edo::testing::two_level_steps();
  TableGroup g = mch_group(steps, 4096);
  g.budget_left_bytes = 1000;
  const auto cands = mch_of(g);
  ASSERT_FALSE(cands.empty());
  for (const Candidate& c : cands) {
    const model::HeldOutReplay heldout = c.params.heldout.value();
    const double rate = heldout.sample_rate.value();
    ASSERT_LT(rate, 1.0);
    const uint64_t n = c.params.slots.value();
    EXPECT_EQ(heldout.sampled_slots.value(), std::max<uint64_t>(2, static_cast<uint64_t>(std::llround(static_cast<double>(n) * rate))));
    MchConfig cfg;
    cfg.slots = n;
    const MchStats whole = replay_mch(steps, cfg, 70);
    // Against the exact replay of the whole stream: at rate 1/4 the 17-slot table (4 sampled
    // slots for the 10 hot rows' sampled few) is off by 0.065, the knee's by 0.007.
    EXPECT_NEAR(c.params.hit_rate.value(), whole.hit_rate(), 0.07) << n;
    EXPECT_NEAR(c.params.own_row_rate.value(), whole.trained_row_rate(), 0.07) << n;
  }
}

TEST(MchCandidates, OfferedOnlyWhenTheDistinctIdsDoNotFitWhatTheBudgetLeaves) {
  TableGroup g = mch_group(edo::testing::two_level_steps());
  EXPECT_TRUE(mch_of(g).empty()) << "no budget";
  EXPECT_EQ(mch_not_offered(g), "no budget");
  g.budget_left_bytes = 1200 * 64;  // exactly the distinct ids' rows
  EXPECT_TRUE(mch_of(g).empty());
  g.budget_left_bytes = 1200 * 64 - 1;
  EXPECT_FALSE(mch_of(g).empty());
  // Never for a table read whole (a tied head's matmul reads every row by id).
  g.dense_use = "F.linear";
  EXPECT_TRUE(mch_of(g).empty());
  EXPECT_EQ(mch_not_offered(g), "read whole by F.linear");
}

TEST(MchCandidates, ThePlanCarriesTheModuleThroughJsonAndYaml) {
  model::TuneResult r = testing::hand_built({{"ids", {{"fp32", 6400000, 10.0}, {"mch", 50000, 10.0, 0.06, true}}}});
  r.candidates[1].spec = "fp32";
  r.candidates[1].heldout_hit_rate = 0.97;
  r.candidates[1].params = model::params_from_json(nlohmann::ordered_json{{"slots", 500},
                                               {"policy", "distance_lfu"},
                                               {"eviction_interval", 1},
                                               {"decay_exponent", 1.0},
                                               {"hit_rate", 0.97},
                                               {"insert_rate", 0.03},
                                               {"collision_rate", 0.0},
                                               {"eviction_rate", 0.03},
                                               {"own_row_rate", 0.94},
                                               {"module_bytes", 19408},
                                               {"heldout", {{"fit_fraction", 0.7}, {"sample_rate", 1.0}, {"heldout_steps", 30}}}});
  ASSERT_TRUE(r.candidates[1].params.unknown.empty()) << "every key typed";
  replan(r, 100000, INFINITY);
  ASSERT_EQ(testing::chosen(r, "ids"), &r.candidates[1]);
  EXPECT_NE(r.choices[0].why.find("managed collision, 500 slots (TorchRec MCH, distance_lfu, eviction every 1 steps)"), std::string::npos)
      << r.choices[0].why;
  for (const std::string& text : {plan_to_json_text(r), plan_to_yaml(r)}) {
    const model::TuneResult back = plan_from_text(text);
    const auto* c = testing::chosen(back, "ids");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->strategy, "mch");
    EXPECT_EQ(c->spec, "fp32");
    EXPECT_EQ(c->params, r.candidates[1].params);
    EXPECT_EQ(model::params_to_text(c->params), model::params_to_text(r.candidates[1].params));
    ASSERT_TRUE(c->heldout_hit_rate);
    EXPECT_DOUBLE_EQ(*c->heldout_hit_rate, 0.97);
  }
  // The TorchRec export names the module's arguments.
  const std::string py = plan_to_torchrec(r);
  EXPECT_NE(py.find("\"ids\": {\"zch_size\": 500, \"eviction_policy\": \"DistanceLFU_EvictionPolicy\", \"decay_exponent\": 1, "
                    "\"eviction_interval\": 1, \"input_hash_size\": 1000"),
            std::string::npos)
      << py;
  // Malformed: one-line errors naming the problem.
  auto with = [&](const char* key, nlohmann::json v) {
    auto doc = nlohmann::json::parse(plan_to_json_text(r));
    doc["tables"][0]["params"][key] = v;
    return doc.dump();
  };
  EXPECT_THROW(plan_from_text(with("slots", 1)), std::exception);
  EXPECT_THROW(plan_from_text(with("policy", "fifo")), std::exception);
  EXPECT_THROW(plan_from_text(with("zch", 3)), std::exception);
  try {
    plan_from_text(with("policy", "fifo"));
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("distance_lfu, lfu or lru"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace edo::tuner
