// A table recorded as the tracer records it: one delta per step (TableIngestor::take_delta),
// merged in order, with an ordered sample of `sample_refs` references (the held-out replays'
// input). Shared by the cache, cache-sizing and managed-collision tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/stats/table_stats.h"

namespace edo::tuner::testing {

inline model::Table recorded_steps(const std::string& name, uint64_t rows, const std::vector<std::vector<int64_t>>& steps,
                                   uint64_t sample_refs = uint64_t{1} << 16) {
  stats::StatsConfig cfg;
  cfg.ordered_sample_refs = sample_refs;
  stats::TableIngestor ing(rows, cfg);
  stats::TableAggregate total;
  bool first = true;
  for (const auto& s : steps) {
    ing.add(s.data(), s.size());
    stats::TableAggregate d = ing.take_delta();
    if (first) total = std::move(d);
    else EXPECT_TRUE(total.merge(d));
    first = false;
  }
  model::Table t;
  t.session_id = 1;
  t.name = name;
  t.rows = rows;
  t.dim = 16;
  t.dtype = "fp32";
  t.device = "cuda";
  t.weight_bytes = t.rows * t.dim * 4;
  t.aggregate = std::move(total);
  return t;
}

// 100 steps of 10 rounds of 17 lookups: rows 0..9; 6 of rows 10..199 in turn; one new row from
// 200 on (never read again). Its LRU curve reaches 50 % at 17 rows and bends at ~231 (the knee).
inline std::vector<std::vector<int64_t>> two_level_steps() {
  std::vector<std::vector<int64_t>> steps(100);
  int64_t b = 0, cold = 200;
  for (int round = 0; round < 1000; ++round) {
    auto& s = steps[static_cast<size_t>(round / 10)];
    for (int64_t a = 0; a < 10; ++a) s.push_back(a);
    for (int k = 0; k < 6; ++k, b = (b + 1) % 190) s.push_back(10 + b);
    s.push_back(cold++);
  }
  return steps;
}

}  // namespace edo::tuner::testing
