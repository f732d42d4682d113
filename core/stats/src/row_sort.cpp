// sort_by_row(): (row, count) pairs of distinct rows into row order, by LSD radix sort on the
// bits a row below `rows` can have. A tracer's hashed counts hand ~100,000 rows to every delta
// (ExactCounts::hashed_sorted()): comparison sorting them was a tenth of the tracer thread's
// time on bench_trace_overhead's 1 M-row table; two or three counting passes are not.
#include <algorithm>

#include "internal.h"

namespace edo::stats::detail {

namespace {
constexpr unsigned kDigitBits = 11;
constexpr size_t kBuckets = size_t{1} << kDigitBits;
// Below this many pairs a comparison sort is the cheaper (no 2^11-entry histograms to clear).
constexpr size_t kRadixFrom = 4096;
}  // namespace

void sort_by_row(std::vector<std::pair<uint64_t, uint64_t>>& v, uint64_t rows) {
  if (v.size() < kRadixFrom) {
    std::sort(v.begin(), v.end());
    return;
  }
  const unsigned bits = rows > 1 ? 64u - static_cast<unsigned>(__builtin_clzll(rows - 1)) : 1u;
  std::vector<std::pair<uint64_t, uint64_t>> tmp(v.size());
  std::vector<size_t> start(kBuckets);
  // Each pass is stable, so after the last one (most significant digit) the rows are in order.
  for (unsigned shift = 0; shift < bits; shift += kDigitBits) {
    std::fill(start.begin(), start.end(), size_t{0});
    for (const auto& p : v) ++start[(p.first >> shift) & (kBuckets - 1)];
    size_t at = 0;
    for (size_t& s : start) {
      const size_t n = s;
      s = at;
      at += n;
    }
    for (const auto& p : v) tmp[start[(p.first >> shift) & (kBuckets - 1)]++] = p;
    v.swap(tmp);
  }
}

}  // namespace edo::stats::detail
