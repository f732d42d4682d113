// Internal to edo_kernels_cuda: offload on the device, host and device code (the unit tests,
// tests/unit/kernels/cuda_element_rows_test.cpp, run these thread bodies on the CPU against
// edo/kernels/lru.h's LruCache and the formats' decode).
//
//   StaticF / LruF   how the warp-per-bag kernel (warp_bag.cuh) reads a row: slot map (static)
//                    or a search of the row's set (LRU), then the cache row or the host row.
//   lru_*_thread     the LRU policy's batch step as kernels (offload_table.cu launches them):
//                      probe    per access: search the row's set; a hit marks its slot with the
//                               batch number and counts; a miss appends (set << 32 | row)
//                      (sort)   the batch's miss keys, ascending (cub radix sort on the device)
//                      insert   per set, its distinct misses in row order take the slots the
//                               batch has not used, least recently used first (ties: lower way)
//                      fill     copies each inserted row from host memory into its slot
#pragma once

#include <cstdint>

#include "cuda/bag_args.h"
#include "cuda/prims.h"
#include "edo/kernels/formats/offload.h"

namespace edo::kernels::cuda::detail {

struct Counters {
  unsigned long long hits, accesses, fills;
  unsigned int misses;      // this batch's miss keys (probe)
  unsigned int fill_count;  // this batch's fills (insert)
};

// Counts an access from divergent code: on the device one atomic per group of active lanes.
EDO_HD void count_access(Counters* c, bool hit) {
#if defined(__CUDA_ARCH__)
  const unsigned int act = __activemask();
  const unsigned int h = __ballot_sync(act, hit);
  if ((threadIdx.x & 31) == __ffs(act) - 1) {
    atomicAdd(&c->hits, static_cast<unsigned long long>(__popc(h)));
    atomicAdd(&c->accesses, static_cast<unsigned long long>(__popc(act)));
  }
#else
  c->hits += hit ? 1 : 0;
  c->accesses += 1;
#endif
}

// Appends to a device array through a counter (one thread at a time on the host).
EDO_HD unsigned int claim(unsigned int* counter) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(counter, 1u);
#else
  return (*counter)++;
#endif
}

// ---- row readers -----------------------------------------------------------------------------------
// Host rows are read with plain loads: they are not read-only cacheable on every platform.
struct StaticF {
  const std::int32_t* slot;
  const float* cache;
  const float* host;
  std::uint32_t dim;
  Counters* counters;
  struct Meta {
    const float* row;
  };
  EDO_HD void block_init() {}
  EDO_HD Meta meta(std::int64_t row, int, bool first) const {
    const std::int32_t s = ldg_t(slot + row);
    if (first) count_access(counters, s >= 0);
    return {s >= 0 ? cache + static_cast<std::uint64_t>(s) * dim : host + static_cast<std::uint64_t>(row) * dim};
  }
  using Col = std::uint32_t;
  EDO_HD Col column(std::uint32_t col) const { return col; }
  EDO_HD Float4 load4(const Meta& m, std::uint32_t col) const { return ld4(m.row + col); }
  EDO_HD float load1(const Meta& m, std::uint32_t col) const { return m.row[col]; }
};

struct LruF {
  const std::int64_t* tag;
  std::uint64_t sets;
  std::uint32_t ways;
  const float* cache;
  const float* host;
  std::uint32_t dim;
  struct Meta {
    const float* row;
  };
  EDO_HD void block_init() {}
  EDO_HD Meta meta(std::int64_t row, int, bool) const {
    const std::int64_t s = sets ? lru_find(tag, sets, ways, row) : -1;
    return {s >= 0 ? cache + static_cast<std::uint64_t>(s) * dim : host + static_cast<std::uint64_t>(row) * dim};
  }
  using Col = std::uint32_t;
  EDO_HD Col column(std::uint32_t col) const { return col; }
  EDO_HD Float4 load4(const Meta& m, std::uint32_t col) const { return ld4(m.row + col); }
  EDO_HD float load1(const Meta& m, std::uint32_t col) const { return m.row[col]; }
};

