// The CUDA backend's row readers of PQ, multi-hash, QR, pruned and offload
// (kernels/cuda/element_rows.h, offload_rows.h) and its LRU batch step, on the CPU: the same
// code the device runs, with the primitives' host definitions. The warp-per-bag kernel reads
// row j's columns as F::load4/load1(meta of row j, column); here every row's meta and columns
// must give the table's decode bit for bit (so the kernel's sums are the in-order sums of the
// decoded rows the fp64 reference bounds). The LRU step (probe, sort, insert, fill), run thread
// by thread, must leave the cache edo/kernels/lru.h's LruCache leaves, batch after batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common.h"
#include "cuda/element_rows.h"
#include "cuda/offload_rows.h"

using namespace edo::kernels;
using namespace edo::kernels::test;
namespace cd = edo::kernels::cuda::detail;

namespace {

auto host_arrays(const FormatData& f) {
  return [&f](const char* name) -> const void* { return f.array(name).data; };
}

// Every row (up to 400) through meta/column/load4/load1 equals the decode; the lane computing
// a row's meta varies as in the kernel (row j of 32 by lane j).
template <class F>
void expect_reads_decode(const F& f, bool vec, const std::vector<float>& dec, std::uint64_t rows, std::uint32_t dim) {
  const std::uint64_t n = std::min<std::uint64_t>(rows, 400);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t r = i * (rows / n);
    const int lane = static_cast<int>(i % 32);
    const typename F::Meta m = f.meta(static_cast<std::int64_t>(r), lane, true);
    for (std::uint32_t col = 0; col < dim; ++col) {
      ASSERT_EQ(f.load1(m, f.column(col)), dec[r * dim + col]) << "load1 row " << r << " col " << col;
      if (vec && col % 4 == 0) {
        const cd::Float4 x = f.load4(m, f.column(col));
        const float got[4] = {x.x, x.y, x.z, x.w};
        for (int k = 0; k < 4; ++k) ASSERT_EQ(got[k], dec[r * dim + col + k]) << "load4 row " << r << " col " << col + k;
      }
    }
  }
}

}  // namespace

TEST(CudaElementRows, EveryFormatReadsItsDecode) {
  struct Case {
    const char* spec;
    std::uint32_t dim;
  };
  std::vector<Case> cases;
  for (std::uint32_t D : {128u, 64u, 40u, 24u})
    for (const char* s : {"pq", "pq:m=8", "pq:m=4:k=16", "multihash:buckets=997", "multihash:buckets=500:k=4:mode=concat", "qr:m=8",
                          "qr:m=5:op=add", "pruned", "pruned:default=mean"})
      cases.push_back({s, D});
  cases.push_back({"pq:m=16", 128});  // the 16-byte code load
  cases.push_back({"pq:m=32", 128});  // codes read per column (m > 16)
  cases.push_back({"multihash:buckets=300:k=16", 32});
  int vec_cases = 0, scalar_cases = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.spec) + " dim " + std::to_string(c.dim));
    const std::uint64_t R = 500 + c.dim;
    const auto w = weights(R, c.dim, 300 + c.dim);
    std::vector<std::uint64_t> counts(R, 1);
    for (std::uint64_t r = 0; r < R; r += 3) counts[r] = 0;  // pruned: a third of the rows go
    auto t = enc(c.spec, w, R, c.dim, counts.data());
    const auto dec = decode_all(*t);
    const FormatData f = t->format_data();
    bool vec = false;
    switch (f.kind) {
      case FormatKind::PQ: {
        const PqView v = cd::pq_view(f, host_arrays(f));
        vec = cd::pq_vec(v);
        if (v.m <= 16) {
          expect_reads_decode(cd::PqF<false, true>{v}, vec, dec, R, c.dim);
          expect_reads_decode(cd::PqF<true, true>{v}, vec, dec, R, c.dim);
        } else {
          expect_reads_decode(cd::PqF<false, false>{v}, vec, dec, R, c.dim);
          expect_reads_decode(cd::PqF<true, false>{v}, vec, dec, R, c.dim);
        }
        break;
      }
      case FormatKind::MultiHash: {
        const MultiHashView v = cd::multihash_view(f, host_arrays(f));
        vec = cd::multihash_vec(v);
        expect_reads_decode(cd::MhF{v}, vec, dec, R, c.dim);
        break;
      }
      case FormatKind::QR: {
        const QrView v = cd::qr_view(f, host_arrays(f));
        vec = cd::qr_vec(v);
        expect_reads_decode(cd::QrF{v}, vec, dec, R, c.dim);
        break;
      }
      case FormatKind::Pruned: {
        const PrunedView v = cd::pruned_view(f, host_arrays(f));
        vec = cd::pruned_vec(v);
        expect_reads_decode(cd::PrunedF{v}, vec, dec, R, c.dim);
        break;
      }
      default: FAIL() << "unexpected format";
    }
    (vec ? vec_cases : scalar_cases) += 1;
  }
  EXPECT_GT(vec_cases, 20);
  EXPECT_GT(scalar_cases, 3);  // dsub 5 and 3 (pq:m=8 at D = 40, 24), concat widths 10 and 6
}

