// Che's approximation of an LRU cache from a table's read counts (Che, Tung and Wang, IEEE JSAC
// 2002): an LRU of k rows keeps a row read with probability p for the characteristic time T
// that solves sum_rows (1 - exp(-p T)) = k; each reference of that row hits, and the row is in
// the cache, with probability 1 - exp(-p T). Used where a hash-sampled stream missed a class
// of hot rows: the tuner's held-out replay (tuner/src/replay/cache_replay.cpp) and the union of ranks'
// curve (union_lru.cpp). Standard library only (edo_stats is linked into libedo_trace.so).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace edo::stats {

struct CheLru {
  static constexpr size_t kClasses = 65;  // std::bit_width(count): class c holds counts in [2^(c-1), 2^c)
  std::array<double, kClasses> rate;      // hit rate of each class's references; -1: not modelled
  double rows_held = 0.0;                 // rows of the modelled classes the cache holds
};

// count_rows: (read count, rows read about that often); lookups: sum of count x rows; k: the
// cache's rows. Only the classes above `above` are modelled (the others keep rate -1).
CheLru che_lru(const std::vector<std::pair<uint64_t, uint64_t>>& count_rows, double lookups, double k, size_t above);

}  // namespace edo::stats
