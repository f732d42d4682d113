// Exact per-row counts: dense uint32 with 64-bit overflow words, dirty blocks, sparse form.
#include <algorithm>

#include "internal.h"

namespace edo::stats::detail {

void ExactCounts::make_dense() {
  if (dense_) return;
  auto sp = std::move(sparse_);
  sparse_.clear();
  sparse_.shrink_to_fit();
  lo_.assign(rows_, 0);
  dirty_.assign((rows_ + kBlockRows - 1) >> kBlockShift, 0);
  carry_.clear();
  headroom_ = UINT32_MAX;
  dense_ = true;
  for (const auto& [r, c] : sp) set_dense(r, c);
}

void ExactCounts::set_dense(uint64_t row, uint64_t v) {
  constexpr uint64_t kLoMask = (uint64_t{1} << 31) - 1;
  lo_[row] = static_cast<uint32_t>(v & kLoMask);
  if (v > kLoMask)
    carry_[row] = v - (v & kLoMask);
  else if (!carry_.empty())
    carry_.erase(row);
  dirty_[row >> kBlockShift] = 1;
  headroom_ = std::min<uint64_t>(headroom_, UINT32_MAX - kLoMask);
}

void ExactCounts::fold() {
  uint32_t max_lo = 0;
  for (size_t b = 0; b < dirty_.size(); ++b) {
    if (!dirty_[b]) continue;
    const uint64_t lo = uint64_t{b} << kBlockShift, hi = std::min(rows_, lo + kBlockRows);
    for (uint64_t r = lo; r < hi; ++r) {
      if (lo_[r] >= (1u << 31)) {
        carry_[r] += lo_[r];
        lo_[r] = 0;
      }
      max_lo = std::max(max_lo, lo_[r]);
    }
  }
  headroom_ = UINT32_MAX - max_lo;
}

// The hot loop. Per index: one compare (out of range, predicted), one increment and one
// store of a dirty byte into a small L1-resident array; no overflow test (see fold()).
constexpr size_t kPrefetchAhead = 16;

template <class I>
uint64_t ExactCounts::add_impl(const I* idx, size_t n) {
  uint32_t* __restrict c = lo_.data();
  uint8_t* __restrict d = dirty_.data();
  const uint64_t rows = rows_;
  uint64_t oor = 0;
  while (n > 0) {
    if (headroom_ == 0) fold();
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, headroom_));
    headroom_ -= take;
    for (size_t i = 0; i < take; ++i) {
      // Inside a traced job the job's own traffic evicts the counters between batches, so
      // most increments of a large table would wait on a cache miss: prefetch a few indices
      // ahead (a prefetch never faults; the address is formed as an integer so an index out
      // of range is not pointer arithmetic past the array).
      if (i + kPrefetchAhead < take)
        __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(c) +
                                                         static_cast<uintptr_t>(idx[i + kPrefetchAhead]) * sizeof(uint32_t)),
                           1, 3);
      const uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(idx[i]));
      if (__builtin_expect(r >= rows, 0)) {
        ++oor;
        continue;
      }
      d[r >> kBlockShift] = 1;
      ++c[r];
    }
    idx += take;
    n -= take;
  }
  return oor;
}

uint64_t ExactCounts::add_batch(const int64_t* idx, size_t n) { return add_impl(idx, n); }
uint64_t ExactCounts::add_batch(const int32_t* idx, size_t n) { return add_impl(idx, n); }

uint64_t ExactCounts::get(uint64_t row) const {
  if (row >= rows_) return 0;
  if (dense_) {
    uint64_t v = lo_[row];
    if (!carry_.empty()) {
      auto it = carry_.find(row);
      if (it != carry_.end()) v += it->second;
    }
    return v;
  }
  auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(row, uint64_t{0}));
  return (it != sparse_.end() && it->first == row) ? it->second : 0;
}

uint64_t ExactCounts::nonzero() const {
  if (!dense_) return sparse_.size();
  uint64_t nz = 0;
  for_each_nonzero([&](uint64_t, uint64_t) { ++nz; });
  return nz;
}

uint64_t ExactCounts::total() const {
  uint64_t t = 0;
  for_each_nonzero([&](uint64_t, uint64_t c) { t += c; });
  return t;
}

void ExactCounts::extract(ExactCounts& out) {
  out.reset(rows_);
  if (!dense_) {
    out.sparse_ = std::move(sparse_);
    sparse_.clear();
    return;
  }
  // Pass 1: how many nonzero rows (touched blocks only).
  uint64_t nz = 0;
  for (size_t b = 0; b < dirty_.size(); ++b) {
    if (!dirty_[b]) continue;
    uint64_t lo = uint64_t{b} << kBlockShift, hi = std::min(rows_, lo + kBlockRows);
    for (uint64_t r = lo; r < hi; ++r) nz += lo_[r] != 0;
  }
  nz += carry_.size();  // upper bound, only matters for the choice below
  if (nz * 16 > rows_ * 4) {
    // Dense is smaller: hand over the whole array and start a fresh one.
    out.dense_ = true;
    out.lo_ = std::move(lo_);
    out.dirty_ = std::move(dirty_);
    out.carry_ = std::move(carry_);
    out.headroom_ = headroom_;
    carry_.clear();
    headroom_ = UINT32_MAX;
    lo_.assign(rows_, 0);
    dirty_.assign(out.dirty_.size(), 0);
    return;
  }
  out.sparse_.reserve(nz);
  for (size_t b = 0; b < dirty_.size(); ++b) {
    if (!dirty_[b]) continue;
    dirty_[b] = 0;
    uint64_t lo = uint64_t{b} << kBlockShift, hi = std::min(rows_, lo + kBlockRows);
    for (uint64_t r = lo; r < hi; ++r) {
      const uint64_t v = get(r);
      if (v) out.sparse_.emplace_back(r, v);
      lo_[r] = 0;
    }
  }
  carry_.clear();
  headroom_ = UINT32_MAX;
}

void ExactCounts::densify_from_sparse() { make_dense(); }

void ExactCounts::merge(const ExactCounts& o) {
  if (dense_) {
    o.for_each_nonzero([&](uint64_t r, uint64_t c) { set_dense(r, get(r) + c); });
    return;
  }
  if (o.dense_) {
    make_dense();
    merge(o);
    return;
  }
  std::vector<std::pair<uint64_t, uint64_t>> m;
  m.reserve(sparse_.size() + o.sparse_.size());
  size_t i = 0, j = 0;
  while (i < sparse_.size() || j < o.sparse_.size()) {
    if (j == o.sparse_.size() || (i < sparse_.size() && sparse_[i].first < o.sparse_[j].first)) {
      m.push_back(sparse_[i++]);
    } else if (i == sparse_.size() || o.sparse_[j].first < sparse_[i].first) {
      m.push_back(o.sparse_[j++]);
    } else {
      m.emplace_back(sparse_[i].first, sparse_[i].second + o.sparse_[j].second);
      ++i;
      ++j;
    }
  }
  sparse_ = std::move(m);
  if (sparse_.size() * 16 > rows_ * 4) make_dense();
}

void ExactCounts::clear() {
  if (dense_) {
    for (size_t b = 0; b < dirty_.size(); ++b) {
      if (!dirty_[b]) continue;
      dirty_[b] = 0;
      uint64_t lo = uint64_t{b} << kBlockShift, hi = std::min(rows_, lo + kBlockRows);
      std::fill(lo_.begin() + lo, lo_.begin() + hi, 0u);
    }
    carry_.clear();
    headroom_ = UINT32_MAX;
  } else {
    sparse_.clear();
  }
}

}  // namespace edo::stats::detail
