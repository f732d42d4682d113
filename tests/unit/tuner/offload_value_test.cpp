// Offload sized by its value and weighed against the formats that fit (issue 34 point 3), on
// hand-built results whose answers are known (plan.cpp charge_slow_offloads and
// grow_caches_priced):
//  - an offload that slows the step loses to a format of negligible error (below 0.001) that is
//    no slower when both fit, and stands where nothing of negligible error fits, or where the
//    format is slower than it, or where the format's error is not negligible;
//  - the budget left grows the caches whose extra rows avoid the most missed bytes per byte,
//    never with rows that avoid no miss, never past the knee.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "edo/tuner/tuner.h"
#include "hand_built_plan.h"

namespace edo::tuner {
namespace {

using testing::Opt;

std::string why_of_table(const model::TuneResult& r, const std::string& table) {
  for (const auto& ch : r.choices)
    if (ch.table == table) return ch.why;
  return "";
}

// One table (1000 x 16 fp32, 64,000 bytes, 10 us): fp16 (32,000 bytes, error 0.00018 as in the
// issue), a format of error `lossy_error` (24,000 bytes) and an offload of 20,000 bytes that
// loses nothing and takes `offload_us` (its misses over the host link).
model::TuneResult offload_or_format(double fp16_us, double offload_us, double fp16_error = 0.00018) {
  model::TuneResult r = testing::hand_built({{"t", {{"fp32", 64000, 10.0},
                                                    {"fp16", 32000, fp16_us, fp16_error},
                                                    {"int8", 24000, 9.0, 0.0044},
                                                    {"offload", 20000, offload_us}}}});
  auto& c = r.candidates[3];
  c.spec = "offload:policy=lru";
  c.params.set(&model::StrategyParams::cache_rows, 300).set(&model::StrategyParams::policy, "lru");
  c.hit_rate = c.heldout_hit_rate = 0.57;
  return r;
}

TEST(OffloadValue, ANegligibleErrorThatIsNoSlowerBeatsAnOffloadThatSlowsTheStep) {
  // The case: both fit; before, offload's loss of 0 beat fp16's 0.00018.
  model::TuneResult r = offload_or_format(10.0, 14.0);
  replan(r, 40000, 0.02);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(testing::chosen(r, "t")->strategy, "fp16");
  const std::string why = why_of_table(r, "t");
  EXPECT_NE(why.find("taken before offloading (no error, but its misses over the host link add +4.00 us to the step): an "
                     "error below 0.001 is negligible and this ranks no slower"),
            std::string::npos)
      << why;
  // Where fp16 does not fit, the offload is the least change that does (int8's 0.0044 is not
  // negligible: the offload is taken before it), and says what it would have lost to.
  replan(r, 30000, 0.02);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(testing::chosen(r, "t")->strategy, "offload");
  EXPECT_NE(why_of_table(r, "t").find("that is no slower would have been taken before it: none fits the budget"),
            std::string::npos)
      << why_of_table(r, "t");
  // With room for the table as recorded, nothing changes (no loss unless the budget needs it).
  replan(r, 64000, 0.02);
  EXPECT_EQ(testing::chosen(r, "t")->strategy, "fp32");
}

TEST(OffloadValue, AnOffloadStandsWhenTheFormatIsSlowerOrItsErrorIsNotNegligibleOrItCostsNoTime) {
  // fp16 slower than the offload: the offload (no loss, faster) stays.
  model::TuneResult slower = offload_or_format(15.0, 14.0);
  replan(slower, 40000, 0.02);
  EXPECT_EQ(testing::chosen(slower, "t")->strategy, "offload");
  EXPECT_EQ(why_of_table(slower, "t").find("would have been taken before it"), std::string::npos) << why_of_table(slower, "t");
  // An error of 0.0015 (bf16's) is not negligible: the lossless offload is the smaller change.
  model::TuneResult lossy = offload_or_format(10.0, 14.0, 0.0015);
  replan(lossy, 40000, 0.02);
  EXPECT_EQ(testing::chosen(lossy, "t")->strategy, "offload");
  // An offload that does not slow the step (every lookup hits) changes nothing a user meets.
  model::TuneResult free_offload = offload_or_format(10.0, 10.0);
  replan(free_offload, 40000, 0.02);
  EXPECT_EQ(testing::chosen(free_offload, "t")->strategy, "offload");
}

// Two tables of 1000 rows, each offloaded to 20 rows (1000 bytes, held-out hit rate 0.3) or to
// its knee of 250 rows (5000 bytes, hit rate `knee_hits`), the two sizes tied in time (as a
// CPU's measured times tie), 100 lookups per step each.
model::TuneResult two_cached(double a_hits, double b_hits, uint32_t b_dim) {
  model::TuneResult r = testing::hand_built({{"b", {{"fp32", 64000, 10.0}, {"offload", 1000, 12.0}, {"offload", 5000, 12.0}}},
                                             {"a", {{"fp32", 64000, 10.0}, {"offload", 1000, 12.0}, {"offload", 5000, 12.0}}}});
  r.tables[0].dim = b_dim;
  for (size_t i : {1, 2, 4, 5}) {
    auto& c = r.candidates[i];
    const bool small = i == 1 || i == 4;
    c.spec = "offload:policy=lru";
    c.params.set(&model::StrategyParams::cache_rows, small ? 20 : 250).set(&model::StrategyParams::policy, "lru");
    c.params.set(&model::StrategyParams::knee_rows, 250);
    c.hit_rate = c.heldout_hit_rate = small ? 0.3 : (i == 2 ? b_hits : a_hits);
  }
  return r;
}

uint64_t rows_chosen(const model::TuneResult& r, const std::string& t) {
  const auto* c = testing::chosen(r, t);
  return c ? c->params.cache_rows.value_or(0) : 0;
}

TEST(OffloadValue, TheBudgetLeftGoesToTheRowsThatAvoidTheMostMissedBytesPerByte) {
  // 6,500 bytes: both small caches (2,000) and one growth of 4,000 more.
  // a: (0.8 - 0.3) x 100 lookups x 64-byte rows / 4,000 bytes = 0.8 missed bytes avoided per byte;
  // b: (0.5 - 0.3) x 100 x 64 / 4,000 = 0.32. a grows, though b comes first in plan order.
  model::TuneResult r = two_cached(0.8, 0.5, 16);
  replan(r, 6500, INFINITY);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(rows_chosen(r, "a"), 250u);
  EXPECT_EQ(rows_chosen(r, "b"), 20u);
  EXPECT_EQ(r.plan_device_bytes, 6000u);
  // b's rows are 256 bytes (dim 64): each miss costs 4x the host link's time, so
  // 0.2 x 100 x 256 / 4,000 = 1.28 > 0.8: b grows instead.
  r = two_cached(0.8, 0.5, 64);
  replan(r, 6500, INFINITY);
  EXPECT_EQ(rows_chosen(r, "a"), 20u);
  EXPECT_EQ(rows_chosen(r, "b"), 250u);
  // Room for both: both grow to their knee.
  replan(r, 10000, INFINITY);
  EXPECT_EQ(rows_chosen(r, "a"), 250u);
  EXPECT_EQ(rows_chosen(r, "b"), 250u);
  // Extra rows that avoid no miss are not worth a byte: b stays at 20 with the room.
  r = two_cached(0.8, 0.3, 16);
  replan(r, 10000, INFINITY);
  EXPECT_EQ(rows_chosen(r, "a"), 250u);
  EXPECT_EQ(rows_chosen(r, "b"), 20u);
  EXPECT_EQ(r.plan_device_bytes, 6000u);
}

}  // namespace
}  // namespace edo::tuner
