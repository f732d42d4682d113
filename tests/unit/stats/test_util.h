// Independent ground truth for the statistics tests.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <unordered_map>
#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::stats::testing {

inline std::vector<int64_t> zipf_trace(uint64_t rows, double alpha, size_t n, uint64_t seed) {
  std::vector<int64_t> v(n);
  ZipfGenerator g(rows, alpha, seed);
  g.fill(v.data(), n);
  return v;
}

inline std::map<int64_t, uint64_t> map_counts(const std::vector<int64_t>& t, uint64_t rows) {
  std::map<int64_t, uint64_t> m;
  for (int64_t x : t)
    if (x >= 0 && static_cast<uint64_t>(x) < rows) ++m[x];
  return m;
}

// Direct LRU cache simulation with a list and a hash map: hits of a cache of `size` rows.
inline uint64_t lru_sim_hits(const std::vector<int64_t>& t, size_t size) {
  std::list<int64_t> lru;
  std::unordered_map<int64_t, std::list<int64_t>::iterator> where;
  uint64_t hits = 0;
  for (int64_t x : t) {
    auto it = where.find(x);
    if (it != where.end()) {
      ++hits;
      lru.erase(it->second);
    } else if (lru.size() == size) {
      where.erase(lru.back());
      lru.pop_back();
    }
    lru.push_front(x);
    where[x] = lru.begin();
  }
  return hits;
}

}  // namespace edo::stats::testing
