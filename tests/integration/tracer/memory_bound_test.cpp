// The preload library's memory stays under its documented bound (docs/memory.md):
//   EDO_MAX_MEMORY_MB (tables' statistics) + EDO_MAX_BUFFER_MB (batches in flight)
//   + EDO_MAX_EVENTS x 128 bytes (memory events) + 32 MiB (the rest: registry, threads, heap slack)
// measured as the growth of a job's resident memory (its peak, VmHWM, against its RSS before
// the first edo call): 100 tables of 10^8 rows each (sketched), read uniformly at random, the
// worst case for every sketch and sample. The job registers the tables without allocating
// them (the tracer never reads a table's memory), so the growth is the library's.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "e2e_support.h"

using namespace edo_e2e;

namespace {

constexpr int kTables = 100;
constexpr uint64_t kRows = 100'000'000;
constexpr uint64_t kLookups = 2 * 65536;  // per table

struct Measured {
  long growth_kib = 0;
  Profile profile;
};

Measured run_job(uint64_t memory_mb, uint64_t buffer_mb, uint64_t events, int tables = kTables, uint64_t rows = kRows,
                 uint64_t lookups = kLookups) {
  const std::string trace = tmp_path("memory.trace"), db = tmp_path("memory.edodb");
  Result r = run({MEMORY_JOB, std::to_string(tables), std::to_string(rows), std::to_string(lookups)},
                 with({"EDO_OUTPUT=" + trace, "EDO_MAX_MEMORY_MB=" + std::to_string(memory_mb),
                       "EDO_MAX_BUFFER_MB=" + std::to_string(buffer_mb), "EDO_MAX_EVENTS=" + std::to_string(events),
                       "EDO_FLUSH_MS=200"}));
  Measured m;
  EXPECT_EQ(r.status, 0) << r.err;
  long before = 0, peak = 0;
  EXPECT_EQ(std::sscanf(r.out.c_str(), "rss_before_kib %ld rss_peak_kib %ld", &before, &peak), 2) << r.out;
  m.growth_kib = peak - before;
  Result im = run({EDO_BIN, "import", trace, "-o", db});
  EXPECT_EQ(im.status, 0) << im.err;
  m.profile = load(db);
  return m;
}

long bound_kib(uint64_t memory_mb, uint64_t buffer_mb, uint64_t events) {
  return long(memory_mb * 1024 + buffer_mb * 1024 + events * 128 / 1024 + 32 * 1024);
}

// A sanitizer's shadow memory and quarantine are not the library's: RSS says nothing then.
bool sanitized() {
#ifdef EDO_SANITIZER_PRELOAD
  return std::string(EDO_SANITIZER_PRELOAD).size() > 0;
#else
  return false;
#endif
}

TEST(TracerMemory, HundredSketchedTablesStayUnderTheBound) {
  if (sanitized()) GTEST_SKIP() << "sanitizer build: resident memory includes the sanitizer's";
  const uint64_t mem = 256, buf = 16, events = 1024;
  Measured m = run_job(mem, buf, events);
  const long bound = bound_kib(mem, buf, events);
  std::printf("%d tables x %llu rows, %llu lookups each, EDO_MAX_MEMORY_MB=%llu: the library grew the job by %ld KiB "
              "(bound %ld KiB, %.0f%%)\n",
              kTables, (unsigned long long)kRows, (unsigned long long)kLookups, (unsigned long long)mem, m.growth_kib,
              bound, 100.0 * double(m.growth_kib) / double(bound));
  EXPECT_LE(m.growth_kib, bound);
  const Profile& p = m.profile;
  ASSERT_EQ(p.tables.size(), size_t(kTables));
  for (const auto& t : p.tables) {
    EXPECT_EQ(t.aggregate.lookups(), kLookups) << t.name;
    EXPECT_EQ(t.aggregate.mode(), edo::stats::CountMode::kSketch) << t.name;
  }
  EXPECT_EQ(p.drops().count("memory_bound_tables"), 0u);
  ASSERT_TRUE(p.metadata.count("memory_bound"));
  EXPECT_EQ(p.metadata.at("memory_bound").rfind("100 table(s) got smaller statistics", 0), 0u) << p.metadata.at("memory_bound");
}

// A budget too small for every table: the first ones get the smallest statistics, the rest
// none, and every refused lookup is counted.
TEST(TracerMemory, TablesBeyondTheBoundAreRefusedAndCounted) {
  if (sanitized()) GTEST_SKIP() << "sanitizer build: resident memory includes the sanitizer's";
  const uint64_t mem = 16, buf = 16, events = 1024;
  Measured m = run_job(mem, buf, events);
  const long bound = bound_kib(mem, buf, events);
  const Profile& p = m.profile;
  uint64_t with_stats = 0;
  for (const auto& t : p.tables) with_stats += t.aggregate.lookups() == kLookups;
  const auto drops = p.drops();
  std::printf("EDO_MAX_MEMORY_MB=%llu: %llu of %d tables got statistics; the library grew the job by %ld KiB (bound %ld KiB)\n",
              (unsigned long long)mem, (unsigned long long)with_stats, kTables, m.growth_kib, bound);
  EXPECT_LE(m.growth_kib, bound);
  EXPECT_GT(with_stats, 0u);
  EXPECT_LT(with_stats, uint64_t(kTables));
  ASSERT_TRUE(drops.count("memory_bound_tables"));
  EXPECT_EQ(drops.at("memory_bound_tables"), kTables - with_stats);
  EXPECT_EQ(drops.at("memory_bound_lookups"), (kTables - with_stats) * kLookups);
}

// A table placed by a first batch that reads more rows than a waiting table is reserved for
// (65,536 indices, ~63,500 rows: the reservation assumes 4,096) gets its full statistics when
// the budget has room: its exact LRU prefix covers every reference (the curve's cold
// references are the distinct rows read, exactly) and no "smaller statistics" note is written.
// (The share was the full bound as of 4,096 rows: the prefix was cut to 4,096 rows, SHARDS
// estimated the rest, and the recording said the table was sized down under 4 GiB.)
TEST(TracerMemory, ALargeFirstBatchKeepsTheFullStatisticsWhenTheBudgetHasRoom) {
  const uint64_t rows = 1'000'000, lookups = 2 * 65536;
  Measured m = run_job(4096, 64, 1024, 1, rows, lookups);
  // memory_job.c's rows: xorshift64 modulo rows
  std::set<uint64_t> read;
  uint64_t x = 88172645463325252ull;
  for (uint64_t i = 0; i < lookups; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    read.insert(x % rows);
  }
  const Profile& p = m.profile;
  ASSERT_EQ(p.tables.size(), 1u);
  const auto& a = p.tables[0].aggregate;
  EXPECT_EQ(a.lookups(), lookups);
  EXPECT_EQ(a.mode(), edo::stats::CountMode::kExact);
  EXPECT_EQ(a.stack_distances().cold(), double(read.size()));
  EXPECT_EQ(a.stack_distances().total(), double(lookups));
  EXPECT_EQ(p.metadata.count("memory_bound"), 0u) << p.metadata.at("memory_bound");
}

}  // namespace
