// Candidates: the baseline first, exact bytes equal to the kernels' own formula (pruning
// included), offload cache sizes read off the recorded LRU curve, the optimizer-state lever
// for training tables, nothing for tables the job already quantised.
#include "candidates.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "edo/kernels/encode.h"
#include "recordings.h"
#include "workload.h"

namespace edo::tuner {
namespace {

// FBGEMM's device bytes of an offload run by FBGEMM (the LRU candidates, issue 34): 32-way sets
// for int(rows * cache_rows / rows) rows, cache rows of dim fp32, lxu_cache_state 8 bytes a slot,
// lxu_state 8 a slot (LRU) or 8 a table row + 1 (LFU), cache_index_table_map 4 a table row, 44
// bytes of small buffers (split_table_batched_embeddings_ops_training.py, _apply_cache_state).
uint64_t fbgemm_bytes(const Candidate& c, uint64_t rows, uint32_t dim) {
  const bool lfu = c.params.cache_policy.value() == "lfu";
  const auto wanted = static_cast<uint64_t>(static_cast<double>(rows) * (static_cast<double>(c.cache_rows) / static_cast<double>(rows)));
  const uint64_t slots = std::max<uint64_t>(1, (wanted + 31) / 32) * 32;
  return slots * dim * 4 + slots * 8 + (lfu ? (rows + 1) * 8 : slots * 8) + rows * 4 + 44;
}

FormatSize exact(const std::string& spec, uint64_t rows, uint32_t dim, const std::vector<uint64_t>* counts) {
  const auto s = kernels::strategy_size(kernels::StrategySpec::parse(spec), rows, dim, counts ? counts->data() : nullptr);
  return {s.device_bytes, s.host_bytes};
}

TableGroup group_of(const model::Profile& p) {
  Workload w = build_workload(p, {}, "*");
  return w.groups.at(0);
}

// The size function the tuner uses (tuner.cpp), through enumerate_candidates' seam.
FormatSize tuner_size(const kernels::StrategySpec& spec, uint64_t rows, uint32_t dim, uint64_t kept) {
  const auto s = kernels::strategy_size(spec, rows, dim, nullptr);
  FormatSize f{s.device_bytes, s.host_bytes};
  if (spec.name == "pruned") f.device_bytes -= (rows - kept) * uint64_t{dim} * 4;
  return f;
}

TEST(Candidates, BaselineFirstAndBytesAreTheKernelsFormula) {
  const auto p = testing::synthetic_profile({testing::synthetic_table("t", 50000, 32, 1.1, 60000, 1)}, 4);
  const TableGroup g = group_of(p);
  const auto cands = enumerate_candidates(g, tuner_size);
  ASSERT_FALSE(cands.empty());
  EXPECT_TRUE(cands[0].baseline);
  EXPECT_EQ(cands[0].spec, "fp32");
  EXPECT_EQ(cands[0].device_bytes, g.weight_bytes);
  std::vector<uint64_t> counts(g.rows, 0);
  g.counts.for_each_nonzero([&](uint64_t r, uint64_t c) { counts[r] = c; });
  std::set<std::string> strategies;
  for (const auto& c : cands) {
    strategies.insert(c.strategy);
    const FormatSize want = exact(c.spec, g.rows, g.dim, c.strategy == "pruned" ? &counts : nullptr);
    // An LRU offload counts what FBGEMM allocates for it; edo's static hot set its own bytes.
    const bool fbgemm = c.strategy == "offload" && c.spec.find("policy=lru") != std::string::npos;
    EXPECT_EQ(c.device_bytes, fbgemm ? fbgemm_bytes(c, g.rows, g.dim) : want.device_bytes) << c.spec;
    EXPECT_EQ(c.host_bytes, want.host_bytes) << c.spec;
    EXPECT_NO_THROW(kernels::check_spec(kernels::StrategySpec::parse(c.spec), g.rows, g.dim)) << c.spec;
    EXPECT_EQ(c.needs_retraining, c.strategy == "multihash" || c.strategy == "qr" || c.strategy == "pruned") << c.spec;
    EXPECT_TRUE(c.optimizer.empty());  // inference: no optimizer lever
  }
  for (const char* s : {"fp16", "bf16", "fp8", "int8", "int4", "offload", "pruned", "lowrank", "pq", "multihash", "qr"})
    EXPECT_TRUE(strategies.count(s)) << s;
}

TEST(Candidates, OffloadCachesComeFromTheRecordedCurve) {
  const auto skewed = testing::synthetic_profile({testing::synthetic_table("s", 100000, 16, 1.2, 400000, 2)}, 8);
  const auto uniform = testing::synthetic_profile({testing::synthetic_table("u", 100000, 16, 0.0, 400000, 3)}, 8);
  const TableGroup gs = group_of(skewed), gu = group_of(uniform);
  const auto ks = offload_cache_rows(gs.summary, gs.rows), ku = offload_cache_rows(gu.summary, gu.rows);
  ASSERT_FALSE(ks.empty());
  // A skewed table reaches 50 % hits with a cache of a few rows; a uniform one needs half.
  EXPECT_LT(ks.front(), 1000u);
  ASSERT_FALSE(ku.empty());
  EXPECT_GT(ku.front(), 40000u);
  for (size_t i = 1; i < ks.size(); ++i) EXPECT_GT(static_cast<double>(ks[i]), 1.05 * static_cast<double>(ks[i - 1]));
  for (const auto& c : enumerate_candidates(gs, tuner_size)) {
    if (c.strategy != "offload") continue;
    ASSERT_TRUE(c.recorded_hit_rate.has_value());
    const bool lru = c.spec.find("policy=lru") != std::string::npos;
    const double want = lru ? stats::lru_hit_rate(gs.counts, static_cast<double>(c.cache_rows))
                            : stats::coverage_of_top(gs.counts, c.cache_rows);
    EXPECT_DOUBLE_EQ(*c.recorded_hit_rate, want);
    // The kernels floor cache * rows: the spec's fraction gives exactly cache_rows rows.
    const auto spec = kernels::StrategySpec::parse(c.spec);
    EXPECT_EQ(static_cast<uint64_t>(std::stod(spec.params.at("cache")) * static_cast<double>(gs.rows)), c.cache_rows);
    // edo/kernels/formats/offload.h: static keeps a V x int32 slot map beside the cached rows;
    // an LRU cache is exported to FBGEMM and counts FBGEMM's layout.
    if (lru) EXPECT_EQ(c.device_bytes, fbgemm_bytes(c, gs.rows, gs.dim)) << c.spec;
    else EXPECT_EQ(c.device_bytes, gs.rows * 4 + c.cache_rows * gs.dim * 4) << c.spec;
  }
}

// A scan (the C job of issue 19): 1000 rows read in order, again and again. Its LRU curve is a
// step. Every cache size offered is one of the recorded curve's own points, where the recorded
// rate reaches its target; the old sizes were interpolated between two points (895 and 998
// rows on that job), where nothing says what a cache would hit.
TEST(Candidates, CacheSizesSitAtTheCurvesOwnPoints) {
  stats::StatsConfig cfg;
  stats::TableIngestor ing(100000, cfg);
  std::vector<int64_t> scan(1000);
  for (int64_t r = 0; r < 1000; ++r) scan[static_cast<size_t>(r)] = r;
  for (int pass = 0; pass < 20; ++pass) ing.add(scan.data(), scan.size());
  model::Table t;
  t.session_id = 1;
  t.name = "scan";
  t.rows = 100000;
  t.dim = 16;
  t.dtype = "fp32";
  t.weight_bytes = t.rows * 16 * 4;
  t.aggregate = ing.take_delta();
  const TableGroup g = group_of(testing::synthetic_profile({t}, 20));
  const auto sizes = offload_cache_rows(g.summary, g.rows);
  ASSERT_FALSE(sizes.empty());
  for (uint64_t k : sizes) {
    bool on_curve = false;
    for (const auto& pt : g.summary.lru_curve)
      on_curve = on_curve || (static_cast<uint64_t>(std::ceil(pt.x)) == k && pt.y >= 0.5);
    EXPECT_TRUE(on_curve) << k << " rows is not a point of the recorded curve";
    EXPECT_GE(stats::lru_hit_rate(g.counts, static_cast<double>(k)), 0.5) << k;
  }
}

TEST(Candidates, TrainingTablesGetTheOptimizerLever) {
  auto t = testing::synthetic_table("adam_table", 20000, 16, 1.0, 50000, 4);
  t.optimizer_bytes = 2 * t.weight_bytes;  // Adam: two fp32 moments
  t.grad_bytes = t.weight_bytes;           // a dense gradient
  t.extra_by_kind = {{"adam.exp_avg", t.weight_bytes}, {"adam.exp_avg_sq", t.weight_bytes}, {"grad", t.weight_bytes}};
  const auto p = testing::synthetic_profile({t}, 10);  // 5000 lookups per step
  const TableGroup g = group_of(p);
  EXPECT_EQ(g.optimizer, "adam");
  const auto cands = enumerate_candidates(g, tuner_size);
  ASSERT_GE(cands.size(), 2u);
  EXPECT_EQ(cands[0].device_bytes, 4 * t.weight_bytes);  // weights + moments + gradient as recorded
  EXPECT_EQ(cands[1].optimizer, "rowwise_adagrad");
  EXPECT_EQ(cands[1].measure_as, -1) << "timed with its own update, not as the recorded optimizer";
  EXPECT_TRUE(cands[1].needs_retraining);
  // One float per row plus a sparse gradient of the rows one step reads.
  EXPECT_EQ(cands[1].device_bytes, t.weight_bytes + 20000 * 4 + 5000 * 16 * 4);
  for (const auto& c : cands) {
    if (c.strategy == "offload" && c.optimizer.empty()) {
      // Offload keeps the optimizer state with the host copy.
      EXPECT_EQ(c.host_bytes, t.weight_bytes + 3 * t.weight_bytes);
    }
  }
}

TEST(Candidates, QuantisedTablesHaveNoneAndHalfTablesNoFp32) {
  const auto i8 = testing::synthetic_profile({testing::synthetic_table("q", 5000, 16, 1.0, 1000, 5, "int8")}, 1);
  EXPECT_TRUE(enumerate_candidates(group_of(i8), tuner_size).empty());
  const auto f16 = testing::synthetic_profile({testing::synthetic_table("h", 5000, 16, 1.0, 1000, 5, "f16")}, 1);
  const auto cands = enumerate_candidates(group_of(f16), tuner_size);
  ASSERT_FALSE(cands.empty());
  EXPECT_EQ(cands[0].spec, "fp16");
  for (const auto& c : cands) EXPECT_NE(c.spec, "fp32");
}

TEST(Workload, TiedTablesAreOneGroupWithBothLookups) {
  auto a = testing::synthetic_table("emb", 3000, 8, 1.0, 4000, 6);
  auto b = testing::synthetic_table("lm_head", 3000, 8, 1.0, 2000, 7);
  auto p = testing::synthetic_profile({a, b}, 2);
  p.ties.push_back({1, "emb", "lm_head"});
  const Workload w = build_workload(p, {}, "*");
  ASSERT_EQ(w.groups.size(), 1u);
  EXPECT_EQ(w.groups[0].name, "emb");
  EXPECT_EQ(w.groups[0].members, std::vector<std::string>{"lm_head"});
  EXPECT_DOUBLE_EQ(w.groups[0].lookups_per_step, 3000.0);
  EXPECT_EQ(w.groups[0].counts.lookups(), 6000u);
  EXPECT_EQ(w.groups[0].weight_bytes, 3000u * 8 * 4);
}

TEST(Workload, NoStepsRecordedIsANoteNotADivisionByZero) {
  const auto p = testing::synthetic_profile({testing::synthetic_table("t", 1000, 8, 1.0, 200000, 8)}, 0);
  const Workload w = build_workload(p, {}, "*");
  EXPECT_DOUBLE_EQ(w.steps, 4.0);  // 200000 lookups / 65536 per step, rounded up
  EXPECT_DOUBLE_EQ(w.groups[0].lookups_per_step, 50000.0);
  ASSERT_FALSE(w.notes.empty());
  EXPECT_NE(w.notes[0].find("no steps recorded"), std::string::npos);
}

}  // namespace
}  // namespace edo::tuner
