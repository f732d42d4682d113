// The tracer's counting kernel (see count_kernel.h), compiled by nvcc into a fatbin that
// libedo_trace.so embeds and launches through the driver API (no CUDA runtime in the library).
// Launched on the caller's stream after its lookup, 256 threads per block, grid-stride.
#include "count_kernel.h"

using namespace edo::capture::device;

extern "C" __global__ void __launch_bounds__(256) edo_count(CountParams p) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  const unsigned lane = threadIdx.x & 31;
  // `base` is the same for a whole block, so every lane of a warp takes every iteration and
  // the warp-wide intrinsics below see all 32 lanes.
  for (uint64_t base = uint64_t(blockIdx.x) * blockDim.x; base < p.n; base += stride) {
    const uint64_t i = base + threadIdx.x;
    const bool in = i < p.n;
    const uint64_t row = in ? row_at(p, i) : UINT64_MAX;
    if (in && p.region && p.window_n && i >= p.window_begin && i - p.window_begin < p.window_n)
      region_window(p)[i - p.window_begin] = row;
    if (in && row == UINT64_MAX && p.region) atomic_add64(&reinterpret_cast<RegionHeader*>(p.region)->out_of_range, 1);
    const bool valid = in && row != UINT64_MAX;
    if (p.counts) {
      // Lanes reading the same row (skewed traces: many) add once, by their leader; each lane
      // then knows its own running count, as if they had added one after the other.
      const unsigned mask = __ballot_sync(0xffffffffu, valid);
      if (valid) {
        const unsigned peers = __match_any_sync(mask, row);
        const int leader = __ffs(peers) - 1;
        const unsigned rank = __popc(peers & ((1u << lane) - 1));
        uint32_t old = 0;
        if (int(lane) == leader) {
          old = atomicAdd(reinterpret_cast<uint32_t*>(p.counts) + row, __popc(peers));
          mark_dirty(p, row);
        }
        old = __shfl_sync(peers, old, leader);
        after_count(p, i, row, old + rank + 1);
      }
    } else if (valid) {
      after_count(p, i, row, count_sketch(p, row));
    }
  }
}

// The dirty bitmap taken by the tracer at a flush (on its own stream, before it copies the
// blocks the bitmap names): each word is read and cleared in one atomic step, so that a bit a
// counting kernel sets meanwhile is either in this copy or left for the next.
extern "C" __global__ void __launch_bounds__(256) edo_take_dirty(TakeDirtyParams p) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < p.words; i += stride) take_dirty_word(p, i);
}
