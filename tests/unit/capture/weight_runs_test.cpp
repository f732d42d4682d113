// How a weight snapshot reads scattered device rows: runs of nearby rows per copy, each within
// the staging buffer, and every wanted row served exactly once (checked by replaying the plan
// against host memory the way weights_cuda.cpp replays it against the device).
#include "weight_runs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <set>

namespace edo::capture {
namespace {

TEST(WeightRuns, NearbyRowsShareACopyAndFarRowsDoNot) {
  // 16-byte rows, stride 16: a gap of 64 bytes allows 4 skipped rows.
  const auto runs = plan_copy_runs({1, 2, 6, 7, 100, 1000}, 16, 16, 64, 1 << 20);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].first_row, 1u);
  EXPECT_EQ(runs[0].last_row, 7u);
  EXPECT_EQ(runs[0].end - runs[0].begin, 4u);
  EXPECT_EQ(runs[1].first_row, 100u);
  EXPECT_EQ(runs[2].first_row, 1000u);
  EXPECT_EQ(run_bytes(runs[0], 16, 16), 7u * 16);
}

TEST(WeightRuns, RunsFitTheStagingBuffer) {
  std::vector<uint64_t> rows(100);
  std::iota(rows.begin(), rows.end(), 0);
  const auto runs = plan_copy_runs(rows, 48, 40, 1 << 20, 480);  // 10 rows of stride 48 at most
  for (const auto& r : runs) EXPECT_LE(run_bytes(r, 48, 40), 480u);
  EXPECT_EQ(runs.size(), 10u);
}

TEST(WeightRuns, ReplayServesEveryRowOnce) {
  std::mt19937_64 rng(5);
  const uint64_t table_rows = 100000, stride = 40, row_bytes = 32;
  std::vector<char> table(table_rows * stride);
  for (size_t i = 0; i < table.size(); ++i) table[i] = char(rng());
  std::set<uint64_t> want;
  while (want.size() < 3000) want.insert(rng() % table_rows);
  const std::vector<uint64_t> sorted(want.begin(), want.end());
  const uint64_t staging = 4096;
  const auto runs = plan_copy_runs(sorted, stride, row_bytes, 256, staging);
  std::vector<char> out(sorted.size() * row_bytes, 0), buf(staging);
  size_t served = 0;
  for (const auto& r : runs) {
    ASSERT_LE(run_bytes(r, stride, row_bytes), staging);
    std::memcpy(buf.data(), table.data() + r.first_row * stride, run_bytes(r, stride, row_bytes));
    for (size_t i = r.begin; i < r.end; ++i, ++served)
      std::memcpy(&out[i * row_bytes], buf.data() + (sorted[i] - r.first_row) * stride, row_bytes);
  }
  EXPECT_EQ(served, sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i)
    ASSERT_EQ(std::memcmp(&out[i * row_bytes], &table[sorted[i] * stride], row_bytes), 0) << i;
}

}  // namespace
}  // namespace edo::capture
