// Caches from the real stream (issue 19 points 1 and 6): cache sizes and the static hot set
// fitted on the first 70 % of a table's lookups, hit rates replayed from the recorded order on
// the rest (cache_replay.h), on recordings whose right answer is known by hand:
//  * a cyclic scan over 1000 rows: an LRU of fewer rows than the cycle never hits, one of 1000
//    rows hits every reference after the first cycle; any 500 rows hold half of the lookups;
//  * a job whose rows 100..199 are first read after the cut: a hot set fitted before it (rows
//    0..99) hits nothing afterwards, an LRU of 100 rows misses each new row once.
// The C job got caches of 895 and 998 rows and expected 0.74-0.79 hits on its scan
// table; the exact stream gives 0.
#include "edo/model/strategy_params_json.h"
#include "cache_replay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "edo/tuner/plan_io.h"
#include "edo/tuner/tuner.h"
#include "recordings.h"

namespace edo::tuner {
namespace {

constexpr uint64_t kRows = 4096;

// Recorded as the tracer records it: one delta per step, merged in order (tests/support/recordings.h).
model::Table recorded(const std::string& name, const std::vector<std::vector<int64_t>>& steps, uint64_t sample_refs = 1 << 16) {
  return testing::recorded_steps(name, kRows, steps, sample_refs);
}

// 10 steps, each one pass over rows 0..999.
std::vector<std::vector<int64_t>> scan() {
  std::vector<std::vector<int64_t>> steps(10);
  for (auto& s : steps)
    for (int64_t r = 0; r < 1000; ++r) s.push_back(r);
  return steps;
}

// 10 steps of 10 passes over 100 rows: rows 0..99 in steps 0..6, rows 100..199 in steps 7..9.
std::vector<std::vector<int64_t>> late_rows() {
  std::vector<std::vector<int64_t>> steps(10);
  for (int k = 0; k < 10; ++k)
    for (int pass = 0; pass < 10; ++pass)
      for (int64_t r = 0; r < 100; ++r) steps[static_cast<size_t>(k)].push_back(k < 7 ? r : 100 + r);
  return steps;
}

TEST(CacheReplay, AScanHitsNothingInAnLruSmallerThanItsCycle) {
  const model::Table t = recorded("scan", scan());
  std::string why;
  const auto r = CacheReplay::of(t.aggregate, why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->rate(), 1.0) << "10000 references fit the sample whole";
  EXPECT_EQ(r->split(), 7000u);
  EXPECT_EQ(r->held_out_refs(), 3000u);
  EXPECT_EQ(r->lru_hit_rate(895), 0.0);
  EXPECT_EQ(r->lru_hit_rate(998), 0.0);
  EXPECT_EQ(r->lru_hit_rate(999), 0.0);
  EXPECT_EQ(r->lru_hit_rate(1000), 1.0) << "warm from the earlier part: every held-out reference hits";
  EXPECT_EQ(r->static_hit_rate(500), 0.5);
  // Fitted on the first 7000 references (1000 cold): 6/7 hits at 1000 rows, none below; every
  // target up to 80 % is reached at 1000 rows exactly, 90 % and above never.
  EXPECT_EQ(r->fitted_cache_rows(kRows), std::vector<uint64_t>{1000});
  EXPECT_NEAR(r->fit_lru_hit_rate(1000), 6.0 / 7.0, 1e-12);
}

TEST(CacheReplay, AHotSetFittedEarlyMissesRowsFirstReadLater) {
  const model::Table t = recorded("late", late_rows());
  std::string why;
  const auto r = CacheReplay::of(t.aggregate, why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->split(), 7000u);
  EXPECT_EQ(r->static_hit_rate(100), 0.0) << "rows 0..99, the earlier part's hot set, are never read again";
  EXPECT_NEAR(r->lru_hit_rate(100), 2900.0 / 3000.0, 1e-12) << "each of rows 100..199 misses once";
  EXPECT_NEAR(stats::coverage_of_top(t.aggregate, 100), 0.7, 1e-12) << "what the whole recording's counts say";
}

TEST(CacheReplay, ABoundedSampleStandsForTheStreamAtItsRate) {
  // A scan over 2000 rows with the sample bounded to 4096 references: about a quarter of the
  // rows are sampled, and an LRU of k rows is one of k * rate slots on them.
  std::vector<std::vector<int64_t>> steps(10);
  for (auto& s : steps)
    for (int64_t r = 0; r < 2000; ++r) s.push_back(r);
  const model::Table t = recorded("scan2000", steps, 4096);
  std::string why;
  const auto r = CacheReplay::of(t.aggregate, why);
  ASSERT_TRUE(r) << why;
  EXPECT_LT(r->rate(), 1.0);
  const auto sizes = r->fitted_cache_rows(kRows);
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(r->lru_hit_rate(sizes[0]), 1.0);
  EXPECT_EQ(r->lru_hit_rate(sizes[0] * 3 / 4), 0.0);
  // The sampled rows' cycle (n of them) needs n slots: n / rate rows, within sampling error
  // of the true 2000.
  EXPECT_NEAR(static_cast<double>(sizes[0]), 2000.0, 400.0);
}

TEST(CacheReplay, SaysWhyThereIsNone) {
  std::string why;
  const model::Table t = recorded("old", scan(), 0);
  EXPECT_FALSE(CacheReplay::of(t.aggregate, why));
  EXPECT_EQ(why, "recording has no ordered sample");
  model::Table two = recorded("two", scan());
  ASSERT_TRUE(two.aggregate.merge(recorded("two", scan()).aggregate));
  EXPECT_FALSE(CacheReplay::of(two.aggregate, why));
  EXPECT_NE(why.find("not one stream"), std::string::npos) << why;
}

const model::TuneCandidate* offload(const model::TuneResult& r, const std::string& table, const std::string& policy, uint64_t k) {
  for (const auto& c : r.candidates) {
    if (c.table != table || c.strategy != "offload" || !c.optimizer.empty()) continue;
    if (c.params.policy == policy && c.params.cache_rows == k) return &c;
  }
  return nullptr;
}

// Every offload candidate, once each, on the CPU, under a budget every table fits.
TuneOptions offload_only() {
  TuneOptions o;
  o.backend = "cpu";
  o.strategies = "offload";
  o.reps = 1;
  o.budget_bytes = uint64_t{1} << 30;
  return o;
}

TEST(CacheReplay, ThePlanReportsEachCachesHeldOutHitRateBesideTheRecordedOne) {
  auto p = testing::synthetic_profile({recorded("scan", scan()), recorded("late", late_rows()), recorded("old", scan(), 0)}, 10);
  const model::TuneResult r = tune(p, {}, offload_only());
  // The scan: one size fitted (1000 rows), which hits every held-out reference.
  const auto* scan_lru = offload(r, "scan", "lru", 1000);
  ASSERT_NE(scan_lru, nullptr);
  ASSERT_TRUE(scan_lru->heldout_hit_rate && scan_lru->hit_rate);
  EXPECT_EQ(*scan_lru->heldout_hit_rate, 1.0);
  EXPECT_EQ(*scan_lru->hit_rate, 1.0) << "the hit rate the plan uses is the held-out one";
  // The late rows: the static hot set fitted on steps 0..6 hits nothing in steps 7..9, while
  // the whole recording's coverage says 70 %.
  const model::TuneCandidate* late_static = nullptr;
  for (const auto& c : r.candidates)
    if (c.table == "late" && c.strategy == "offload" && c.params.policy == "static") late_static = &c;
  ASSERT_NE(late_static, nullptr);
  ASSERT_TRUE(late_static->heldout_hit_rate && late_static->recorded_hit_rate);
  EXPECT_EQ(*late_static->heldout_hit_rate, 0.0) << model::params_to_text(late_static->params);
  EXPECT_GT(*late_static->recorded_hit_rate, 0.5);
  // Without an ordered sample: today's estimate, said to be one.
  const model::TuneCandidate* old = nullptr;
  for (const auto& c : r.candidates)
    if (c.table == "old" && c.strategy == "offload") old = &c;
  ASSERT_NE(old, nullptr);
  EXPECT_FALSE(old->heldout_hit_rate);
  ASSERT_TRUE(old->params.hit_rate_estimated);
  EXPECT_NE(old->params.hit_rate_estimated->find("recording has no ordered sample"), std::string::npos);
  // The plan's words and JSON: under a budget only offload meets, each table is offloaded.
  model::TuneResult tight = r;
  replan(tight, 260000, INFINITY);  // under one table's 262144 bytes as recorded
  ASSERT_TRUE(tight.feasible);
  const auto doc = nlohmann::json::parse(plan_to_json_text(tight));
  bool saw_heldout = false, saw_estimate = false;
  for (const auto& t : doc["tables"]) {
    ASSERT_TRUE(t.contains("heldout_hit_rate")) << t.dump();
    ASSERT_TRUE(t.contains("recorded_hit_rate")) << t.dump();
    const std::string why = t["why"].get<std::string>();
    if (!t["heldout_hit_rate"].is_null()) {
      saw_heldout = true;
      EXPECT_NE(why.find("held out"), std::string::npos) << why;
    }
    if (t["name"] == "old") {
      saw_estimate = true;
      EXPECT_TRUE(t["heldout_hit_rate"].is_null());
      EXPECT_NE(why.find("(estimated: recording has no ordered sample)"), std::string::npos) << why;
    }
  }
  EXPECT_TRUE(saw_heldout);
  EXPECT_TRUE(saw_estimate);
}

// A training table's offload is timed by measure_training (the host link's traffic for the
// misses and the host-side optimizer state): its hit rate, and so the traffic, is the held-out
// one too, not a fresh stream drawn from the counts. (Before, the demo's sparse.item showed a
// 61 % hit rate in the plan's HIT column beside "51 % held out" in its why.)
TEST(CacheReplay, ATrainingTablesOffloadUsesTheHeldOutHitRate) {
  model::Table t = recorded("scan", scan());
  t.optimizer_bytes = 2 * t.weight_bytes;
  t.grad_bytes = t.weight_bytes;
  t.extra_by_kind = {{"adam.exp_avg", t.weight_bytes}, {"adam.exp_avg_sq", t.weight_bytes}, {"grad", t.weight_bytes}};
  auto p = testing::synthetic_profile({t}, 10);
  const model::TuneResult r = tune(p, {}, offload_only());
  ASSERT_TRUE(r.tables.at(0).training);
  int offloads = 0;
  for (const auto& c : r.candidates) {
    if (c.strategy != "offload" || !c.heldout_hit_rate) continue;
    ++offloads;
    ASSERT_TRUE(c.hit_rate) << c.spec;
    EXPECT_EQ(*c.hit_rate, *c.heldout_hit_rate) << c.spec << " " << c.optimizer;
    EXPECT_NE(c.step_covers.find("update"), std::string::npos) << c.step_covers;
  }
  EXPECT_GT(offloads, 0);
}

}  // namespace
}  // namespace edo::tuner