// ---- the LRU batch step --------------------------------------------------------------------------
inline constexpr std::uint64_t kNoKey = ~0ull;  // the probe's unused key slots: sort last

// Bits the sort looks at: the row (32) and the set, so that every real key sorts before kNoKey.
EDO_HD int lru_key_bits(std::uint64_t sets) {
  int bits = 33;
  while ((std::uint64_t{1} << (bits - 32)) <= sets) ++bits;
  return bits;
}

struct Fill {
  std::int64_t row;
  std::int64_t slot;
};

// Access i of the batch (batch number `now`).
EDO_HD void lru_probe_thread(std::int64_t i, const std::int64_t* idx, std::uint64_t rows, std::int64_t* tag, std::uint32_t* time,
                             std::uint64_t sets, std::uint32_t ways, std::uint32_t now, std::uint64_t* keys, Counters* c) {
  const std::int64_t r = idx[i];
  if (static_cast<std::uint64_t>(r) >= rows) return;  // the lookup kernel reports it
  const std::int64_t s = lru_find(tag, sets, ways, r);
  if (s >= 0) time[s] = now;  // every writer writes the same value
  else keys[claim(&c->misses)] = lru_set_of(r, sets) << 32 | static_cast<std::uint64_t>(r);
  count_access(c, s >= 0);
}

// Sorted key i: the thread of a set's first key places the set's misses (the policy's step 2).
EDO_HD void lru_insert_thread(std::int64_t i, const std::uint64_t* keys, std::int64_t n, std::int64_t* tag, std::uint32_t* time,
                              std::uint32_t ways, std::uint32_t now, Fill* fills, Counters* c) {
  const std::uint64_t key = keys[i];
  if (key == kNoKey) return;
  const std::uint64_t set = key >> 32;
  if (i > 0 && keys[i - 1] >> 32 == set) return;  // not the set's first miss
  const std::uint64_t base = set * ways;
  std::uint32_t order[kLruWays], free = 0;
  for (std::uint32_t w = 0; w < ways; ++w) {
    if (time[base + w] >= now) continue;  // used by this batch
    // insertion by (time, way): ways arrive in increasing order, so ties keep the lower way first
    std::uint32_t at = free++;
    while (at > 0 && time[base + order[at - 1]] > time[base + w]) {
      order[at] = order[at - 1];
      --at;
    }
    order[at] = w;
  }
  std::uint32_t used = 0;
  for (std::int64_t j = i; j < n && keys[j] >> 32 == set && used < free; ++j) {
    if (j > i && keys[j] == keys[j - 1]) continue;  // the same row missed again
    const std::uint64_t slot = base + order[used++];
    const auto row = static_cast<std::int64_t>(keys[j] & 0xffffffffu);
    tag[slot] = row;
    time[slot] = now;
    fills[claim(&c->fill_count)] = Fill{row, static_cast<std::int64_t>(slot)};
  }
}

// Fill f, by the `lane` of its warp: host row -> cache slot.
EDO_HD void lru_fill_lane(unsigned int f, int lane, const Fill* fills, float* cache, const float* host, std::uint32_t dim) {
  const float* src = host + static_cast<std::uint64_t>(fills[f].row) * dim;
  float* dst = cache + static_cast<std::uint64_t>(fills[f].slot) * dim;
  if (dim % 4 == 0) {
    for (std::uint32_t d = 4u * static_cast<std::uint32_t>(lane); d < dim; d += 128) {
      const Float4 x = ld4(src + d);
      store4(dst + d, x.x, x.y, x.z, x.w);
    }
  } else {
    for (std::uint32_t d = static_cast<std::uint32_t>(lane); d < dim; d += 32) dst[d] = src[d];
  }
}

}  // namespace edo::kernels::cuda::detail
