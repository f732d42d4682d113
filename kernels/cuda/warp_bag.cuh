// Internal to edo_kernels_cuda: the warp-per-bag kernel of the formats whose row is not a
// plain array row (PQ, multi-hash, QR, pruned: element_rows.h; offload: offload_rows.h).
//
// A warp pools one bag (grid-stride over bags). 32 bag positions at a time, lane j loads
// index j, checks its range and works out that row's metadata once (PQ: the row; multi-hash:
// its k buckets; QR: quotient and remainder; pruned/offload: the remap/slot entry, a random
// 4-byte read that 32 lanes make in parallel). Then the warp walks the 32 rows in bag order:
// every lane decodes 4 consecutive columns (float4 path, when the format's arrays allow
// 16-byte loads) or 1 column (scalar path) of row j with the metadata broadcast by shuffle,
// and adds w * x to its accumulators. x is decoded exactly as the format's EDO_HD value
// function does, so the sum is the in-order sum of the decoded rows (bag_reference.h).
//
// A format F provides meta/column/load4/load1/block_init (element_rows.h describes them).
#pragma once

#include "cuda/prims.h"
#include "cuda/table_impl.cuh"

namespace edo::kernels::cuda::detail {

struct MetaWords {
  long long a, b;
};

// A union, not memcpy through memory: the metadata stays in registers.
template <class Meta>
__device__ __forceinline__ Meta shfl_meta(const Meta& m, int src) {
  static_assert(sizeof(Meta) <= sizeof(MetaWords), "Meta must fit in two 64-bit words");
  union U {
    Meta meta;
    int words[4];
  } u;
  u.meta = m;
#pragma unroll
  for (int i = 0; i < static_cast<int>((sizeof(Meta) + 3) / 4); ++i) u.words[i] = __shfl_sync(0xffffffffu, u.words[i], src);
  return u.meta;
}

template <class F, bool VEC>
__global__ void __launch_bounds__(kWarpBagThreads) warp_bag(F f, BagArgs a) {
  f.block_init();
  const int lane = threadIdx.x & 31;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (kWarpBagThreads / 32);
  constexpr std::uint32_t kCols = VEC ? 128 : 32;  // columns a warp covers per pass
  for (std::int64_t bag = static_cast<std::int64_t>(blockIdx.x) * (kWarpBagThreads / 32) + (threadIdx.x >> 5); bag < a.n_bags;
       bag += warps) {
    std::int64_t s, e;
    bag_bounds(a, bag, s, e);
    const float scale = bag_scale(a, s, e);
    for (std::uint32_t c0 = 0; c0 < a.dim; c0 += kCols) {
      const std::uint32_t col = c0 + static_cast<std::uint32_t>(lane) * (VEC ? 4u : 1u);
      const bool active = col < a.dim;
      const typename F::Col ci = f.column(active ? col : 0);
      Float4 acc{0.f, 0.f, 0.f, 0.f};
      for (std::int64_t p0 = s; p0 < e; p0 += 32) {
        const std::int64_t p = p0 + lane;
        typename F::Meta m{};
        float w = 0.f;
        int ok = 0;
        if (p < e) {
          const std::int64_t r = a.idx[p];
          if (in_range(r, a.rows, p, a.err)) {
            ok = 1;
            w = a.psw ? a.psw[p] : 1.f;
            m = f.meta(r, lane, c0 == 0);
          }
        }
        __syncwarp();
        const unsigned int valid = __ballot_sync(0xffffffffu, ok);
        const int n = static_cast<int>(e - p0 < 32 ? e - p0 : 32);
#pragma unroll 4
        for (int j = 0; j < n; ++j) {
          const float wj = __shfl_sync(0xffffffffu, w, j);
          const typename F::Meta mj = shfl_meta(m, j);
          if (active && ((valid >> j) & 1u)) {
            if constexpr (VEC) {
              fma4(wj, f.load4(mj, ci), acc);
            } else {
              acc.x = fma_f(wj, f.load1(mj, ci), acc.x);
            }
          }
        }
        __syncwarp();
      }
      if (active) {
        float* o = a.out + static_cast<std::uint64_t>(bag) * a.dim + col;
        if constexpr (VEC) store4(o, acc.x * scale, acc.y * scale, acc.z * scale, acc.w * scale);
        else *o = acc.x * scale;
      }
    }
  }
}

// Grid for the warp-per-bag kernel: enough warps for every bag, at most `max_blocks` blocks
// (a persistent grid when the format sets up shared memory per block).
inline int warp_bag_grid(std::int64_t n_bags, int max_blocks) {
  const std::int64_t need = (n_bags + kWarpBagThreads / 32 - 1) / (kWarpBagThreads / 32);
  return static_cast<int>(need < max_blocks ? need : max_blocks);
}

}  // namespace edo::kernels::cuda::detail
