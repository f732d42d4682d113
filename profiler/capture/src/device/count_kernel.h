// What the tracer's counting kernel does with one device index, written once for CUDA
// (count_kernels.cu, compiled by nvcc into the fatbin libedo_trace.so embeds) and for the CPU
// (the fake CUDA driver of the tests runs the same code). The rules are those of
// edo::stats::CountedSegment (table_stats.h): count the row, then add the reference to the
// batch's SHARDS sample if its row is sampled (thinned past kCountedHot), add count-min
// candidates in sketch mode, and copy the footprint window the host asked for.
#pragma once

#include <cstdint>

#include "edo/stats/row_hash.h"

#if defined(__CUDACC__)
#define EDO_COUNT_FN __host__ __device__ __forceinline__
#else
#define EDO_COUNT_FN inline
#endif

namespace edo::capture::device {

constexpr uint32_t kCountedHot = 64;    // = edo::stats::kCountedHot
constexpr uint32_t kCountedThin = 16;   // = edo::stats::kCountedThin
constexpr uint32_t kCandidate = UINT32_MAX;  // SampleEntry::pos of a count-min candidate

// One entry of a batch's sample (16 bytes).
struct SampleEntry {
  uint64_t row;
  uint32_t pos;    // index in the batch (kCandidate: a row that may be among the most read)
  uint32_t count;  // the row's count including this reference
};

// Written by the kernel at the start of a batch's region, followed by `cap` SampleEntry and
// the footprint window (window_n rows).
struct RegionHeader {
  uint32_t sampled;       // entries the batch wanted to write (> cap: the rest were dropped)
  uint32_t pad;
  uint64_t out_of_range;  // indices outside [0, rows)
};

// The kernel's one parameter (passed by value; the same layout on the host and the device).
struct CountParams {
  uint64_t indices;       // device pointer to n int32 or int64 indices
  uint64_t n;
  uint64_t rows;
  uint64_t counts;        // exact mode: uint32[rows], cumulative; else 0
  uint64_t cms;           // sketch mode: uint32[depth << width_log2], cumulative; else 0
  uint64_t hll;           // sketch mode: uint32[1 << hll_p] (largest rank seen)
  uint64_t region;        // RegionHeader + SampleEntry[cap] + uint64[window_n]; 0: no sample
  uint64_t window_begin;  // first batch index of the footprint window
  uint64_t threshold;     // sampled iff (sample_hash & mask) < threshold
  uint32_t index_bytes;   // 4 or 8
  uint32_t cap;
  uint32_t window_n;
  uint32_t cms_width_log2;
  uint32_t cms_depth;
  uint32_t hll_p;
  // Dirty bitmap of the counter words (`counts` or `cms`): bit b of word b/32 is set once a
  // word of block b (words [b << dirty_shift, (b + 1) << dirty_shift)) changed since the
  // tracer last took the bitmap (edo_take_dirty), so that a flush copies only those blocks.
  // 0: none.
  uint64_t dirty;
  uint32_t dirty_shift;
  uint32_t reserved;
};

// Counter words per dirty block: 1024 (4 KiB of counters, one bit of bitmap).
constexpr uint32_t kDirtyBlockShift = 10;

// edo_take_dirty's one parameter: out[i] = bitmap[i], bitmap[i] = 0 (atomically) for i < words.
struct TakeDirtyParams {
  uint64_t bitmap;
  uint64_t out;
  uint64_t words;
};

EDO_COUNT_FN SampleEntry* region_entries(const CountParams& p) {
  return reinterpret_cast<SampleEntry*>(p.region + sizeof(RegionHeader));
}
EDO_COUNT_FN uint64_t* region_window(const CountParams& p) {
  return reinterpret_cast<uint64_t*>(p.region + sizeof(RegionHeader) + uint64_t{p.cap} * sizeof(SampleEntry));
}

#if defined(__CUDA_ARCH__)
__device__ __forceinline__ uint32_t atomic_add(uint32_t* a, uint32_t v) { return atomicAdd(a, v); }
__device__ __forceinline__ void atomic_add64(uint64_t* a, uint64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(a), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void atomic_max(uint32_t* a, uint32_t v) { atomicMax(a, v); }
__device__ __forceinline__ uint32_t atomic_exchange(uint32_t* a, uint32_t v) { return atomicExch(a, v); }
__device__ __forceinline__ void atomic_or(uint32_t* a, uint32_t v) { atomicOr(a, v); }
__device__ __forceinline__ uint32_t load_relaxed(const uint32_t* a) { return *reinterpret_cast<const volatile uint32_t*>(a); }
__device__ __forceinline__ void fence() { __threadfence(); }
#else
inline uint32_t atomic_add(uint32_t* a, uint32_t v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline void atomic_add64(uint64_t* a, uint64_t v) { __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline void atomic_max(uint32_t* a, uint32_t v) {
  uint32_t cur = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (cur < v && !__atomic_compare_exchange_n(a, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
inline uint32_t atomic_exchange(uint32_t* a, uint32_t v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }
inline void atomic_or(uint32_t* a, uint32_t v) { __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }
inline uint32_t load_relaxed(const uint32_t* a) { return __atomic_load_n(a, __ATOMIC_RELAXED); }
inline void fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif

// After counter word `word` changed: its block is dirty. The fence orders the counter's update
// before the bit: a bit the tracer takes (edo_take_dirty, then the block's copy on the same
// stream) always covers the updates that set it. A bit already set is left alone (most
// updates: hot rows), which is safe for the same reason: the load comes after this update,
// so the tracer takes that bit, and copies the block, only after this update is visible.
EDO_COUNT_FN void mark_dirty(const CountParams& p, uint64_t word) {
  if (!p.dirty) return;
  const uint64_t block = word >> p.dirty_shift;
  uint32_t* w = reinterpret_cast<uint32_t*>(p.dirty) + (block >> 5);
  const uint32_t bit = 1u << (block & 31);
  fence();
  if ((load_relaxed(w) & bit) == 0) atomic_or(w, bit);
}

EDO_COUNT_FN void take_dirty_word(const TakeDirtyParams& p, uint64_t i) {
  reinterpret_cast<uint32_t*>(p.out)[i] = atomic_exchange(reinterpret_cast<uint32_t*>(p.bitmap) + i, 0u);
}

// The row of batch index i, or UINT64_MAX when it is outside the table.
EDO_COUNT_FN uint64_t row_at(const CountParams& p, uint64_t i) {
  const int64_t raw = p.index_bytes == 8 ? reinterpret_cast<const int64_t*>(p.indices)[i]
                                         : static_cast<int64_t>(reinterpret_cast<const int32_t*>(p.indices)[i]);
  const uint64_t r = static_cast<uint64_t>(raw);
  return r < p.rows ? r : UINT64_MAX;
}

EDO_COUNT_FN void append(const CountParams& p, uint64_t row, uint32_t pos, uint32_t count) {
  auto* h = reinterpret_cast<RegionHeader*>(p.region);
  const uint32_t slot = atomic_add(&h->sampled, 1u);
  if (slot < p.cap) region_entries(p)[slot] = SampleEntry{row, pos, count};
}

// After the row of index i was counted (`count`: its count including this reference).
EDO_COUNT_FN void after_count(const CountParams& p, uint64_t i, uint64_t row, uint32_t count) {
  if (!p.region) return;
  if (stats::hash::sampled(row, p.threshold) && (count <= kCountedHot || count % kCountedThin == 0))
    append(p, row, static_cast<uint32_t>(i), count);
  // Sketch mode: a row whose estimate reaches a power of two from 64 on may be a top row.
  if (!p.counts && count >= 64 && (count & (count - 1)) == 0) append(p, row, kCandidate, count);
}

// Sketch mode: count-min cells and the HyperLogLog register; returns the row's estimate.
EDO_COUNT_FN uint32_t count_sketch(const CountParams& p, uint64_t row) {
  auto* cells = reinterpret_cast<uint32_t*>(p.cms);
  const uint64_t width = uint64_t{1} << p.cms_width_log2;
  uint32_t est = UINT32_MAX;
  for (uint32_t d = 0; d < p.cms_depth; ++d) {
    const uint64_t cell = d * width + stats::hash::cms_cell(row, d, width - 1);
    const uint32_t c = atomic_add(&cells[cell], 1u) + 1;
    mark_dirty(p, cell);
    est = c < est ? c : est;
  }
  atomic_max(reinterpret_cast<uint32_t*>(p.hll) + stats::hash::hll_index(row, p.hll_p), stats::hash::hll_rank(row, p.hll_p));
  return est;
}

// Everything for index i, one thread, no cooperation (the CPU's version; the CUDA kernel
// aggregates equal rows of a warp first, with the same results).
EDO_COUNT_FN void count_index(const CountParams& p, uint64_t i) {
  const uint64_t row = row_at(p, i);
  if (p.region && p.window_n && i >= p.window_begin && i - p.window_begin < p.window_n)
    region_window(p)[i - p.window_begin] = row;
  if (row == UINT64_MAX) {
    if (p.region) atomic_add64(&reinterpret_cast<RegionHeader*>(p.region)->out_of_range, 1);
    return;
  }
  uint32_t count;
  if (p.counts) {
    count = atomic_add(reinterpret_cast<uint32_t*>(p.counts) + row, 1u) + 1;
    mark_dirty(p, row);
  } else {
    count = count_sketch(p, row);
  }
  after_count(p, i, row, count);
}

}  // namespace edo::capture::device
