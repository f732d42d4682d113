// Offload (strategy "offload"): the full fp32 table stays in host memory (pinned and mapped,
// read by the GPU over the host link, or CUDA managed memory); a device cache holds C rows.
//
// policy=static: the C rows with the highest access counts are cached once at encode time;
//   slot : V int32, the cache slot of a row or -1 (device)
//   device bytes = V*4 + C*D*4
// policy=lru: a set-associative cache, filled on the device batch by batch (edo/kernels/lru.h
//   is the policy; both backends implement it exactly):
//   tag  : C int64, the row held by each slot or -1; time : C uint32, the batch that last used it
//   ways W = min(8, C) per set, sets S = C / W, row r lives in set mul_high(mix64(r), S)
//   device bytes = C*D*4 + C*12 (+ a per-batch workspace of 32 B per index on the GPU)
// host bytes = V*D*4 (both policies). A row not in the cache is read from host memory.
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

inline constexpr std::uint32_t kLruWays = 8;

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

// The set of a row in the LRU cache (sets >= 1).
EDO_HD std::uint64_t lru_set_of(std::int64_t row, std::uint64_t sets) { return mul_high(mix64(static_cast<std::uint64_t>(row)), sets); }

// The slot holding `row`, or -1: a search of the row's set.
EDO_HD std::int64_t lru_find(const std::int64_t* tag, std::uint64_t sets, std::uint32_t ways, std::int64_t row) {
  const std::uint64_t base = lru_set_of(row, sets) * ways;
  for (std::uint32_t w = 0; w < ways; ++w)
    if (tag[base + w] == row) return static_cast<std::int64_t>(base + w);
  return -1;
}

}  // namespace edo::kernels
