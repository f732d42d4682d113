// Offload (strategy "offload"): the full fp32 table stays in host memory (pinned, read over
// PCIe by the GPU, or CUDA managed memory); a device cache holds C hot rows.
//   slot  : V int32, the cache slot of a row or -1 (device)
//   cache : C x D fp32 (device)
//   host  : V x D fp32 (host)
// policy=static: the C rows with the highest access counts are cached once at encode time.
// policy=lru:    rows missed by a batch are brought in after it, evicting the least recently
//                used rows (batch-granular LRU, as FBGEMM's LRU cache).
// device bytes = V*4 + C*D*4; host bytes = V*D*4.
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

struct OffloadView {
  const std::int32_t* slot;
  const float* cache;
  const float* host;
  std::uint32_t dim;
};

EDO_HD const float* offload_row(const OffloadView& v, std::int64_t row) {
  const std::int32_t s = v.slot[row];
  return s >= 0 ? v.cache + static_cast<std::uint64_t>(s) * v.dim : v.host + static_cast<std::uint64_t>(row) * v.dim;
}

EDO_HD float offload_value(const OffloadView& v, std::int64_t row, std::uint32_t d) { return offload_row(v, row)[d]; }

}  // namespace edo::kernels
