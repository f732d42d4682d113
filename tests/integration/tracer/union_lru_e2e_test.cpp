// Issue 22: the model-parallel LRU curve of a table read on two ranks, end to end. Each rank of
// a deterministic C job (tracer_job rank_stream) is recorded by its own `edo record` as its own
// "node", the two recordings are merged with `edo merge`, and `edo report --json` has both
// curves: the per-rank one (data parallel) and "lru_union", which must match an exact LRU
// simulation of the lock-step interleaved union stream (rank 0 reads twice as much as rank 1:
// two of its references per one of rank 1's) within the SHARDS tolerance of the held-out
// replay's tests (0.02): rank 0's 200000 references exceed the ordered sample's bound (65536),
// so the union is estimated from a sample.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "e2e_support.h"

using namespace edo_e2e;

namespace {

// tracer_job.c's rank_stream, reference by reference.
int64_t rank_stream_row(uint64_t* x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  const uint64_t h = (*x >> 8) % 1024;
  return static_cast<int64_t>((*x & 3) == 0 ? (*x >> 2) % 20000 : h * h / 1024);
}

std::vector<int64_t> rank_stream(int rank) {
  uint64_t x = 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(rank) * 0x632be59bd9b4e019ULL;
  std::vector<int64_t> out(static_cast<size_t>(100000 * (2 - rank)));
  for (auto& r : out) {
    const int64_t row = rank_stream_row(&x);
    r = row < 1024 ? (row + 600 * rank) % 20000 : row;
  }
  return out;
}

// Stack distances (distinct other rows since the row's previous reference; -1: first) with a
// Fenwick tree over reference indices (1 at each row's latest reference).
std::vector<int64_t> stack_distances(const std::vector<int64_t>& s) {
  std::vector<int64_t> tree(s.size() + 1, 0), out;
  auto add = [&](size_t i, int64_t v) {
    for (++i; i < tree.size(); i += i & (~i + 1)) tree[i] += v;
  };
  auto prefix = [&](size_t i) {
    int64_t t = 0;
    for (; i > 0; i -= i & (~i + 1)) t += tree[i];
    return t;
  };
  std::unordered_map<int64_t, size_t> last;
  for (size_t i = 0; i < s.size(); ++i) {
    auto it = last.find(s[i]);
    if (it == last.end()) {
      out.push_back(-1);
      last.emplace(s[i], i);
    } else {
      out.push_back(prefix(i) - prefix(it->second + 1));
      add(it->second, -1);
      it->second = i;
    }
    add(i, 1);
  }
  return out;
}

double lru(const std::vector<int64_t>& distances, int64_t cache_rows) {
  size_t hits = 0;
  for (int64_t d : distances) hits += d >= 0 && d < cache_rows;
  return static_cast<double>(hits) / static_cast<double>(distances.size());
}

}  // namespace

TEST(UnionLruE2E, MergedRanksHaveTheModelParallelCurveOfTheLockStepUnion) {
  std::vector<std::string> dbs;
  for (int rank : {0, 1}) {
    dbs.push_back(tmp_path("node" + std::to_string(rank) + ".edodb"));
    Result r = run({EDO_BIN, "record", "-o", dbs.back(), "--", TRACER_JOB, "rank_stream", "0"},
                   with({"RANK=" + std::to_string(rank), "LOCAL_RANK=0", "GROUP_RANK=" + std::to_string(rank),
                         "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=1", "TORCHELASTIC_RUN_ID=edo-union-lru", "MASTER_ADDR=127.0.0.1",
                         "MASTER_PORT=29511", "EDO_HOSTNAME=node" + std::to_string(rank)}));
    ASSERT_EQ(r.status, 0) << r.err;
  }
  const std::string job = tmp_path("job.edodb");
  Result m = run({EDO_BIN, "merge", dbs[0], dbs[1], "-o", job}, kClean);
  ASSERT_EQ(m.status, 0) << m.err;
  Result rep = run({EDO_BIN, "report", "--json", job}, kClean);
  ASSERT_EQ(rep.status, 0) << rep.err;
  const auto j = nlohmann::json::parse(rep.out);
  const nlohmann::json* table = nullptr;
  for (const auto& t : j["tables"])
    if (t["name"] == "emb.shared") table = &t;
  ASSERT_NE(table, nullptr) << rep.out.substr(0, 4000);
  EXPECT_EQ((*table)["lookups"], 300000);
  const auto& u = (*table)["lru_union"];
  ASSERT_TRUE(u.is_object()) << table->dump(2);
  ASSERT_TRUE(u["available"].get<bool>()) << u.dump(2);
  EXPECT_EQ(u["estimated_from"], "ordered samples interleaved by progress");
  EXPECT_EQ(u["ranks"], 2);
  EXPECT_LT(u["rate"].get<double>(), 1.0) << "rank 0's stream exceeds the sample's bound";
  EXPECT_TRUE(u["stratified"].get<bool>());

  // The exact lock-step union: rank 0's reference i at i / 200000, rank 1's j at j / 100000,
  // ties to rank 0.
  const std::vector<int64_t> s0 = rank_stream(0), s1 = rank_stream(1);
  std::vector<int64_t> both;
  for (size_t i = 0, k = 0; i < s0.size() || k < s1.size();) {
    if (k == s1.size() || (i < s0.size() && i * s1.size() <= k * s0.size())) both.push_back(s0[i++]);
    else both.push_back(s1[k++]);
  }
  const std::vector<int64_t> d = stack_distances(both);
  const auto& curve = u["lru_hit_rate"];
  const auto& per_rank = (*table)["lru_hit_rate"];
  ASSERT_EQ(curve.size(), per_rank.size());
  double most = 0, error = 0;
  for (size_t i = 0; i < curve.size(); ++i) {
    const int64_t k = curve[i][0].get<int64_t>();
    EXPECT_EQ(per_rank[i][0].get<int64_t>(), k) << "the same cache sizes";
    const double exact = lru(d, k);
    EXPECT_NEAR(curve[i][1].get<double>(), exact, 0.02) << k << " rows";
    error = std::max(error, std::fabs(curve[i][1].get<double>() - exact));
    most = std::max(most, std::fabs(curve[i][1].get<double>() - per_rank[i][1].get<double>()));
  }
  std::printf("union LRU at sample rate %g: largest error %.4f over %zu cache sizes\n", u["rate"].get<double>(), error,
              curve.size());
  // Their hot sets differ: one cache for both needs more rows than each rank's own.
  EXPECT_GT(most, 0.05);
  EXPECT_TRUE(u["differs"].get<bool>());
  EXPECT_NEAR(u["lru_hit_rate_at"]["1pct"].get<double>(), lru(d, 200), 0.02);
  EXPECT_NEAR(u["lru_hit_rate_at"]["10pct"].get<double>(), lru(d, 2000), 0.02);

  // The text report shows both at 1 % and 10 %, marked as model-parallel.
  Result text = run({EDO_BIN, "report", "--wide", job}, kClean);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("model-parallel LRU (one cache for the lookups of every rank"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("emb.shared: model-parallel LRU1% "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("assuming the ranks advance in lock-step"), std::string::npos) << text.out;
}
