// stats::state_bound_bytes() is an upper bound on what a table's statistics allocate, and
// stats::fit_state_to() finds configs under a budget. The allocations are counted by the
// operator new/delete of this executable (live bytes and their peak).
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "edo/stats/table_stats.h"

namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};
void note_alloc(void* p) {
  if (!p) return;
  const int64_t now = g_live.fetch_add(int64_t(malloc_usable_size(p))) + int64_t(malloc_usable_size(p));
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  note_alloc(p);
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
// GCC warns that free() meets a pointer from operator new; this operator new is malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  if (p) g_live.fetch_sub(int64_t(malloc_usable_size(p)));
  std::free(p);
}
#pragma GCC diagnostic pop
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, size_t) noexcept { operator delete(p); }
void operator delete[](void* p, size_t) noexcept { operator delete(p); }

namespace {

using edo::stats::StatsConfig;
using edo::stats::TableIngestor;

// Peak bytes allocated while a table of `rows` rows takes `flushes` rounds of `per_flush`
// uniformly random lookups (the most distinct rows: the worst case for every sample and
// sketch), each round ending with a delta taken and serialized, as a flush does.
int64_t peak_of(uint64_t rows, const StatsConfig& cfg, uint64_t per_flush, int flushes, uint64_t seed = 1) {
  std::vector<int64_t> batch(1 << 16);
  std::mt19937_64 rng(seed);
  const int64_t before = g_live.load();
  g_peak.store(before);
  {
    TableIngestor ing(rows, cfg);
    for (int f = 0; f < flushes; ++f) {
      for (uint64_t done = 0; done < per_flush; done += batch.size()) {
        for (auto& x : batch) x = int64_t(rng() % rows);
        ing.add(batch.data(), batch.size());
      }
      ing.close_window();
      const std::string wire = ing.take_delta().serialize();
      EXPECT_FALSE(wire.empty());
    }
  }
  return g_peak.load() - before;
}

TEST(StateBound, CoversWhatASketchedTableAllocates) {
  StatsConfig cfg;
  for (uint64_t rows : {uint64_t{100'000'000}, uint64_t{1} << 27}) {
    const uint64_t bound = edo::stats::state_bound_bytes(rows, cfg);
    const int64_t peak = peak_of(rows, cfg, 1 << 20, 3);
    std::printf("sketched table, %llu rows: peak %lld bytes, bound %llu (%.0f%%)\n", (unsigned long long)rows,
                (long long)peak, (unsigned long long)bound, 100.0 * double(peak) / double(bound));
    EXPECT_LE(uint64_t(peak), bound);
  }
}

TEST(StateBound, CoversWhatAnExactTableAllocates) {
  StatsConfig cfg;
  for (uint64_t rows : {uint64_t{50'000}, uint64_t{3'000'000}}) {
    const uint64_t bound = edo::stats::state_bound_bytes(rows, cfg);
    const int64_t peak = peak_of(rows, cfg, rows * 2, 3);
    std::printf("exact table, %llu rows: peak %lld bytes, bound %llu (%.0f%%)\n", (unsigned long long)rows, (long long)peak,
                (unsigned long long)bound, 100.0 * double(peak) / double(bound));
    EXPECT_LE(uint64_t(peak), bound);
  }
}

// Small tables (issue 30 point 7, issue 31): the bound follows the rows (a window's hot set,
// the stack, the scratch buffers), and so do the allocations, read a few times or flooded.
TEST(StateBound, CoversWhatASmallTableAllocates) {
  for (uint64_t rows : {uint64_t{1}, uint64_t{16}, uint64_t{100}, uint64_t{1000}, uint64_t{5000}}) {
    StatsConfig cfg;
    const uint64_t bound = edo::stats::state_bound_bytes(rows, cfg);
    const int64_t peak = peak_of(rows, cfg, 1 << 16, 3);
    // The tracer's start: the ordered sample at 256 references (raised as references come).
    cfg.ordered_sample_refs = 256;
    const uint64_t small_bound = edo::stats::state_bound_bytes(rows, cfg);
    const int64_t small_peak = peak_of(rows, cfg, 1, 3);
    std::printf("%llu-row table: bound %llu bytes, peak %lld flooded; ordered sample at 256: bound %llu, peak %lld\n",
                (unsigned long long)rows, (unsigned long long)bound, (long long)peak, (unsigned long long)small_bound,
                (long long)small_peak);
    EXPECT_LE(uint64_t(peak), bound) << rows;
    EXPECT_LE(uint64_t(small_peak), small_bound) << rows;
  }
  // A 16-row table starts in kilobytes, not megabytes.
  StatsConfig start;
  start.ordered_sample_refs = 256;
  EXPECT_LT(edo::stats::state_bound_bytes(16, start), uint64_t{512} << 10);
}

// A small table that does not fit stays exact (its counts are smaller than any sketch) and
// gives up its other parts instead; its smallest statistics take kilobytes.
TEST(StateBound, ASmallTableIsNeverSketched) {
  const StatsConfig cfg;
  for (uint64_t budget : {uint64_t{1} << 20, uint64_t{256} << 10, uint64_t{0}}) {
    const StatsConfig c = edo::stats::fit_state_to(16, cfg, budget);
    EXPECT_GE(c.exact_rows_limit, 16u) << budget;
  }
  const uint64_t smallest = edo::stats::state_bound_bytes(16, edo::stats::fit_state_to(16, cfg, 0));
  std::printf("16-row table: smallest statistics %llu bytes\n", (unsigned long long)smallest);
  EXPECT_LT(smallest, uint64_t{64} << 10);
  // A large exact table that does not fit is still sketched.
  EXPECT_LT(edo::stats::fit_state_to(10'000'000, cfg, uint64_t{64} << 20).exact_rows_limit, 10'000'000u);
}

TEST(StateBound, FittedConfigsStayUnderTheirBudgetAndStillAllocateUnderTheBound) {
  const StatsConfig cfg;
  for (uint64_t budget : {uint64_t{64} << 20, uint64_t{8} << 20, uint64_t{2} << 20, uint64_t{1} << 20}) {
    const StatsConfig c = edo::stats::fit_state_to(100'000'000, cfg, budget);
    const uint64_t bound = edo::stats::state_bound_bytes(100'000'000, c);
    EXPECT_LE(bound, budget) << budget;
    const int64_t peak = peak_of(100'000'000, c, 1 << 19, 2);
    std::printf("budget %llu: cms %u x %u, top-K %u, hll 2^%u, windows %u x %u, lru %d rate %.2g: peak %lld bound %llu\n",
                (unsigned long long)budget, c.cms_width, c.cms_depth, c.top_k, c.hll_precision, c.max_windows,
                c.drift_top_k, int(c.track_lru), c.shards_rate, (long long)peak, (unsigned long long)bound);
    EXPECT_LE(uint64_t(peak), bound) << budget;
  }
}

TEST(StateBound, AnExactTableThatDoesNotFitIsSketched) {
  StatsConfig cfg;  // exact up to 2^26 rows
  const uint64_t rows = 10'000'000;
  ASSERT_GT(edo::stats::state_bound_bytes(rows, cfg), uint64_t{64} << 20);
  const StatsConfig c = edo::stats::fit_state_to(rows, cfg, uint64_t{64} << 20);
  EXPECT_LT(c.exact_rows_limit, rows);
  EXPECT_LE(edo::stats::state_bound_bytes(rows, c), uint64_t{64} << 20);
  // A budget it fits leaves the config alone.
  const StatsConfig same = edo::stats::fit_state_to(1000, cfg, uint64_t{64} << 20);
  EXPECT_EQ(same.exact_rows_limit, cfg.exact_rows_limit);
  EXPECT_EQ(same.cms_width, cfg.cms_width);
  EXPECT_TRUE(same.track_lru);
}

TEST(StateBound, SmallerBudgetsNeverGiveLargerBounds) {
  const StatsConfig cfg;
  uint64_t last = UINT64_MAX;
  for (uint64_t budget = uint64_t{1} << 30; budget >= (uint64_t{1} << 16); budget /= 2) {
    const uint64_t b = edo::stats::state_bound_bytes(100'000'000, edo::stats::fit_state_to(100'000'000, cfg, budget));
    EXPECT_LE(b, last) << budget;
    last = b;
  }
  // Below the smallest statistics the result is the smallest, over budget: the caller refuses.
  const StatsConfig tiny = edo::stats::fit_state_to(100'000'000, cfg, 1024);
  EXPECT_FALSE(tiny.track_lru);
  EXPECT_GT(edo::stats::state_bound_bytes(100'000'000, tiny), 1024u);
}

}  // namespace
