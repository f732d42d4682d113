// The hand-worked vocabulary stream of the coverage and trim tests: 1000 lookups of an 8-id
// vocabulary in 10 steps of 100, cut at 700.
//   fit part (700):      id 1 x 500, id 2 x 150, id 3 x 43, id 4 x 6, id 5 x 1
//   held-out part (300): id 1 x 200, id 2 x 50,  id 3 x 30, id 4 x 10, id 6 x 10 (never read before the cut)
// 99 % of 700 is 693 = 500 + 150 + 43: ids {1, 2, 3}, holding 280 of the 300 held-out lookups.
// 99.9 % is 699.3: ids 1..4 hold 699, so id 5 too: {1..5}, all 700; held out 290 of 300 (id 6
// is missed). 99.99 % (699.93): the same five ids. (Used by the tuner's tests and the dashboard's.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <stdexcept>

#include "edo/stats/table_stats.h"

namespace edo::tuner::testing {

constexpr uint64_t kVocab = 8;

inline std::vector<int64_t> hand_stream() {
  std::vector<int64_t> s;
  auto put = [&](int64_t id, int n) { s.insert(s.end(), n, id); };
  // Fit part, interleaved so that the order inside it is not sorted by id.
  for (int i = 0; i < 50; ++i) put(1, 10);  // 500
  for (int i = 0; i < 150; ++i) put(2, 1);
  put(3, 43);
  put(4, 6);
  put(5, 1);
  // Held-out part.
  put(6, 10);
  put(1, 200);
  put(2, 50);
  put(4, 10);
  put(3, 30);
  return s;
}

inline stats::TableAggregate recorded_vocab(const std::vector<int64_t>& stream, uint64_t sample_refs) {
  stats::StatsConfig cfg;
  cfg.ordered_sample_refs = sample_refs;
  stats::TableIngestor ing(kVocab, cfg);
  stats::TableAggregate total;
  for (size_t at = 0; at < stream.size(); at += 100) {
    ing.add(stream.data() + at, std::min<size_t>(100, stream.size() - at));
    stats::TableAggregate d = ing.take_delta();
    if (at == 0) total = std::move(d);
    else if (!total.merge(d)) throw std::logic_error("the deltas of one table do not merge");
  }
  return total;
}

}  // namespace edo::tuner::testing
