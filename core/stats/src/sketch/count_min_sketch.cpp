// Count-min sketch (Cormode & Muthukrishnan): depth rows of width counters, point estimate
// is the minimum over rows; merge adds cell-wise.
#include <algorithm>

#include "internal.h"

namespace edo::stats::detail {

void CountMinSketch::reset(uint32_t width_pow2, uint32_t depth) {
  uint32_t w = 1;
  while (w < width_pow2 && w < (1u << 30)) w <<= 1;
  width_ = w;
  depth_ = std::max<uint32_t>(1, std::min<uint32_t>(depth, 16));
  cells_.assign(uint64_t{width_} * depth_, 0);
}

// Double hashing: cell of row i is (h1 + i * h2) mod width, h2 odd.
uint64_t CountMinSketch::add(uint64_t row, uint64_t c) {
  uint64_t h = mix64(row);
  uint64_t h1 = h, h2 = (h >> 32) | 1;
  const uint64_t mask = width_ - 1;
  uint64_t m = UINT64_MAX;
  for (uint32_t i = 0; i < depth_; ++i) {
    uint64_t& cell = cells_[uint64_t{i} * width_ + ((h1 + i * h2) & mask)];
    cell += c;
    m = std::min(m, cell);
  }
  return m;
}

void CountMinSketch::add_batch(const uint64_t* rows, size_t n, uint64_t* estimates) {
  constexpr size_t kAhead = 16;  // rows ahead: ~16 x depth misses in flight
  const uint64_t mask = width_ - 1;
  uint64_t* cells = cells_.data();
  auto prefetch = [&](uint64_t row) {
    const uint64_t h = mix64(row);
    const uint64_t h1 = h, h2 = (h >> 32) | 1;
    for (uint32_t i = 0; i < depth_; ++i) __builtin_prefetch(cells + uint64_t{i} * width_ + ((h1 + i * h2) & mask), 1, 3);
  };
  for (size_t j = 0; j < std::min(n, kAhead); ++j) prefetch(rows[j]);
  for (size_t j = 0; j < n; ++j) {
    if (j + kAhead < n) prefetch(rows[j + kAhead]);
    estimates[j] = add(rows[j]);
  }
}

uint64_t CountMinSketch::estimate(uint64_t row) const {
  if (cells_.empty()) return 0;
  uint64_t h = mix64(row);
  uint64_t h1 = h, h2 = (h >> 32) | 1;
  const uint64_t mask = width_ - 1;
  uint64_t m = UINT64_MAX;
  for (uint32_t i = 0; i < depth_; ++i)
    m = std::min(m, cells_[uint64_t{i} * width_ + ((h1 + i * h2) & mask)]);
  return m;
}

bool CountMinSketch::merge(const CountMinSketch& o) {
  if (o.width_ != width_ || o.depth_ != depth_) return false;
  for (size_t i = 0; i < cells_.size(); ++i) cells_[i] += o.cells_[i];
  return true;
}

void CountMinSketch::clear() { std::fill(cells_.begin(), cells_.end(), 0); }

bool CountMinSketch::empty() const {
  return std::all_of(cells_.begin(), cells_.end(), [](uint64_t v) { return v == 0; });
}

}  // namespace edo::stats::detail
