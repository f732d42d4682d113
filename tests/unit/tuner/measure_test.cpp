// The measurement setup: the scaled-size rule, the access model, the index batches' hot set,
// the measured specs, the error estimate from a weight snapshot against the full-table error
// (within 10 %, the bound), the error gate, paired timing (with a fake backend whose
// load comes and goes) and offload's modelled time on the CPU.
#include "measure.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "edo/kernels/encode.h"
#include "edo/kernels/workload.h"
#include "edo/stats/weight_sample.h"
#include "recordings.h"

namespace edo::tuner {
namespace {

TEST(ScaledRule, FullSizeWhenItFitsElseTheCapButNeverTiny) {
  EXPECT_EQ(measured_rows(1000, 128, 1 << 20), 1000u);                                 // 512 KB fits
  EXPECT_EQ(measured_rows(10'000'000, 128, uint64_t{1} << 30), (uint64_t{1} << 30) / 512);  // 2M rows
  EXPECT_EQ(measured_rows(10'000'000, 128, 1 << 20), uint64_t{1} << 18);               // floor of 2^18 rows
  EXPECT_EQ(measured_rows(100'000, 128, 1 << 10), 100'000u);                           // never more than the table
}

TEST(AccessModel, ExactTablesAreExactAndTailsKeepTheirMass) {
  const auto t = testing::synthetic_table("t", 10000, 8, 1.1, 100000, 1);
  const AccessModel all = access_model(t.aggregate, t.rows, 1 << 20);
  EXPECT_EQ(all.hot_rows.size(), t.aggregate.unique_rows());
  EXPECT_EQ(all.tail_lookups, 0.0);
  const AccessModel part = access_model(t.aggregate, t.rows, 100);
  ASSERT_EQ(part.hot_rows.size(), 100u);
  double hot = 0;
  for (double c : part.hot_counts) hot += c;
  EXPECT_DOUBLE_EQ(hot + part.tail_lookups, 100000.0);
  EXPECT_EQ(part.tail_rows, t.aggregate.unique_rows() - 100);
  EXPECT_NEAR(hot / 100000.0, stats::coverage_of_top(t.aggregate, 100), 1e-12);
}

TEST(ScaledRule, MeasuredBatchesHitTheRecordedHotSetAtTheRecordedRate) {
  // 3M rows of dim 8 measured within 4 MiB: scaled to 2^18 rows. The top 1 % of the table's
  // rows (30000, kept at distinct positions) must take the same share of the measured lookups
  // as of the recorded ones.
  const auto t = testing::synthetic_table("big", 3'000'000, 8, 1.05, 2'000'000, 2);
  const auto p = testing::synthetic_profile({t}, 20);
  Workload w = build_workload(p, {}, "*");
  TuneOptions o;
  o.batches = 4;
  TableBench bench(w.groups[0], o, 4 << 20, 7);
  ASSERT_EQ(bench.rows(), uint64_t{1} << 18);
  const double recorded = stats::coverage_of_top(t.aggregate, 30000);
  // Positions of the 30000 most counted measured rows.
  std::vector<std::pair<uint64_t, uint64_t>> by_count;
  for (uint64_t r = 0; r < bench.rows(); ++r) by_count.emplace_back(bench.counts()[r], r);
  std::partial_sort(by_count.begin(), by_count.begin() + 30000, by_count.end(), std::greater<>());
  std::vector<char> top(bench.rows(), 0);
  for (size_t i = 0; i < 30000; ++i) top[by_count[i].second] = 1;
  uint64_t hits = 0, n = 0;
  for (const auto& b : bench.workload().batches)
    for (int64_t x : b) {
      ASSERT_LT(static_cast<uint64_t>(x), bench.rows());
      hits += top[static_cast<size_t>(x)];
      ++n;
    }
  EXPECT_EQ(n, 4u * 100000);  // lookups per step per batch
  EXPECT_NEAR(static_cast<double>(hits) / static_cast<double>(n), recorded, 0.01);
}

TEST(ScaledRule, SpecsKeepCacheRowsAndRowsPerBucket) {
  Candidate off;
  off.set_spec("offload:cache=0.0010005:policy=lru");
  off.cache_rows = 1000;
  const auto s = measured_spec(off, 1'000'000, 100'000);
  EXPECT_EQ(static_cast<uint64_t>(std::stod(s.params.at("cache")) * 100000), 1000u);
  Candidate mh;
  mh.set_spec("multihash:buckets=250000:k=2");
  EXPECT_EQ(measured_spec(mh, 1'000'000, 100'000).params.at("buckets"), "25000");
  Candidate same;
  same.set_spec("pq:m=4");
  EXPECT_EQ(measured_spec(same, 1'000'000, 1'000'000).to_string(), "pq:m=4");
}

// Full weights whose rows differ in scale, so that the error depends on which rows are hot.
std::vector<float> full_weights(uint64_t rows, uint32_t dim) {
  std::vector<float> w(rows * dim);
  kernels::random_weights(w.data(), rows, dim, 99);
  kernels::Rng rng(5);
  for (uint64_t r = 0; r < rows; ++r) {
    const float scale = 0.1f + 3.0f * static_cast<float>(rng.uniform());
    const float shift = static_cast<float>(rng.uniform()) - 0.5f;
    for (uint32_t d = 0; d < dim; ++d) w[r * dim + d] = w[r * dim + d] * scale + shift;
  }
  return w;
}

model::WeightSnapshot snapshot_of(const std::vector<float>& w, const model::Table& t, uint64_t limit) {
  const stats::SnapshotRows pick = stats::choose_snapshot_rows(t.aggregate, t.rows, limit, 11);
  model::WeightSnapshot s;
  s.session_id = 1;
  s.table = t.name;
  s.dtype = "fp32";
  s.dim = t.dim;
  s.table_rows = t.rows;
  s.population = pick.population;
  s.rows = pick.hot;
  s.hot_count = pick.hot.size();
  s.rows.insert(s.rows.end(), pick.sample.begin(), pick.sample.end());
  for (uint64_t r : s.rows) s.values.append(reinterpret_cast<const char*>(&w[r * t.dim]), t.dim * 4);
  return s;
}

TEST(ErrorEstimate, SnapshotEstimateMatchesTheFullTableErrorWithinTenPercent) {
  const uint64_t rows = 200'000;
  const uint32_t dim = 16;
  auto kernels_backend = kernels::make_backend("cpu");
  for (double zipf : {1.05, 0.0}) {
    const auto t = testing::synthetic_table("t", rows, dim, zipf, 1'000'000, 3);
    const auto w = full_weights(rows, dim);
    std::vector<uint64_t> counts(rows, 0);
    t.aggregate.for_each_nonzero([&](uint64_t r, uint64_t c) { counts[r] = c; });
    const std::vector<model::WeightSnapshot> snaps{snapshot_of(w, t, 8192)};
    auto p = testing::synthetic_profile({t}, 100);
    Workload work = build_workload(p, snaps, "*");
    ASSERT_EQ(work.groups[0].snapshot, &snaps[0]);
    TuneOptions o;
    o.reps = 1;
    o.batches = 1;
    TableBench bench(work.groups[0], o, uint64_t{1} << 30, 1);
    ASSERT_TRUE(bench.recorded_weights());
    for (const char* spec : {"int8", "int4", "fp16", "fp8"}) {
      const auto full = kernels::encode(kernels::StrategySpec::parse(spec), w.data(), rows, dim);
      const double truth = kernels::reconstruction_error(*full, w.data(), counts.data());
      Candidate c;
      c.strategy = spec;
      c.set_spec(spec);
      const Measurement m = bench.measure(c, *kernels_backend, o);
      EXPECT_NEAR(m.error, truth, 0.10 * truth) << spec << " zipf " << zipf;
      EXPECT_GT(m.step_us, 0);
    }
  }
}

TEST(ErrorEstimate, WeightedErrorIsZeroForLosslessAndRelativeL2) {
  std::vector<float> w(4 * 2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) - 3.5f;
  const auto t = kernels::encode(kernels::StrategySpec::parse("fp32"), w.data(), 4, 2);
  ReferenceRows ref{{0, 3}, {w[0], w[1], w[6], w[7]}, {1.0, 5.0}};
  EXPECT_EQ(weighted_error(*t, ref), 0.0);
  // The reference row 0 is (-2.5, -2.5), the table's (-3.5, -2.5): error^2 = 1 / (12.5 + 5 * 18.5).
  ref.values[0] += 1.0f;
  EXPECT_NEAR(weighted_error(*t, ref), std::sqrt(1.0 / (12.5 + 5 * 18.5)), 1e-6);
}

TEST(ErrorGate, ExactForRowFormatsAndNoHigherThanTheMarginForFittedOnes) {
  // The gate skips a row format whose reference-rows error is over the limit: that error must
  // be the one measure() gives. A fitted format is skipped only past gate_margin() times the
  // limit: its estimate must not exceed the full measurement by that factor.
  const auto t = testing::synthetic_table("t", 30'000, 16, 1.05, 200'000, 4);
  const auto w = full_weights(t.rows, t.dim);
  const std::vector<model::WeightSnapshot> snaps{snapshot_of(w, t, 8192)};
  const std::vector<model::WeightSnapshot> none;
  auto p = testing::synthetic_profile({t}, 50);
  for (const bool recorded : {true, false}) {
    // The workload points into the snapshots: they must outlive it (both lvalues, no copy).
    Workload work = build_workload(p, recorded ? snaps : none, "*");
    TuneOptions o;
    o.reps = 1;
    o.batches = 1;
    o.min_rep_s = 0;
    TableBench bench(work.groups[0], o, uint64_t{1} << 30, 3);
    ASSERT_EQ(bench.recorded_weights(), recorded);
    auto backend = kernels::make_backend("cpu");
    for (const auto& c : enumerate_candidates(work.groups[0], [](const kernels::StrategySpec& spec, uint64_t rows, uint32_t dim, uint64_t) {
           const auto z = kernels::strategy_size(spec, rows, dim);
           return FormatSize{z.device_bytes, z.host_bytes};
         })) {
      const double gate = bench.reference_error(c, o);
      if (lossless(c.strategy, c.baseline)) {
        EXPECT_EQ(gate, 0.0) << c.spec;
        continue;
      }
      const double full = bench.measure(c, *backend, o).error;
      if (row_format(c.strategy)) {
        EXPECT_DOUBLE_EQ(gate, full) << c.spec << (recorded ? " recorded" : " synthetic");
      } else {
        EXPECT_LE(gate, gate_margin(c.strategy) * full) << c.spec << (recorded ? " recorded" : " synthetic");
        EXPECT_GT(gate, 0.0) << c.spec;
      }
    }
  }
}

// A backend whose passes take fixed times scaled by a machine load that changes at every
// repetition of the candidate (and stays for the baseline's repetition that follows it).
struct FakeLoadedTable : kernels::LoadedTable {
  FakeLoadedTable(double seconds, bool candidate, int* phase, uint64_t indices)
      : kernels::LoadedTable(indices), seconds_(seconds), candidate_(candidate), phase_(phase) {}
  double pass(bool) override {
    static const double load[] = {1, 7, 1, 3, 9, 1, 5};
    if (candidate_) ++*phase_;
    return seconds_ * load[*phase_ % 7];
  }
  double seconds_;
  bool candidate_;
  int* phase_;
};

struct FakeBackend : kernels::Backend {
  std::string name() const override { return "fake"; }
  std::string description() const override { return "fake"; }
  std::unique_ptr<kernels::LoadedTable> load(const kernels::EncodedTable& table, const kernels::Workload& work) override {
    const bool fp32 = table.strategy() == "fp32";
    return std::make_unique<FakeLoadedTable>(fp32 ? 1e-3 : 2e-3, !fp32, &phase, work.indices());
  }
  int phase = 0;
};

TEST(PairedTiming, ALoadThatComesAndGoesSlowsBothAlike) {
  const auto t = testing::synthetic_table("t", 20'000, 16, 1.1, 100'000, 5);
  auto p = testing::synthetic_profile({t}, 10);
  Workload work = build_workload(p, {}, "*");
  TuneOptions o;
  o.reps = 5;
  o.min_rep_s = 0;  // one pass per repetition
  TableBench bench(work.groups[0], o, uint64_t{1} << 30, 3);
  FakeBackend backend;
  Candidate c;
  c.strategy = "int8";
  c.set_spec("int8");
  // Paired with a baseline of 850 us: twice as slow, whatever the load did meanwhile.
  EXPECT_DOUBLE_EQ(bench.measure(c, backend, o, 850.0).step_us, 1700.0);
  // Alone, the candidate's time is whatever the load made of it.
  const double alone = bench.measure(c, backend, o).step_us;
  const double unloaded = 2e-3 / (static_cast<double>(bench.workload().indices())) * work.groups[0].lookups_per_step * 1e6;
  EXPECT_GT(alone, 1.5 * unloaded) << "the fake's load shows up without pairing";
}

TEST(OffloadOnTheCpu, TheBaselinePlusTheMissesTransfer) {
  const auto t = testing::synthetic_table("t", 50'000, 16, 1.1, 200'000, 6);
  auto p = testing::synthetic_profile({t}, 10);
  Workload work = build_workload(p, {}, "*");
  const TableGroup& g = work.groups[0];
  TuneOptions o;
  TableBench bench(g, o, uint64_t{1} << 30, 3);
  auto backend = kernels::make_backend("cpu");
  Candidate c;
  c.strategy = "offload";
  c.set_spec("offload:cache=0.02:policy=static");
  c.cache_rows = 1000;
  const Measurement m = bench.measure(c, *backend, o, 1234.0);
  ASSERT_TRUE(m.hit_rate);
  EXPECT_GT(*m.hit_rate, 0.2);
  EXPECT_LT(*m.hit_rate, 1.0);
  const double transfer = (1.0 - *m.hit_rate) * g.lookups_per_step * 4.0 * 16 / kModelledHostLinkBytesPerS * 1e6;
  EXPECT_DOUBLE_EQ(m.step_us, 1234.0 + transfer);
  // The same again: the hit rate of seeded batches, so the same time.
  EXPECT_DOUBLE_EQ(bench.measure(c, *backend, o, 1234.0).step_us, m.step_us);
}

}  // namespace
}  // namespace edo::tuner
