// Pruning of never-read rows (strategy "pruned"): rows whose access count is zero are
// dropped; a remap table gives each original row its slot in the compacted fp32 table or -1.
//   remap   : V int32 (slot or -1)
//   rows    : kept x D fp32
//   dflt    : D fp32, the row returned for a pruned (missed) row: zeros by default, or the
//             count-weighted mean of the kept rows with default=mean
// device bytes = V*4 + kept*D*4 + D*4. Needs retraining when a pruned row is read later.
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

struct PrunedView {
  const std::int32_t* remap;
  const float* rows;
  const float* dflt;
  std::uint32_t dim;
};

EDO_HD const float* pruned_row(const PrunedView& v, std::int64_t row) {
  const std::int32_t s = v.remap[row];
  return s >= 0 ? v.rows + static_cast<std::uint64_t>(s) * v.dim : v.dflt;
}

EDO_HD float pruned_value(const PrunedView& v, std::int64_t row, std::uint32_t d) { return pruned_row(v, row)[d]; }

}  // namespace edo::kernels
