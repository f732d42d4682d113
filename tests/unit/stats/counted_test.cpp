// Tables counted elsewhere (TableIngestor::add_counted): a model of the GPU counting path
// (the rules of table_stats.h "Accesses counted elsewhere", applied on the CPU) against the
// CPU path on the same traces: identical counts, unique rows and coverage, the same count-min
// cells, and an LRU curve within 0.01 (mean absolute error) of the exact one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "edo/stats/row_hash.h"
#include "edo/stats/table_stats.h"
#include "internal.h"
#include "test_util.h"

namespace edo::stats {
namespace {

using testing::zipf_trace;

// What the device keeps and hands over (the tracer's kernel does the same on a GPU).
struct DeviceModel {
  DeviceModel(uint64_t r, const StatsConfig& c) : rows(r), cfg(c), exact(r <= c.exact_rows_limit) {
    threshold = counted_sample_threshold(rows, cfg);
    if (exact) {
      counts.assign(rows, 0);
    } else {
      width = 1;
      while (width < cfg.cms_width) width <<= 1;
      cms.assign(uint64_t{width} * cfg.cms_depth, 0);
      hll.assign(size_t{1} << cfg.hll_precision, 0);
    }
    before = counts;
    cms_before = cms;
  }

  void batch(const int64_t* idx, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = static_cast<uint64_t>(idx[i]);
      if (r >= rows) {
        ++seg.out_of_range;
        continue;
      }
      uint32_t cum;
      if (exact) {
        cum = ++counts[r];
      } else {
        cum = UINT32_MAX;
        for (uint32_t d = 0; d < cfg.cms_depth; ++d) cum = std::min(cum, ++cms[uint64_t{d} * width + hash::cms_cell(r, d, width - 1)]);
        uint32_t& reg = hll[hash::hll_index(r, cfg.hll_precision)];
        reg = std::max(reg, hash::hll_rank(r, cfg.hll_precision));
        if (cum >= 64 && (cum & (cum - 1)) == 0) seg.candidates.push_back(r);
      }
      if (hash::sampled(r, threshold) && (cum <= kCountedHot || cum % kCountedThin == 0))
        seg.sample.push_back({r, pos + i, cum});
    }
    // A footprint window now and then: the last kCountedWindow references of a batch,
    // or consecutive whole batches when they are smaller.
    if (!partial.empty() || pos + n >= next_window) {
      if (partial.empty() && n >= kCountedWindow) {
        seg.windows.emplace_back(idx + n - kCountedWindow, idx + n);
        next_window = pos + n + window_every();
      } else {
        const size_t take = std::min<size_t>(n, kCountedWindow - partial.size());
        partial.insert(partial.end(), idx, idx + take);
        if (partial.size() == kCountedWindow) {
          seg.windows.emplace_back(partial.begin(), partial.end());
          partial.clear();
          next_window = pos + n + window_every();
        }
      }
    }
    pos += n;
  }

  // As the tracer: a window every 8192 references for the first 256, then every 65536.
  uint64_t window_every() { return ++windows_taken <= 256 ? 8192 : 65536; }

  void flush(TableIngestor& ing, std::mt19937_64& rng) {
    std::shuffle(seg.sample.begin(), seg.sample.end(), rng);  // a GPU writes them in any order
    sample_total += seg.sample.size();
    seg.before = before.data();
    seg.after = counts.data();
    seg.cms_before = cms_before.data();
    seg.cms_after = cms.data();
    seg.hll = hll.data();
    ing.add_counted(seg);
    before = counts;
    cms_before = cms;
    seg = CountedSegment{};
  }

