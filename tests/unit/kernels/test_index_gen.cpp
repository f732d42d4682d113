#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "kernels/cpu/index_gen.h"

using namespace edo::kernels;

TEST(IndexGen, ZipfMatchesThePmf) {
  const std::uint64_t n = 1000;
  const double a = 1.05;
  ZipfSampler z(n, a);
  Rng rng(5);
  std::vector<std::uint64_t> hist(n + 1, 0);
  const int N = 400000;
  for (int i = 0; i < N; ++i) {
    const auto k = z.sample(rng);
    ASSERT_GE(k, 1u);
    ASSERT_LE(k, n);
    ++hist[k];
  }
  double norm = 0;
  for (std::uint64_t k = 1; k <= n; ++k) norm += std::pow(static_cast<double>(k), -a);
  for (std::uint64_t k : {1, 2, 3, 10, 100}) {
    const double p = std::pow(static_cast<double>(k), -a) / norm;
    const double sd = std::sqrt(N * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(hist[k]), N * p, 5 * sd) << k;
  }
  ZipfSampler one(1, 2.0);
  EXPECT_EQ(one.sample(rng), 1u);
  ZipfSampler exact1(100, 1.0);  // exponent 1 (the helper functions' limit)
  for (int i = 0; i < 1000; ++i) EXPECT_LE(exact1.sample(rng), 100u);
  EXPECT_THROW(ZipfSampler(10, 0.0), std::invalid_argument);
}

TEST(IndexGen, PermutationAndDeterminism) {
  auto p = random_permutation(10000, 1);
  std::set<std::int64_t> s(p.begin(), p.end());
  EXPECT_EQ(s.size(), 10000u);
  EXPECT_EQ(*s.begin(), 0);
  EXPECT_EQ(*s.rbegin(), 9999);
  EXPECT_EQ(p, random_permutation(10000, 1));
  EXPECT_NE(p, random_permutation(10000, 2));
  auto a = generate_indices(10000, 200000, 1.05, 3, p);
  EXPECT_EQ(a, generate_indices(10000, 200000, 1.05, 3, p));
  // The hottest row is perm[0].
  std::vector<int> c(10000);
  for (auto i : a) ++c[i];
  EXPECT_EQ(std::max_element(c.begin(), c.end()) - c.begin(), p[0]);
  auto u = generate_indices(50, 100000, 0.0, 3, {});
  std::vector<int> h(50);
  for (auto i : u) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, 50);
    ++h[i];
  }
  for (int v : h) EXPECT_NEAR(v, 2000, 300);
}
