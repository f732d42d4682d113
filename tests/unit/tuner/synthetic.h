// Small recordings with known skew for tuner tests, built the way `edo synth` builds them
// (core/stats' Zipf generator through a TableIngestor).
#pragma once

#include <string>
#include <vector>

#include "edo/model/first_seen.h"
#include "edo/model/profile.h"
#include "edo/stats/table_stats.h"

namespace edo::tuner::testing {

inline model::Table synthetic_table(const std::string& name, uint64_t rows, uint32_t dim, double zipf, uint64_t lookups,
                                    uint64_t seed, const std::string& dtype = "fp32") {
  stats::StatsConfig cfg;
  stats::TableIngestor ing(rows, cfg);
  stats::ZipfGenerator gen(rows, zipf, seed);
  std::vector<int64_t> batch(65536);
  for (uint64_t done = 0; done < lookups;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(batch.size(), lookups - done));
    gen.fill(batch.data(), n);
    ing.add(batch.data(), n);
    done += n;
  }
  model::Table t;
  t.session_id = 1;
  t.name = name;
  t.rows = rows;
  t.dim = dim;
  t.dtype = dtype;
  t.device = "cuda";
  t.weight_bytes = rows * dim * model::dtype_size(dtype);
  t.aggregate = ing.take_delta();
  return t;
}

// A table read as `segments` (each a flush of the tracer, in order), with its exact counts and,
// when `with_first_seen`, the record of when its rows were first read.
inline model::Table segmented_table(const std::string& name, uint64_t rows, const std::vector<std::vector<int64_t>>& segments,
                                    int64_t session = 1, bool with_first_seen = true) {
  stats::StatsConfig cfg;
  stats::TableIngestor ing(rows, cfg);
  model::FirstSeenTracker tracker;
  for (const auto& s : segments) {
    tracker.begin_segment();
    tracker.add_indices(s.data(), s.size(), rows);
    ing.add(s.data(), s.size());
  }
  model::Table t;
  t.session_id = session;
  t.name = name;
  t.rows = rows;
  t.dim = 16;
  t.dtype = "fp32";
  t.device = "cuda";
  t.weight_bytes = t.rows * t.dim * 4;
  t.aggregate = ing.take_delta();
  if (with_first_seen) t.first_seen = tracker.finish(t.aggregate);
  return t;
}

inline model::Profile synthetic_profile(std::vector<model::Table> tables, uint64_t steps) {
  model::Profile p;
  model::Session s;
  s.id = 1;
  s.command = "synthetic";
  s.source = "synth";
  s.steps = steps;
  p.sessions.push_back(s);
  p.tables = std::move(tables);
  return p;
}

}  // namespace edo::tuner::testing
