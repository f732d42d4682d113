// The recordings tests build in memory, in one place: tables read from exact ids, in segments
// (tracer flushes) or in steps (one delta per step), or from a Zipf generator (core/stats, the
// way `edo synth` reads them); a profile of one session around them; and a hand-built profile of
// two sessions with every kind of record (db and model tests).
// Recordings on disk, made by `edo synth`: recording_files.h.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "edo/model/first_seen.h"
#include "edo/model/profile.h"
#include "edo/stats/table_stats.h"

namespace edo::testing {

// A file `name` in a folder of this test process's own under the system temp folder.
inline std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("edo-db-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// Table `name` of `session` as the tracer records it (a cuda table of rows x dim `dtype`
// values), with the counts of `aggregate`.
inline model::Table recorded_table(int64_t session, const std::string& name, uint64_t rows, uint32_t dim,
                                   const std::string& dtype, stats::TableAggregate aggregate) {
  model::Table t;
  t.session_id = session;
  t.name = name;
  t.rows = rows;
  t.dim = dim;
  t.dtype = dtype;
  t.device = "cuda";
  t.weight_bytes = rows * dim * model::dtype_size(dtype);
  t.aggregate = std::move(aggregate);
  return t;
}

// A table read once as `reads`, in one closed window, at a base address of its own.
inline model::Table table_from_reads(int64_t session, const std::string& name, uint64_t rows, uint32_t dim,
                                     std::initializer_list<int64_t> reads) {
  stats::StatsConfig cfg;
  stats::TableIngestor ing(rows, cfg);
  std::vector<int64_t> idx(reads);
  ing.add(idx.data(), idx.size());
  ing.close_window();
  model::Table t = recorded_table(session, name, rows, dim, "fp32", ing.take_delta());
  t.base_address = 0x7f0000000000ull + rows;
  return t;
}

// A table of session 1 read `lookups` times with Zipf(`zipf`) skew (known skew for the tuner).
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
  return recorded_table(1, name, rows, dim, dtype, ing.take_delta());
}

// A table (dim 16, fp32) read as `segments` (each a flush of the tracer, in order), with its
// exact counts and, when `with_first_seen`, the record of when its rows were first read.
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
  model::Table t = recorded_table(session, name, rows, 16, "fp32", ing.take_delta());
  if (with_first_seen) t.first_seen = tracker.finish(t.aggregate);
  return t;
}

// A table (dim 16, fp32) recorded as the tracer records it: one delta per step
// (TableIngestor::take_delta), merged in order, with an ordered sample of `sample_refs`
// references (the held-out replays' input).
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
  return recorded_table(1, name, rows, 16, "fp32", std::move(total));
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

// One session (id 1, `steps` steps, as `edo synth` records it) holding `tables`.
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

// Two sessions, three tables (one tied), a few memory events, a kernel and a range.
inline model::Profile sample_profile() {
  model::Profile p;
  model::Session s1;
  s1.id = 1;
  s1.command = "python3 train.py --epochs 1";
  s1.host = "box";
  s1.pid = 100;
  s1.parent_pid = 1;
  s1.rank = 0;
  s1.start_unix_ns = 1'700'000'000'000'000'000;
  s1.duration_ns = 2'500'000'000;
  s1.exit_code = 3;
  s1.gpus = "NVIDIA H200";
  s1.source = "record";
  s1.dropped_events = 7;
  s1.steps = 12;
  model::Session s2 = s1;
  s2.id = 2;
  s2.pid = 101;
  s2.parent_pid = 100;
  s2.rank.reset();
  s2.exit_code.reset();
  s2.dropped_events = 1;
  p.sessions = {s1, s2};
  p.tables.push_back(table_from_reads(1, "model.emb.user", 1000, 16, {1, 2, 2, 3, 3, 3}));
  p.tables.push_back(table_from_reads(1, "model.emb.item", 50, 8, {0, 0, 49}));
  p.tables.push_back(table_from_reads(1, "model.lm_head", 1000, 16, {5}));
  p.tables.push_back(table_from_reads(2, "model.emb.user", 1000, 16, {3, 999}));
  p.tables.back().optimizer_bytes = 128000;
  p.tables.back().grad_bytes = 64000;
  p.ties.push_back({1, "model.emb.user", "model.lm_head"});
  p.memory_events.push_back({1, 10, 64000, 0x1000, 0, 0, "cudaMalloc", "model.emb.user"});
  p.memory_events.push_back({1, 20, 1600, 0x9000, 0, 0, "cudaMalloc", "model.emb.item"});
  p.memory_events.push_back({1, 30, -64000, 0x1000, 0, 0, "cudaFree", "model.emb.user"});
  p.memory_events.push_back({1, 40, 500, 0xa000, 7, 0, "cudaMallocAsync", ""});
  p.kernels.push_back({1, "embedding_bag_kernel", 12, 34000, {"model.emb.user", "model.emb.item"},
                       {{"model.emb.user", 12, 34000}, {"model.emb.item", 5, 9000}}});
  p.ranges.push_back({1, "forward", 12, 99000, 9, 0});
  p.metadata["edo_version"] = "test";
  return p;
}

}  // namespace edo::testing
