// PQ, multi-hash, QR, low-rank, pruned, offload: byte formulas, error behaviour, hit rates;
// strategy spec parsing.
#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <map>
#include <set>
#include <numeric>
#include <unordered_map>

#include "common.h"

using namespace edo::kernels;
using namespace edo::kernels::test;

namespace {
double err(const std::string& spec, const std::vector<float>& w, std::uint64_t rows, std::uint32_t dim,
           const std::uint64_t* counts = nullptr) {
  return reconstruction_error(*enc(spec, w, rows, dim, counts), w.data(), counts);
}
// Low-rank-ish weights: a rank-8 signal plus a little noise.
std::vector<float> structured(std::uint64_t R, std::uint32_t D) {
  auto a = weights(R, 8, 31);
  auto b = weights(8, D, 32);
  auto n = weights(R, D, 33, 0.05f);
  for (std::uint64_t r = 0; r < R; ++r)
    for (std::uint32_t d = 0; d < D; ++d)
      for (int k = 0; k < 8; ++k) n[r * D + d] += a[r * 8 + k] * b[k * D + d];
  return n;
}
}  // namespace

TEST(Pq, BytesAndErrorFallsWithMoreSubspaces) {
  const std::uint64_t R = 3000;
  const std::uint32_t D = 32;
  auto w = weights(R, D, 4);
  EXPECT_EQ(enc("pq:m=8", w, R, D)->device_bytes(), R * 8 + 8 * 256 * 4 * 4);
  EXPECT_EQ(enc("pq:m=8", w, R, D)->bytes_read_per_row(), 8.0);
  const double e4 = err("pq:m=4", w, R, D), e8 = err("pq:m=8", w, R, D), e16 = err("pq:m=16", w, R, D),
               e32 = err("pq:m=32", w, R, D);
  EXPECT_GT(e4, e8);
  EXPECT_GT(e8, e16);
  EXPECT_GT(e16, e32);
  EXPECT_LT(e32, 0.1);  // dsub = 1: 256 levels per column
  // More k-means iterations do not hurt.
  EXPECT_LE(err("pq:m=8:iters=10", w, R, D), err("pq:m=8:iters=0", w, R, D) * 1.0001);
  EXPECT_THROW(enc("pq:m=5", w, R, D), std::invalid_argument);  // must divide D
}

TEST(Pq, ErrorFallsWithMoreCentroids) {
  const std::uint64_t R = 3000;
  const std::uint32_t D = 16;
  auto w = weights(R, D, 14);
  EXPECT_EQ(enc("pq:m=4:k=16", w, R, D)->device_bytes(), R * 4 + 4 * 16 * 4 * 4);
  double prev = 2;
  for (int k : {2, 8, 32, 128, 256}) {
    const double e = err("pq:m=4:k=" + std::to_string(k), w, R, D);
    EXPECT_LT(e, prev) << k;
    prev = e;
  }
  EXPECT_THROW(enc("pq:k=300", w, R, D), std::invalid_argument);
}

TEST(Pq, DeterministicForASeed) {
  const std::uint64_t R = 1000;
  const std::uint32_t D = 16;
  auto w = weights(R, D, 8);
  EXPECT_EQ(decode_all(*enc("pq:m=4", w, R, D)), decode_all(*enc("pq:m=4", w, R, D)));
}

TEST(LowRank, ErrorFallsWithRankAndFullRankIsExact) {
  const std::uint64_t R = 2000;
  const std::uint32_t D = 32;
  auto w = structured(R, D);
  EXPECT_EQ(enc("lowrank:rank=4", w, R, D)->device_bytes(), (R * 4 + 4 * D) * 4);
  double prev = 2;
  for (int r : {1, 2, 4, 8, 16}) {
    const double e = err("lowrank:rank=" + std::to_string(r), w, R, D);
    EXPECT_LT(e, prev) << r;
    prev = e;
  }
  EXPECT_LT(err("lowrank:rank=8", w, R, D), 0.1);  // the signal is rank 8
  EXPECT_LT(err("lowrank:rank=32", w, R, D), 1e-5);
}

TEST(LowRank, CountWeightingFavoursHotRows) {
  const std::uint64_t R = 1000;
  const std::uint32_t D = 16;
  auto w = weights(R, D, 12);
  std::vector<std::uint64_t> counts(R, 1);
  for (std::uint64_t r = 0; r < 20; ++r) counts[r] = 10000;
  EXPECT_LT(err("lowrank:rank=4", w, R, D, counts.data()),
            reconstruction_error(*enc("lowrank:rank=4", w, R, D), w.data(), counts.data()));
}

