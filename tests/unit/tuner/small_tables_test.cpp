// Tables too small to matter (small_tables.h, issue 31): the smallest tuned tables whose bytes
// together are at most 1 % of the budget, on recordings of more than kMinTablesForSmall tuned
// tables; they keep their recorded format and are not timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "small_tables.h"
#include "workload.h"

namespace edo::tuner {
namespace {

// `n` fp32 tables of `bytes(i)` each, largest first as build_workload orders them.
template <class Bytes>
Workload tables(size_t n, Bytes bytes) {
  Workload w;
  for (size_t i = 0; i < n; ++i) {
    TableGroup g;
    g.name = "t" + std::to_string(i);
    g.dtype = "fp32";
    g.dim = 16;
    g.weight_bytes = bytes(i);
    g.rows = g.weight_bytes / 64;
    w.groups.push_back(g);
  }
  std::stable_sort(w.groups.begin(), w.groups.end(),
                   [](const TableGroup& a, const TableGroup& b) { return a.recorded_device_bytes() > b.recorded_device_bytes(); });
  return w;
}

size_t small_named(const Workload& w, const SmallTables& s, const std::string& name) {
  for (size_t gi = 0; gi < w.groups.size(); ++gi)
    if (w.groups[gi].name == name) return static_cast<size_t>(s.small[gi]);
  ADD_FAILURE() << "no table " << name;
  return 0;
}

TEST(SmallTables, TheSmallestTablesUpToOnePercentOfTheBudgetTogether) {
  // 300 tables of 1000, 2000, ... 300,000 bytes; budget 10 MB: 1 % is 100,000 bytes, which the
  // 13 smallest (1000 + ... + 13,000 = 91,000) stay within and the 14th (105,000) would pass.
  const Workload w = tables(300, [](size_t i) { return uint64_t{1000} * (i + 1); });
  const SmallTables s = small_tables(w, 10'000'000, 1);
  EXPECT_EQ(s.count, 13u);
  EXPECT_EQ(s.bytes, 91'000u);
  EXPECT_EQ(s.largest, 13'000u);
  EXPECT_EQ(std::accumulate(s.small.begin(), s.small.end(), size_t{0}), 13u);
  EXPECT_EQ(small_named(w, s, "t0"), 1u);
  EXPECT_EQ(small_named(w, s, "t12"), 1u);
  EXPECT_EQ(small_named(w, s, "t13"), 0u);
  EXPECT_EQ(small_named(w, s, "t299"), 0u);
}

TEST(SmallTables, TheBudgetOfEveryDeviceCounts) {
  // 4 devices of 2.5 MB: the same 10 MB as one device of 10 MB, the same 13 tables.
  const Workload w = tables(300, [](size_t i) { return uint64_t{1000} * (i + 1); });
  EXPECT_EQ(small_tables(w, 2'500'000, 4).count, 13u);
  EXPECT_EQ(small_tables(w, 2'500'000, 1).count, 6u);  // 1000 + ... + 6000 = 21,000 <= 25,000 < 28,000
}

TEST(SmallTables, NoneWithoutABudgetOrWithFewTables) {
  const Workload many = tables(300, [](size_t i) { return uint64_t{1000} * (i + 1); });
  EXPECT_EQ(small_tables(many, 0, 1).count, 0u);
  // kMinTablesForSmall tables or fewer: each is tuned, however small.
  const Workload few = tables(kMinTablesForSmall, [](size_t i) { return uint64_t{1000} * (i + 1); });
  EXPECT_EQ(small_tables(few, 10'000'000, 1).count, 0u);
  const Workload one_more = tables(kMinTablesForSmall + 1, [](size_t i) { return uint64_t{1000} * (i + 1); });
  EXPECT_GT(small_tables(one_more, 10'000'000, 1).count, 0u);
}

TEST(SmallTables, TablesNotTunedAreNeitherCountedNorTaken) {
  // The 100 smallest are outside --tables: they are not small (already kept), and the rule
  // counts only the 300 tuned ones, from the smallest of those.
  Workload w = tables(400, [](size_t i) { return uint64_t{1000} * (i + 1); });
  for (auto& g : w.groups)
    if (g.weight_bytes <= 100'000) g.tuned = false;
  const SmallTables s = small_tables(w, 50'000'000, 1);  // of 80,200,000; 1 %: 500,000 bytes
  // 101,000 + ... + 104,000 = 410,000 <= 500,000 < 410,000 + 105,000
  EXPECT_EQ(s.count, 4u);
  for (size_t gi = 0; gi < w.groups.size(); ++gi) {
    if (!w.groups[gi].tuned) {
      EXPECT_EQ(s.small[gi], 0) << gi;
    }
  }
}

TEST(SmallTables, EqualTablesAreTakenInTheSameOrderEveryTime) {
  // 300 tables of 1000 bytes, 1 % of 250,000 = 2,500: 2 of them, the last 2 in workload order.
  const Workload w = tables(300, [](size_t) { return uint64_t{1000}; });
  const SmallTables s = small_tables(w, 250'000, 1);
  EXPECT_EQ(s.count, 2u);
  for (size_t gi = 0; gi < w.groups.size(); ++gi) EXPECT_EQ(s.small[gi], gi >= 298 ? 1 : 0) << gi;
}

TEST(SmallTables, NoneWhenTheTablesFitAsRecorded) {
  // 300 tables, 45,150,000 bytes: a budget of that much or more leaves memory nothing to decide.
  const Workload w = tables(300, [](size_t i) { return uint64_t{1000} * (i + 1); });
  EXPECT_EQ(small_tables(w, 45'150'000, 1).count, 0u);
  EXPECT_EQ(small_tables(w, 15'050'000, 3).count, 0u);
  EXPECT_GT(small_tables(w, 45'149'999, 1).count, 0u);
}

}  // namespace
}  // namespace edo::tuner
