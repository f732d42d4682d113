// Internal to edo_kernels_cuda: the argument block of a lookup and the helpers every lookup
// kernel uses to read it. No CUDA includes: the same code compiles for the device (nvcc) and
// for the host, where the unit tests run kernel bodies thread by thread (a fake launch) to
// check their arithmetic and indexing on a machine without a GPU.
#pragma once

#include <cstdint>

#include "edo/kernels/formats/common.h"

namespace edo::kernels::cuda::detail {

// The first out-of-range index a kernel saw (first writer wins); the row reads as zeros.
struct ErrFlag {
  unsigned int set;
  long long index;
  long long position;
};

EDO_HD bool in_range(std::int64_t r, std::uint64_t rows, std::int64_t pos, ErrFlag* err) {
  if (static_cast<std::uint64_t>(r) < rows) return true;
#if defined(__CUDA_ARCH__)
  const bool first = atomicCAS(&err->set, 0u, 1u) == 0u;
#else
  const bool first = err->set == 0u;  // a fake launch runs one thread at a time
  err->set = 1u;
#endif
  if (first) {
    err->index = r;
    err->position = pos;
  }
  return false;
}

struct BagArgs {
  const std::int64_t* idx;
  const std::int64_t* offsets;  // nullptr: gather (bag i = index i)
  std::int64_t n_bags;
  const float* psw;
  int mean;
  float* out;
  std::uint32_t dim;
  std::uint64_t rows;
  ErrFlag* err;
};

EDO_HD void bag_bounds(const BagArgs& a, std::int64_t b, std::int64_t& s, std::int64_t& e) {
  if (a.offsets) {
    s = a.offsets[b];
    e = a.offsets[b + 1];
  } else {
    s = b;
    e = b + 1;
  }
}

// Threads per block of the warp-per-bag kernels (warp_bag.cuh, low rank).
inline constexpr int kWarpBagThreads = 256;

EDO_HD float bag_scale(const BagArgs& a, std::int64_t s, std::int64_t e) {
  return (a.mean && e > s) ? 1.f / static_cast<float>(e - s) : 1.f;
}

}  // namespace edo::kernels::cuda::detail