  uint64_t rows;
  StatsConfig cfg;
  bool exact;
  uint64_t threshold = 0, pos = 0, next_window = 0, sample_total = 0, windows_taken = 0;
  uint32_t width = 0;
  std::vector<uint32_t> counts, before, cms, cms_before, hll;
  std::vector<uint64_t> partial;  // a footprint window being gathered from small batches
  CountedSegment seg;
};

struct Compared {
  TableAggregate cpu, counted, exact_lru;
  uint64_t sampled = 0;
};

// The same trace through the CPU path and the counted path, batches of `batch`, a flush
// (segment) every `flush_every` batches.
Compared run(uint64_t rows, double alpha, size_t refs, const StatsConfig& cfg, size_t batch = 65536,
             size_t flush_every = 8) {
  auto t = zipf_trace(rows, alpha, refs, 1000 + static_cast<uint64_t>(alpha * 100) + rows);
  StatsConfig exact_cfg = cfg;
  exact_cfg.exact_lru_rows_limit = rows;
  TableIngestor cpu(rows, cfg), exact(rows, exact_cfg), counted(rows, cfg);
  DeviceModel dev(rows, cfg);
  std::mt19937_64 rng(5);
  Compared out;
  size_t batches = 0;
  for (size_t off = 0; off < t.size(); off += batch) {
    const size_t n = std::min(batch, t.size() - off);
    cpu.add(t.data() + off, n);
    if (rows <= exact_cfg.exact_rows_limit) exact.add(t.data() + off, n);
    dev.batch(t.data() + off, n);
    if (++batches % flush_every == 0) {
      dev.flush(counted, rng);
      counted.close_window();  // the tracer closes drift windows at each flush
      cpu.close_window();
    }
  }
  dev.flush(counted, rng);
  out.cpu = cpu.take_delta();
  out.counted = counted.take_delta();
  out.exact_lru = exact.take_delta();
  out.sampled = dev.sample_total;
  return out;
}

double lru_mae(const TableAggregate& exact, const TableAggregate& est, bool print) {
  const TableSummary se = summarize(exact), ss = summarize(est);
  EXPECT_EQ(se.lru_curve.size(), ss.lru_curve.size());
  double mae = 0.0;
  for (size_t i = 0; i < se.lru_curve.size() && i < ss.lru_curve.size(); ++i) {
    mae += std::fabs(se.lru_curve[i].y - ss.lru_curve[i].y);
    if (print) std::printf("  c=%.0f exact %.4f counted %.4f\n", se.lru_curve[i].x, se.lru_curve[i].y, ss.lru_curve[i].y);
  }
  return mae / static_cast<double>(std::max<size_t>(1, se.lru_curve.size()));
}

TEST(CountedRowHash, CountMinCellsAreTheOnesTheSketchUses) {
  detail::CountMinSketch cms;
  cms.reset(1u << 12, 4);
  for (uint64_t row : {0ull, 1ull, 12345ull, 987654321ull}) {
    cms.clear();
    cms.add(row);
    for (uint32_t d = 0; d < 4; ++d)
      EXPECT_EQ(cms.cells()[uint64_t{d} * cms.width() + hash::cms_cell(row, d, cms.width() - 1)], 1u) << row;
  }
}

TEST(CountedSegments, ExactCountsUniqueRowsAndCoverageMatchTheCpuPath) {
  StatsConfig cfg;
  const Compared c = run(50000, 1.05, 400000, cfg, 20000, 3);
  ASSERT_EQ(c.counted.mode(), CountMode::kExact);
  EXPECT_EQ(c.counted.lookups(), c.cpu.lookups());
  EXPECT_EQ(c.counted.unique_rows(), c.cpu.unique_rows());
  for (uint64_t row = 0; row < 50000; ++row) ASSERT_EQ(c.counted.count(row), c.cpu.count(row)) << row;
  for (double k : {1.0, 50.0, 500.0, 5000.0})
    EXPECT_DOUBLE_EQ(coverage_of_top(c.counted, static_cast<uint64_t>(k)), coverage_of_top(c.cpu, static_cast<uint64_t>(k)));
  // Host work follows the sample: a small share of the references reached the host.
  EXPECT_LT(static_cast<double>(c.sampled), 0.25 * static_cast<double>(c.cpu.lookups()));
  // Drift windows: one per flush, the same hot sets as the CPU path closing at the same points.
  ASSERT_EQ(c.counted.windows().size(), c.cpu.windows().size());
  for (size_t i = 0; i < c.cpu.windows().size(); ++i) EXPECT_EQ(c.counted.windows()[i].rows, c.cpu.windows()[i].rows) << i;
}

TEST(CountedSegments, OutOfRangeIndicesAreCountedApart) {
  StatsConfig cfg;
  TableIngestor ing(100, cfg);
  DeviceModel dev(100, cfg);
  std::vector<int64_t> idx = {1, 2, 3, -1, 100, 5000, 2};
  dev.batch(idx.data(), idx.size());
  std::mt19937_64 rng(1);
  dev.flush(ing, rng);
  TableAggregate a = ing.take_delta();
  EXPECT_EQ(a.lookups(), 4u);
  EXPECT_EQ(a.out_of_range(), 3u);
  EXPECT_EQ(a.count(2), 2u);
}

TEST(CountedSegments, SmallBatchesAndFrequentFlushesKeepTheLruCurve) {
  StatsConfig cfg;
  const Compared c = run(uint64_t{1} << 18, 1.05, 1'000'000, cfg, 1000, 50);
  const double mae = lru_mae(c.exact_lru, c.counted, false);
  std::printf("counted SHARDS, 1000-index batches, a flush every 50: MAE %.5f\n", mae);
  EXPECT_LE(mae, 0.01);
}

TEST(CountedSegments, CyclicAccessKeepsItsLruCurve) {
  // Rows read in a cycle (the worst case for LRU: no hit below the cycle's length), the
  // opposite of the independent references the model assumes for hot rows: their reuse times
  // are measured in the windows instead.
  for (uint64_t cycle : {100u, 1000u}) {
    const uint64_t rows = 100000;
    std::vector<int64_t> t(2'000'000);
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int64_t>(i % cycle);
    StatsConfig cfg, exact_cfg;
    exact_cfg.exact_lru_rows_limit = rows;
    TableIngestor exact(rows, exact_cfg), counted(rows, cfg);
    DeviceModel dev(rows, cfg);
    std::mt19937_64 rng(3);
    for (size_t off = 0, b = 0; off < t.size(); off += 100000, ++b) {
      exact.add(t.data() + off, 100000);
      dev.batch(t.data() + off, 100000);
      if (b % 5 == 4) dev.flush(counted, rng);
    }
    dev.flush(counted, rng);
    const TableAggregate e = exact.take_delta(), c = counted.take_delta();
    const double mae = lru_mae(e, c, std::getenv("EDO_SHARDS_DEBUG") != nullptr);
    std::printf("counted SHARDS, cycle of %llu rows: MAE %.5f, hit rate at %llu rows %.4f (exact %.4f)\n",
                static_cast<unsigned long long>(cycle), mae, static_cast<unsigned long long>(cycle),
                lru_hit_rate(c, double(cycle)), lru_hit_rate(e, double(cycle)));
    EXPECT_LE(mae, 0.01) << cycle;
    EXPECT_NEAR(lru_hit_rate(c, double(cycle) / 2), 0.0, 0.01) << cycle;
    EXPECT_NEAR(lru_hit_rate(c, double(cycle) + 1), lru_hit_rate(e, double(cycle) + 1), 0.01) << cycle;
  }
}

class CountedLruTest : public ::testing::TestWithParam<std::tuple<uint64_t, double>> {};

TEST_P(CountedLruTest, MeanAbsoluteErrorVersusExactAtMost001) {
  const auto [rows, alpha] = GetParam();
  StatsConfig cfg;
  const Compared c = run(rows, alpha, 3'000'000, cfg);
  const double mae = lru_mae(c.exact_lru, c.counted, std::getenv("EDO_SHARDS_DEBUG") != nullptr);
  std::printf("counted SHARDS rows %llu alpha %.2f rate %.4f: MAE %.5f over all points, %.2f%% of references sampled\n",
              static_cast<unsigned long long>(rows), alpha, counted_sample_rate(rows, cfg), mae,
              100.0 * static_cast<double>(c.sampled) / static_cast<double>(c.counted.lookups()));
  EXPECT_LE(mae, 0.01);
  // Every reference is in the histogram.
  EXPECT_NEAR(c.counted.stack_distances().total(), static_cast<double>(c.counted.lookups()), 1e-6 * c.counted.lookups());
}

INSTANTIATE_TEST_SUITE_P(Zipf, CountedLruTest,
                         ::testing::Values(std::make_tuple(uint64_t{1} << 20, 0.8), std::make_tuple(uint64_t{1} << 20, 1.05),
                                           std::make_tuple(uint64_t{1} << 20, 1.2), std::make_tuple(uint64_t{4096}, 1.05),
                                           std::make_tuple(uint64_t{65536}, 1.05)));

TEST(CountedSegments, SketchModeGivesTheCpuPathsEstimates) {
  StatsConfig cfg;
  cfg.exact_rows_limit = 1000;  // a 200 000-row table is "large"
  cfg.cms_width = 1 << 14;
  cfg.top_k = 256;
  const Compared c = run(200000, 1.1, 400000, cfg, 20000, 4);
  ASSERT_EQ(c.counted.mode(), CountMode::kSketch);
  EXPECT_EQ(c.counted.lookups(), c.cpu.lookups());
  // Same cells, same registers: the same estimates.
  for (uint64_t row : {0ull, 1ull, 77ull, 1999ull, 150000ull}) EXPECT_EQ(c.counted.count(row), c.cpu.count(row)) << row;
  EXPECT_EQ(c.counted.unique_rows(), c.cpu.unique_rows());
  // The most-read rows are found (the top 20 of both agree as sets).
  auto top = [](const TableAggregate& a) {
    std::vector<uint64_t> v;
    for (const auto& [r, n] : a.top_rows(20)) v.push_back(r);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(top(c.counted), top(c.cpu));
}

}  // namespace
}  // namespace edo::stats
