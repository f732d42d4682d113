// The row hashes of the statistics engine, written once for the CPU and for CUDA: the GPU
// counting path of the tracer (profiler/capture/src/device/) must place a row in the same
// count-min cells, HyperLogLog register and SHARDS sample as the CPU path, so that the two
// aggregates merge. Plain C++17 and CUDA; no standard library beyond <cstdint>.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define EDO_ROW_HASH_FN __host__ __device__ __forceinline__
#else
#define EDO_ROW_HASH_FN inline
#endif

namespace edo::stats::hash {

// 64-bit finaliser (murmur3 fmix64): a cheap, well-mixing hash of a row id.
EDO_ROW_HASH_FN uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// ---- SHARDS spatial sampling: a row is sampled iff (sample_hash(row) & mask) < threshold ----
constexpr uint32_t kSampleModBits = 24;
constexpr uint64_t kSampleMask = (uint64_t{1} << kSampleModBits) - 1;
// One multiply (Fibonacci hashing), rotated so that the low kSampleModBits bits (the sample
// test) are the product's top bits, the well-mixed ones; bits 40..51 are product bits 16..27.
EDO_ROW_HASH_FN uint64_t sample_hash(uint64_t r) {
  const uint64_t x = (r ^ 0x5bd1e9955bd1e995ULL) * 0x9e3779b97f4a7c15ULL;
  return (x >> 40) | (x << 24);
}
EDO_ROW_HASH_FN bool sampled(uint64_t r, uint64_t threshold) { return (sample_hash(r) & kSampleMask) < threshold; }

// ---- count-min sketch: cell of row r in sketch row i is (h1 + i * h2) mod width ------------
EDO_ROW_HASH_FN uint64_t cms_cell(uint64_t r, uint32_t i, uint64_t width_mask) {
  const uint64_t h = mix64(r);
  return (h + i * ((h >> 32) | 1)) & width_mask;
}

// ---- HyperLogLog with 2^p registers: register index and rank of row r -----------------------
EDO_ROW_HASH_FN uint32_t hll_index(uint64_t r, uint32_t p) {
  return static_cast<uint32_t>(mix64(r ^ 0x9e3779b97f4a7c15ULL) >> (64 - p));
}
EDO_ROW_HASH_FN uint32_t hll_rank(uint64_t r, uint32_t p) {
  const uint64_t w = (mix64(r ^ 0x9e3779b97f4a7c15ULL) << p) | (uint64_t{1} << (p - 1));
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__clzll(static_cast<long long>(w))) + 1;
#else
  return static_cast<uint32_t>(__builtin_clzll(w)) + 1;
#endif
}

}  // namespace edo::stats::hash