TEST(MultiHash, BytesAndMoreBucketsLowerError) {
  const std::uint64_t R = 4000;
  const std::uint32_t D = 16;
  auto w = weights(R, D, 5);
  auto t = enc("multihash:buckets=400:k=2", w, R, D);
  EXPECT_EQ(t->device_bytes(), 400u * D * 4);
  EXPECT_TRUE(t->needs_retraining());
  EXPECT_EQ(enc("multihash:buckets=400:k=4:mode=concat", w, R, D)->device_bytes(), 400u * 4 * 4);
  EXPECT_GT(err("multihash:buckets=200", w, R, D), err("multihash:buckets=2000", w, R, D));
  EXPECT_GT(err("multihash:buckets=200:k=2:mode=concat", w, R, D), err("multihash:buckets=4000:k=2:mode=concat", w, R, D));
  // Fitting beats the zero table (error 1).
  EXPECT_LT(err("multihash:buckets=2000", w, R, D), 1.0);
  EXPECT_THROW(enc("multihash:k=3:mode=concat", w, R, D), std::invalid_argument);
}

TEST(Qr, BytesAndFit) {
  const std::uint64_t R = 1001;
  const std::uint32_t D = 8;
  auto w = weights(R, D, 6);
  auto t = enc("qr:m=10", w, R, D);
  EXPECT_EQ(t->device_bytes(), (101u + 10u) * D * 4);
  EXPECT_TRUE(t->needs_retraining());
  // One remainder row: Q can hold every row exactly.
  EXPECT_LT(err("qr:m=1", w, R, D), 1e-5);
  EXPECT_LT(err("qr:m=1:op=add", w, R, D), 1e-5);
  EXPECT_LT(err("qr:m=4", w, R, D), 1.0);
  EXPECT_LT(err("qr:m=4:op=add", w, R, D), 1.0);
}

TEST(Pruned, DropsUnreadRowsOnly) {
  const std::uint64_t R = 100;
  const std::uint32_t D = 8;
  auto w = weights(R, D, 7);
  std::vector<std::uint64_t> counts(R, 0);
  for (std::uint64_t r = 0; r < R; r += 4) counts[r] = r + 1;
  auto t = enc("pruned", w, R, D, counts.data());
  EXPECT_EQ(t->device_bytes(), R * 4 + 25 * D * 4 + D * 4);
  EXPECT_EQ(reconstruction_error(*t, w.data(), counts.data()), 0.0);
  std::vector<float> row(D);
  t->decode_rows(1, 1, row.data());
  for (float v : row) EXPECT_EQ(v, 0.f);  // default row: zeros
  auto m = enc("pruned:default=mean", w, R, D, counts.data());
  m->decode_rows(1, 1, row.data());
  double num = 0, den = 0;
  for (std::uint64_t r = 0; r < R; r += 4) {
    num += static_cast<double>(counts[r]) * w[r * D];
    den += static_cast<double>(counts[r]);
  }
  EXPECT_NEAR(row[0], num / den, 1e-5);
  // Without counts nothing is known to be unread: everything is kept.
  EXPECT_EQ(enc("pruned", w, R, D)->device_bytes(), R * 4 + R * D * 4 + D * 4);
}

TEST(Offload, StaticHitRateIsCoverageOfTheHotSet) {
  const std::uint64_t R = 1000;
  const std::uint32_t D = 8;
  auto w = weights(R, D, 8);
  auto idx = zipf_indices(R, 50000, 1.1, 9);
  std::vector<std::uint64_t> counts(R, 0);
  for (auto i : idx) ++counts[i];
  auto t = enc("offload:cache=0.1", w, R, D, counts.data());
  EXPECT_EQ(t->device_bytes(), R * 4 + 100 * D * 4);
  EXPECT_EQ(t->host_bytes(), R * D * 4);
  std::vector<std::uint64_t> sorted(counts);
  std::sort(sorted.rbegin(), sorted.rend());
  const double coverage = static_cast<double>(std::accumulate(sorted.begin(), sorted.begin() + 100, 0ull)) / 50000.0;
  std::vector<float> out(idx.size() * D);
  t->gather(idx.data(), static_cast<std::int64_t>(idx.size()), out.data());
  EXPECT_NEAR(t->hit_rate(), coverage, 1e-12);
  for (std::size_t i = 0; i < idx.size(); i += 97)
    for (std::uint32_t d = 0; d < D; ++d) ASSERT_EQ(out[i * D + d], w[idx[i] * D + d]);
}

