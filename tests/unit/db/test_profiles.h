// Small hand-built profiles for db tests.
#pragma once

#include <filesystem>
#include <string>
#include <unistd.h>

#include "edo/model/profile.h"

namespace edo::db::testing {

using namespace edo::model;

inline std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("edo-db-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// Two sessions, three tables (one tied), a few memory events, a kernel and a range.
inline Profile sample_profile() {
  Profile p;
  Session s1;
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
  Session s2 = s1;
  s2.id = 2;
  s2.pid = 101;
  s2.parent_pid = 100;
  s2.rank.reset();
  s2.exit_code.reset();
  s2.dropped_events = 1;
  p.sessions = {s1, s2};

  stats::StatsConfig cfg;
  auto make_table = [&](int64_t session, const std::string& name, uint64_t rows, uint32_t dim,
                        std::initializer_list<int64_t> reads) {
    Table t;
    t.session_id = session;
    t.name = name;
    t.rows = rows;
    t.dim = dim;
    t.dtype = "fp32";
    t.device = "cuda";
    t.base_address = 0x7f0000000000ull + rows;
    t.weight_bytes = rows * dim * 4;
    stats::TableIngestor ing(rows, cfg);
    std::vector<int64_t> idx(reads);
    ing.add(idx.data(), idx.size());
    ing.close_window();
    t.aggregate = ing.take_delta();
    return t;
  };
  p.tables.push_back(make_table(1, "model.emb.user", 1000, 16, {1, 2, 2, 3, 3, 3}));
  p.tables.push_back(make_table(1, "model.emb.item", 50, 8, {0, 0, 49}));
  p.tables.push_back(make_table(1, "model.lm_head", 1000, 16, {5}));
  p.tables.push_back(make_table(2, "model.emb.user", 1000, 16, {3, 999}));
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

}  // namespace edo::db::testing