namespace edo::tuner {
namespace {

// Skewed streams longer than the sample's bound: their hottest rows each hold more references
// than the bound allows and are never sampled. Post-stratified by the recorded counts (the
// classes the sample missed from their counts), the sampled held-out rates stay close to
// those of the whole stream replayed (a bound above its length: rate 1).
TEST(CacheReplay, ABoundedSampleOfASkewedStreamEstimatesTheWholeStreamsRates) {
  struct Stream {
    uint64_t rows;
    double alpha;
    uint64_t seed, lookups, batch;
  };
  for (const Stream& z : {Stream{1 << 18, 1.05, 11, 1000000, 10000}, Stream{100000, 1.2, 1, 400000, 65536}}) {
    auto record = [&](uint64_t bound) {
      stats::StatsConfig cfg;
      cfg.ordered_sample_refs = bound;
      stats::TableIngestor ing(z.rows, cfg);
      stats::ZipfGenerator gen(z.rows, z.alpha, z.seed);
      std::vector<int64_t> batch(z.batch);
      stats::TableAggregate total;
      for (uint64_t done = 0; done < z.lookups; done += z.batch) {
        const size_t n = static_cast<size_t>(std::min(z.batch, z.lookups - done));
        gen.fill(batch.data(), n);
        ing.add(batch.data(), n);
        stats::TableAggregate d = ing.take_delta();
        if (done == 0) total = std::move(d);
        else EXPECT_TRUE(total.merge(d));
      }
      return total;
    };
    const stats::TableAggregate whole = record(uint64_t{1} << 21), sampled = record(uint64_t{1} << 16);
    std::string why;
    const auto exact = CacheReplay::of(whole, why);
    const auto est = CacheReplay::of(sampled, why);
    ASSERT_TRUE(exact && est) << why;
    ASSERT_EQ(exact->rate(), 1.0);
    ASSERT_LT(est->rate(), 0.2);
    EXPECT_TRUE(est->stratified());
    // Measured (docs/tuning.md): within 0.005 from 1 % of the rows up; below, a cache is a few
    // slots on the sample and SHARDS is coarser (within 0.02 here).
    for (uint64_t k : {z.rows / 500, z.rows / 100, z.rows / 10, z.rows / 2}) {
      const double tol = k < z.rows / 100 ? 0.03 : 0.01;
      EXPECT_NEAR(est->lru_hit_rate(k), exact->lru_hit_rate(k), tol) << k << " rows, rate " << est->rate();
      EXPECT_NEAR(est->static_hit_rate(k), exact->static_hit_rate(k), tol) << k << " rows, rate " << est->rate();
      std::printf("zipf %.2f, %llu of %llu rows: LRU %.4f (whole stream %.4f), static %.4f (whole stream %.4f), rate %g\n",
                  z.alpha, static_cast<unsigned long long>(k), static_cast<unsigned long long>(z.rows), est->lru_hit_rate(k),
                  exact->lru_hit_rate(k), est->static_hit_rate(k), exact->static_hit_rate(k), est->rate());
    }
  }
}

}  // namespace
}  // namespace edo::tuner