// The LRU policy of edo/kernels/lru.h, re-implemented plainly (maps, no sets arithmetic of
// the class): per batch, hits before the batch, then each set's distinct misses in row order
// into the slots the batch has not used, least recently used first.
namespace {
struct PlainBatchLru {
  std::uint64_t sets;
  std::uint32_t ways;
  std::vector<std::int64_t> tag;
  std::vector<std::uint32_t> time;
  std::uint32_t now = 0;
  PlainBatchLru(std::uint64_t c) : ways(static_cast<std::uint32_t>(std::min<std::uint64_t>(8, c))), tag(c, -1), time(c, 0) {
    sets = ways ? c / ways : 0;
  }
  std::uint64_t batch(const std::vector<std::int64_t>& idx) {
    ++now;
    std::uint64_t hits = 0;
    std::map<std::uint64_t, std::set<std::int64_t>> misses;  // set -> rows
    for (auto r : idx) {
      const std::uint64_t s = static_cast<std::uint64_t>((static_cast<unsigned __int128>(mix64(static_cast<std::uint64_t>(r))) * sets) >> 64);
      bool hit = false;
      for (std::uint32_t w = 0; w < ways; ++w)
        if (tag[s * ways + w] == r) {
          hit = true;
          time[s * ways + w] = now;
        }
      if (hit) ++hits;
      else misses[s].insert(r);
    }
    for (auto& [s, rows] : misses) {
      std::vector<std::pair<std::uint32_t, std::uint32_t>> free;  // (time, way)
      for (std::uint32_t w = 0; w < ways; ++w)
        if (time[s * ways + w] < now) free.push_back({time[s * ways + w], w});
      std::sort(free.begin(), free.end());
      std::size_t k = 0;
      for (auto r : rows) {
        if (k == free.size()) break;
        tag[s * ways + free[k].second] = r;
        time[s * ways + free[k].second] = now;
        ++k;
      }
    }
    return hits;
  }
};
}  // namespace

TEST(Offload, LruHitRateMatchesThePolicy) {
  const std::uint64_t R = 500;
  const std::uint32_t D = 4;
  auto w = weights(R, D, 8);
  auto idx = zipf_indices(R, 20000, 1.0, 10);
  for (const char* spec : {"offload:cache=0.1:policy=lru", "offload:cache=0.011:policy=lru", "offload:cache=0.5:policy=lru"}) {
    SCOPED_TRACE(spec);
    auto t = enc(spec, w, R, D);
    const std::uint64_t C = t->params()["cache_rows"].get<std::uint64_t>();
    PlainBatchLru ref(C);
    std::uint64_t ref_hits = 0;
    std::vector<float> out(1000 * D);
    for (std::size_t b = 0; b < idx.size(); b += 1000) {
      std::vector<std::int64_t> batch(idx.begin() + static_cast<std::ptrdiff_t>(b), idx.begin() + static_cast<std::ptrdiff_t>(b + 1000));
      ref_hits += ref.batch(batch);
      t->gather(batch.data(), 1000, out.data());
      for (std::size_t i = 0; i < 1000; ++i)
        for (std::uint32_t d = 0; d < D; ++d) ASSERT_EQ(out[i * D + d], w[batch[i] * D + d]);
    }
    EXPECT_NEAR(t->hit_rate(), static_cast<double>(ref_hits) / static_cast<double>(idx.size()), 1e-12);
    // The cache the table holds is the policy's: same tags.
    const FormatData f = t->format_data();
    const auto* tag = static_cast<const std::int64_t*>(f.array("tag").data);
    EXPECT_EQ(std::vector<std::int64_t>(tag, tag + C), ref.tag);
  }
  // Close to a fully associative per-access LRU of the same size (the profile's curve) when the
  // batches are small beside the cache (a row missed twice in one batch is two misses: with
  // batches larger than the cache the batch policy falls well below per-access LRU).
  const std::uint64_t R2 = 20000;
  auto w2 = weights(R2, D, 8);
  auto idx2 = zipf_indices(R2, 100000, 1.0, 12);
  auto t = enc("offload:cache=0.05:policy=lru", w2, R2, D);
  std::list<std::int64_t> lru;
  std::unordered_map<std::int64_t, std::list<std::int64_t>::iterator> where;
  std::uint64_t hits = 0;
  for (auto r : idx2) {
    auto it = where.find(r);
    if (it != where.end()) {
      ++hits;
      lru.erase(it->second);
    } else if (lru.size() == 1000) {
      where.erase(lru.back());
      lru.pop_back();
    }
    lru.push_front(r);
    where[r] = lru.begin();
  }
  std::vector<float> out(100 * D);
  for (std::size_t b = 0; b < idx2.size(); b += 100) t->gather(idx2.data() + b, 100, out.data());
  EXPECT_NEAR(t->hit_rate(), static_cast<double>(hits) / static_cast<double>(idx2.size()), 0.05);
  EXPECT_GT(t->hit_rate(), 0.3);
}

