// Synthetic workloads: the kernels draw row ids through core/stats' ZipfGenerator (the one
// generator, tested in tests/unit/stats); here: that the batches are that generator's stream,
// that their hot rows agree, and that uniform is uniform.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "edo/kernels/backend.h"
#include "edo/kernels/workload.h"
#include "edo/stats/table_stats.h"

using namespace edo::kernels;

TEST(Workload, BatchesAreTheStatsGeneratorsStream) {
  const std::uint64_t rows = 10000;
  auto batches = zipf_batches(rows, 1.05, 3, 4, 5000);
  std::vector<std::int64_t> ref(20000);
  edo::stats::ZipfGenerator(rows, 1.05, 3).fill(ref.data(), ref.size());
  std::vector<std::int64_t> joined;
  for (const auto& b : batches) joined.insert(joined.end(), b.begin(), b.end());
  EXPECT_EQ(joined, ref);
  EXPECT_EQ(zipf_indices(rows, 20000, 1.05, 3), ref);
  EXPECT_NE(zipf_indices(rows, 20000, 1.05, 4), ref);
  // The hottest row of every batch is the generator's rank-1 row.
  const auto hot = static_cast<std::int64_t>(zipf_row_of_rank(rows, 1.05, 3, 1));
  for (const auto& b : batches) {
    std::vector<int> c(rows);
    for (auto i : b) ++c[static_cast<std::size_t>(i)];
    EXPECT_EQ(std::max_element(c.begin(), c.end()) - c.begin(), hot);
  }
}

TEST(Workload, UniformCoversTheTableEvenly) {
  auto u = zipf_indices(50, 100000, 0.0, 3);
  std::vector<int> h(50);
  for (auto i : u) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, 50);
    ++h[static_cast<std::size_t>(i)];
  }
  for (int v : h) EXPECT_NEAR(v, 2000, 300);
}

TEST(Workload, FixedBagsCutWholeBags) {
  auto w = Workload::fixed_bags({std::vector<std::int64_t>(70, 1), std::vector<std::int64_t>(64, 2)}, 32);
  ASSERT_EQ(w.batches.size(), 2u);
  EXPECT_EQ(w.batches[0].size(), 64u);
  EXPECT_EQ(w.offsets[0], (std::vector<std::int64_t>{0, 32, 64}));
  EXPECT_EQ(w.indices(), 128u);
  EXPECT_EQ(w.bags(), 4u);
  EXPECT_EQ(w.max_batch(), 64u);
  EXPECT_THROW(Workload::fixed_bags({std::vector<std::int64_t>(10, 1)}, 32), std::invalid_argument);  // no whole bag
  EXPECT_THROW(Workload::fixed_bags({}, 4), std::invalid_argument);
}

TEST(Workload, PermutationAndRng) {
  auto p = random_permutation(10000, 1);
  std::set<std::int64_t> s(p.begin(), p.end());
  EXPECT_EQ(s.size(), 10000u);
  EXPECT_EQ(*s.begin(), 0);
  EXPECT_EQ(*s.rbegin(), 9999);
  EXPECT_EQ(p, random_permutation(10000, 1));
  EXPECT_NE(p, random_permutation(10000, 2));
  Rng a(5), b(5);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  Rng r(9);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(r.below(7), 7u);
}