// Static offload: the slot map sends cached rows to the cache and the others to host memory;
// the first column pass counts hits.
TEST(CudaElementRows, StaticOffloadReadsCacheOrHostAndCounts) {
  const std::uint64_t R = 2000;
  const std::uint32_t D = 36;
  const auto w = weights(R, D, 5);
  std::vector<std::uint64_t> counts(R, 0);
  for (std::uint64_t r = 0; r < R; r += 3) counts[r] = 2 + r % 11;  // the 200 most read are cached
  auto t = enc("offload:cache=0.1", w, R, D, counts.data());
  const auto dec = decode_all(*t);
  const FormatData f = t->format_data();
  cd::Counters c{};
  const cd::StaticF sf{static_cast<const std::int32_t*>(f.array("slot").data), static_cast<const float*>(f.array("cache").data),
                       static_cast<const float*>(f.array("host").data), D, &c};
  expect_reads_decode(sf, true, dec, R, D);
  const auto* slot = static_cast<const std::int32_t*>(f.array("slot").data);
  std::uint64_t cached = 0;
  const std::uint64_t n = std::min<std::uint64_t>(R, 400);
  for (std::uint64_t i = 0; i < n; ++i) cached += slot[i * (R / n)] >= 0 ? 1 : 0;
  EXPECT_EQ(c.accesses, n);
  EXPECT_EQ(c.hits, cached);
  EXPECT_GT(cached, 0u);
  (void)sf.meta(0, 0, false);  // later column passes do not count
  EXPECT_EQ(c.accesses, n);
}

// The device's LRU batch step, thread by thread, with a sort of the keys as cub's (ascending on
// the low lru_key_bits() bits), against LruCache (the CPU backend's offload table) batch after
// batch: the same hits, tags and times; every lookup reads its row from the cache or host memory.
TEST(CudaElementRows, LruBatchStepFollowsThePolicy) {
  const std::uint64_t R = 5000;
  const std::uint32_t D = 20;
  const auto w = weights(R, D, 6);
  for (const char* spec : {"offload:cache=0.05:policy=lru", "offload:cache=0.0008:policy=lru", "offload:cache=0.3:policy=lru"}) {
    SCOPED_TRACE(spec);
    auto cpu = enc(spec, w, R, D);
    const FormatData f0 = cpu->format_data();
    const auto C = static_cast<std::uint64_t>(f0.scalar("cache_rows"));
    const auto sets = static_cast<std::uint64_t>(f0.scalar("sets"));
    const auto ways = static_cast<std::uint32_t>(f0.scalar("ways"));
    auto now = static_cast<std::uint32_t>(f0.scalar("batches"));
    ASSERT_GT(sets, 0u);
    // the device's arrays, uploaded from the encoded (cold) table
    std::vector<std::int64_t> tag(static_cast<const std::int64_t*>(f0.array("tag").data), static_cast<const std::int64_t*>(f0.array("tag").data) + C);
    std::vector<std::uint32_t> time(static_cast<const std::uint32_t*>(f0.array("time").data),
                                    static_cast<const std::uint32_t*>(f0.array("time").data) + C);
    std::vector<float> cache(C * D, 0.f);
    const auto* host = static_cast<const float*>(f0.array("host").data);
    const int key_bits = cd::lru_key_bits(sets);
    const std::uint64_t mask = key_bits >= 64 ? ~0ull : (1ull << key_bits) - 1;
    cd::Counters c{};
    const auto batches = zipf_batches(R, 1.05, 17, 25, 3000);
    std::vector<float> a(3000 * D), b(3000 * D);
    for (const auto& bt : batches) {
      const auto n = static_cast<std::int64_t>(bt.size());
      ++now;
      std::vector<std::uint64_t> keys(bt.size(), cd::kNoKey), sorted;
      std::vector<cd::Fill> fills(bt.size());
      c.misses = c.fill_count = 0;
      for (std::int64_t i = 0; i < n; ++i) cd::lru_probe_thread(i, bt.data(), R, tag.data(), time.data(), sets, ways, now, keys.data(), &c);
      sorted = keys;
      std::stable_sort(sorted.begin(), sorted.end(), [&](std::uint64_t x, std::uint64_t y) { return (x & mask) < (y & mask); });
      for (std::int64_t i = 0; i < n; ++i) cd::lru_insert_thread(i, sorted.data(), n, tag.data(), time.data(), ways, now, fills.data(), &c);
      for (unsigned int k = 0; k < c.fill_count; ++k)
        for (int lane = 0; lane < 32; ++lane) cd::lru_fill_lane(k, lane, fills.data(), cache.data(), host, D);
      c.fills += c.fill_count;
      const cd::LruF lf{tag.data(), sets, ways, cache.data(), host, D};
      for (std::int64_t i = 0; i < n; ++i) {
        const cd::LruF::Meta m = lf.meta(bt[static_cast<std::size_t>(i)], 0, true);
        for (std::uint32_t d = 0; d < D; ++d) b[static_cast<std::size_t>(i) * D + d] = lf.load1(m, lf.column(d));
      }
      cpu->gather(bt.data(), n, a.data());
      ASSERT_EQ(a, b);
      const FormatData f = cpu->format_data();
      ASSERT_EQ(tag, std::vector<std::int64_t>(static_cast<const std::int64_t*>(f.array("tag").data),
                                               static_cast<const std::int64_t*>(f.array("tag").data) + C));
      ASSERT_EQ(time, std::vector<std::uint32_t>(static_cast<const std::uint32_t*>(f.array("time").data),
                                                 static_cast<const std::uint32_t*>(f.array("time").data) + C));
      // every cached row's cache copy is its host row
      for (std::uint64_t s = 0; s < C; ++s) {
        if (tag[s] < 0) continue;
        for (std::uint32_t d = 0; d < D; ++d) ASSERT_EQ(cache[s * D + d], host[static_cast<std::uint64_t>(tag[s]) * D + d]) << "slot " << s;
      }
    }
    EXPECT_DOUBLE_EQ(static_cast<double>(c.hits) / static_cast<double>(c.accesses), cpu->hit_rate());
    EXPECT_GT(c.hits, 0u);
    EXPECT_GT(c.fills, 0u);
  }
}