TEST(Specs, ParsingAndErrors) {
  auto s = StrategySpec::parse("offload:cache=0.2:policy=lru");
  EXPECT_EQ(s.name, "offload");
  EXPECT_EQ(s.params.at("cache"), "0.2");
  EXPECT_EQ(s.to_string(), "offload:cache=0.2:policy=lru");
  EXPECT_THROW(StrategySpec::parse("nope"), std::invalid_argument);
  EXPECT_THROW(StrategySpec::parse("pq:m"), std::invalid_argument);
  auto all = StrategySpec::parse_list("all");
  EXPECT_EQ(all.size(), 13u);
  EXPECT_EQ(StrategySpec::parse_list("fp32, int8").size(), 2u);
  auto w = weights(10, 4, 1);
  EXPECT_THROW(enc("int8:bits=3", w, 10, 4), std::invalid_argument);
  EXPECT_THROW(enc("offload:cache=2", w, 10, 4), std::invalid_argument);
  EXPECT_THROW(enc("offload:policy=fifo", w, 10, 4), std::invalid_argument);
  EXPECT_THROW(enc("lowrank:rank=0", w, 10, 4), std::invalid_argument);
  try {
    enc("fp8:scale=column", w, 10, 4);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("scale"), std::string::npos);
  }
}

// check_spec: the errors encode() would give for the parameters, before any weight is read or
// any table allocated (a 2^40-bucket multi-hash table would not fit in memory).
TEST(Strategies, CheckSpecRejectsBadParametersWithoutEncoding) {
  EXPECT_NO_THROW(check_spec(StrategySpec::parse("multihash:buckets=1099511627776"), 1ull << 40, 128));
  EXPECT_NO_THROW(check_spec(StrategySpec::parse("offload:cache=0.5:policy=lru"), 1000, 16));
  for (const char* bad : {"pq:m=7", "fp32:bogus=1", "lowrank:rank=999", "offload:cache=2", "multihash:mode=concat:k=3",
                          "int8:scale=row", "qr:op=divide"})
    EXPECT_THROW(check_spec(StrategySpec::parse(bad), 1000, 128), std::invalid_argument) << bad;
  EXPECT_THROW(check_spec(StrategySpec::parse("pruned"), 1ull << 32, 8), std::invalid_argument);
}

// strategy_size(): the exact bytes of a strategy for a shape, without encoding; what the
// encoded table reports, for every strategy, on shapes that exercise padding and defaults.
TEST(Strategies, SizeWithoutEncodingIsTheEncodedTablesSize) {
  const char* specs[] = {"fp32", "fp16", "bf16", "fp8", "fp8:scale=table", "int8", "int4", "pq", "pq:m=4:k=16",
                         "multihash", "multihash:buckets=37:k=3", "multihash:buckets=50:k=2:mode=concat", "qr", "qr:m=7:op=add",
                         "lowrank", "lowrank:rank=3", "pruned", "pruned:default=mean", "offload", "offload:cache=0.33:policy=lru"};
  for (const auto& [R, D] : std::vector<std::pair<std::uint64_t, std::uint32_t>>{{300, 16}, {257, 24}, {1000, 8}}) {
    auto w = weights(R, D, 5);
    std::vector<std::uint64_t> counts(R, 0);
    for (std::uint64_t r = 0; r < R; r += 3) counts[r] = r % 7 + 1;
    for (const char* spec : specs) {
      SCOPED_TRACE(std::string(spec) + " " + std::to_string(R) + "x" + std::to_string(D));
      const auto s = StrategySpec::parse(spec);
      auto t = enc(spec, w, R, D, counts.data());
      const StrategySize z = strategy_size(s, R, D, counts.data());
      EXPECT_EQ(z.device_bytes, t->device_bytes());
      EXPECT_EQ(z.host_bytes, t->host_bytes());
      EXPECT_EQ(z.bytes_per_row, t->bytes_read_per_row());
    }
  }
  EXPECT_EQ(strategy_size(StrategySpec::parse("int8"), 10, 128).device_bytes, 10u * 144);
  EXPECT_THROW(strategy_size(StrategySpec::parse("pq:m=7"), 100, 16), std::invalid_argument);
}

// The one dtype vocabulary (core's edo/dtype.h) as the kernels use it.
TEST(Strategies, DtypesMapToTheirStrategies) {
  EXPECT_EQ(strategy_of_dtype(edo::DType::Fp16).value(), "fp16");
  EXPECT_EQ(strategy_of_dtype(*edo::parse_dtype("f8e4m3")).value(), "fp8");
  EXPECT_FALSE(strategy_of_dtype(edo::DType::Int8).has_value());
  EXPECT_EQ(storage_dtype(FormatKind::FP8), edo::DType::Fp8E4M3);
  EXPECT_EQ(storage_dtype(FormatKind::INT4), edo::DType::Uint8);
  for (edo::DType t : edo::kAllDTypes) EXPECT_EQ(edo::parse_dtype(edo::dtype_name(t)), t);
  for (const char* s : {"fp32", "fp16", "bf16"})
    EXPECT_EQ(strategy_of_dtype(*edo::parse_dtype(s)).value(), s) << "a dtype's strategy has the dtype's name";
}
