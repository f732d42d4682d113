// Exact per-row counts: dense uint32 with 64-bit overflow words, dirty blocks, sparse form.
#include <algorithm>

#include "internal.h"

namespace edo::stats::detail {

void ExactCounts::start_counting() {
  if (rows_ <= kAlwaysDenseRows) {
    make_dense();
    return;
  }
  if (dense_ || hashed_) return;
  hashed_ = true;
}

void ExactCounts::hash_grow() {
  std::vector<uint64_t> keys(std::max<size_t>(64, hkeys_.size() * 2), 0);
  std::vector<uint32_t> vals(keys.size(), 0);
  const uint64_t mask = keys.size() - 1;
  for (size_t i = 0; i < hkeys_.size(); ++i) {
    if (!hkeys_[i]) continue;
    uint64_t s = mix64(hkeys_[i] - 1) & mask;
    while (keys[s]) s = (s + 1) & mask;
    keys[s] = hkeys_[i];
    vals[s] = hvals_[i];
  }
  hkeys_ = std::move(keys);
  hvals_ = std::move(vals);
}

// Inlined into the hashed loop (a call per index was a tenth of its time).
__attribute__((always_inline)) inline size_t ExactCounts::hash_slot(uint64_t row) {
  if ((hsize_ + 1) * 4 > hkeys_.size() * 3) hash_grow();
  const uint64_t mask = hkeys_.size() - 1;
  uint64_t s = mix64(row) & mask;
  while (hkeys_[s] != row + 1) {
    if (!hkeys_[s]) {
      hkeys_[s] = row + 1;
      ++hsize_;
      break;
    }
    s = (s + 1) & mask;
  }
  return static_cast<size_t>(s);
}

std::vector<std::pair<uint64_t, uint64_t>> ExactCounts::hashed_sorted() const {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  v.reserve(hsize_);
  for (size_t i = 0; i < hkeys_.size(); ++i) {
    if (!hkeys_[i]) continue;
    const uint64_t r = hkeys_[i] - 1;
    uint64_t c = hvals_[i];
    if (!carry_.empty()) {
      auto it = carry_.find(r);
      if (it != carry_.end()) c += it->second;
    }
    if (c) v.emplace_back(r, c);
  }
  sort_by_row(v, rows_);
  return v;
}

void ExactCounts::densify_from_hashed() { make_dense(); }

void ExactCounts::make_dense() {
  if (dense_) return;
  auto sp = hashed_ ? hashed_sorted() : std::move(sparse_);
  hashed_ = false;
  hkeys_ = {};
  hvals_ = {};
  hsize_ = 0;
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

// The hashed form's loop: one probe per index (the table holds only the rows read). It turns
// dense, and hands the rest of the batch to the dense loop, once more than rows/kDenseShare
// rows were read.
// Its probes are cache misses as the dense loop's increments are (a table that read 100,000
// rows holds a 3 MB table the job's traffic evicts): the home slot of the row a few indices
// ahead is prefetched, key and count (a slot moved by a growth is a wasted prefetch, no more).
// A table of at most kPrefetchSlots slots (192 KiB of keys and counts) stays in L2 between
// batches: its probes hit, and the prefetch's second hash is pure cost (a repeated call of
// 768 ids: ~2 ns of ~8 per index).
constexpr size_t kPrefetchSlots = size_t{1} << 14;

template <class I>
uint64_t ExactCounts::add_hashed(const I* idx, size_t n) {
  uint64_t oor = 0;
  const bool prefetch = hkeys_.size() > kPrefetchSlots;
  for (size_t i = 0; i < n; ++i) {
    if (prefetch && i + kPrefetchAhead < n) {
      const uint64_t s = mix64(static_cast<uint64_t>(static_cast<int64_t>(idx[i + kPrefetchAhead]))) & (hkeys_.size() - 1);
      __builtin_prefetch(hkeys_.data() + s, 1, 3);
      __builtin_prefetch(hvals_.data() + s, 1, 3);
    }
    const uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(idx[i]));
    if (__builtin_expect(r >= rows_, 0)) {
      ++oor;
      continue;
    }
    if (++hvals_[hash_slot(r)] == 0) carry_[r] += uint64_t{1} << 32;
    if (__builtin_expect(hsize_ * kDenseShare > rows_, 0)) {
      densify_from_hashed();
      return oor + add_impl(idx + i + 1, n - i - 1);
    }
  }
  return oor;
}

uint64_t ExactCounts::add_batch(const int64_t* idx, size_t n) { return dense_ ? add_impl(idx, n) : add_hashed(idx, n); }
uint64_t ExactCounts::add_batch(const int32_t* idx, size_t n) { return dense_ ? add_impl(idx, n) : add_hashed(idx, n); }

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
  if (hashed_) {
    if (hkeys_.empty()) return 0;
    const uint64_t mask = hkeys_.size() - 1;
    for (uint64_t s = mix64(row) & mask; hkeys_[s]; s = (s + 1) & mask) {
      if (hkeys_[s] != row + 1) continue;
      uint64_t v = hvals_[s];
      if (!carry_.empty()) {
        auto it = carry_.find(row);
        if (it != carry_.end()) v += it->second;
      }
      return v;
    }
    return 0;
  }
  auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(row, uint64_t{0}));
  return (it != sparse_.end() && it->first == row) ? it->second : 0;
}

uint64_t ExactCounts::nonzero() const {
  if (!dense_ && !hashed_) return sparse_.size();
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
  if (hashed_) {
    // The rows keep their slots (so the table's size stays the rows read since the start);
    // at most rows/kDenseShare are nonzero, so the sparse form is the smaller one.
    out.sparse_ = hashed_sorted();
    std::fill(hvals_.begin(), hvals_.end(), 0u);
    carry_.clear();
    return;
  }
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
  if (hashed_) {
    o.for_each_nonzero([&](uint64_t r, uint64_t c) {
      uint32_t& v = hvals_[hash_slot(r)];
      const uint64_t sum = uint64_t{v} + c;
      v = static_cast<uint32_t>(sum);
      if (sum >> 32) carry_[r] += sum >> 32 << 32;
    });
    if (hsize_ * kDenseShare > rows_) densify_from_hashed();
    return;
  }
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
  } else if (hashed_) {
    std::fill(hvals_.begin(), hvals_.end(), 0u);
    carry_.clear();
  } else {
    sparse_.clear();
  }
}

}  // namespace edo::stats::detail
