// `edo merge` of many rank recordings (issue 22): N synthetic one-rank recordings of one job
// (world size N, each a node of its own), merged into one file. Printed side by side:
//   project: edo merge (read every input, check, merge, write the merged .edodb)
//   anchor:  copying the inputs' bytes into one file (the I/O floor of any merge)
// and the merge's peak resident memory beside the inputs' total size.
// Usage: bench_merge [--ranks N] [--tables T] [--lookups L] [--dir DIR]   (defaults: 64 ranks, 200000 lookups
// per table and rank; DIR: a temporary folder, removed afterwards)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "edo/db/merge_files.h"
#include "edo/db/profile_store.h"
#include "edo/model/profile.h"
#include "edo/stats/table_stats.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The peak resident memory of the merge alone: it runs in a child process (RUSAGE_CHILDREN).
long peak_rss_of_children_kib() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_maxrss;
}

// The tables of one rank: by default three (two exact, one sketched); with --tables N, N tables
// of a production recommender's spread (issue 31): rows log-uniform in [100, 1M], most small.
struct TableSpec {
  std::string name;
  uint64_t rows;
  bool sketched;
};
std::vector<TableSpec> table_specs(int64_t tables) {
  if (tables <= 0)
    return {{"emb.user", uint64_t{1} << 18, false}, {"emb.item", uint64_t{1} << 16, false},
            {"emb.ads", uint64_t{1} << 22, true}};
  std::vector<TableSpec> specs;
  for (int64_t t = 0; t < tables; ++t) {
    // A fixed low-discrepancy spread (golden ratio), the same on every rank: ranks of one job.
    const double u = std::fmod(0.6180339887498949 * double(t + 1), 1.0);
    specs.push_back({"emb.feature_" + std::to_string(t), uint64_t(100.0 * std::pow(1e4, u)), false});
  }
  return specs;
}

// One rank's recording: a launcher-less process with its tables, a short memory timeline and
// drop counters, as `edo record` would write for one node.
edo::model::Profile rank_recording(int64_t rank, int64_t world, uint64_t lookups, const std::vector<TableSpec>& specs) {
  using namespace edo;
  model::Profile p;
  model::Session s;
  s.id = 1;
  s.command = "python3 train.py";
  s.host = "node" + std::to_string(rank);
  s.pid = 1000 + rank;
  s.parent_pid = 1;
  s.rank = rank;
  s.local_rank = 0;
  s.start_unix_ns = 1'700'000'000'000'000'000 + rank * 1'000'000;
  s.duration_ns = 60'000'000'000;
  s.source = "record";
  s.steps = 100;
  s.drops = {{"batches", uint64_t(rank % 3)}};
  s.identity.master = "10.0.0.1:29500";
  s.identity.world_size = world;
  s.identity.group_rank = rank;
  s.identity.local_world_size = 1;
  p.sessions.push_back(s);
  stats::StatsConfig exact;
  stats::StatsConfig sketch;
  sketch.exact_rows_limit = uint64_t{1} << 20;
  sketch.cms_width = uint32_t{1} << 16;
  sketch.top_k = 4096;
  for (const TableSpec& t : specs) {
    model::Table tab;
    tab.session_id = 1;
    tab.name = t.name;
    tab.rows = t.rows;
    tab.dim = 64;
    tab.dtype = "fp32";
    tab.device = "cuda";
    tab.base_address = 0x7f0000000000ull + t.rows;
    tab.weight_bytes = t.rows * 64 * 4;
    stats::TableIngestor ing(t.rows, t.sketched ? sketch : exact);
    stats::ZipfGenerator gen(t.rows, 1.05, uint64_t(rank) * 7919 + t.rows);
    std::vector<int64_t> idx(lookups);
    gen.fill(idx.data(), idx.size());
    ing.add(idx.data(), idx.size());
    ing.close_window();
    tab.aggregate = ing.take_delta();
    p.tables.push_back(std::move(tab));
    p.memory_events.push_back({1, int64_t(p.tables.size()) * 10, int64_t(t.rows * 256), 0x1000 * p.tables.size(), 0, 0,
                               "cudaMalloc", t.name});
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t ranks = 64;
  int64_t tables = 0;  // 0: the three default tables
  uint64_t lookups = 200000;
  std::string dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--lookups")) lookups = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--tables")) tables = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
  }
  const bool own_dir = dir.empty();
  if (own_dir) dir = (fs::temp_directory_path() / ("edo-bench-merge-" + std::to_string(getpid()))).string();
  fs::create_directories(dir);

  const std::vector<TableSpec> specs = table_specs(tables);
  auto t0 = Clock::now();
  std::vector<std::string> inputs;
  uintmax_t input_bytes = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    const std::string path = dir + "/rank" + std::to_string(r) + ".edodb";
    fs::remove(path);
    edo::model::Profile p = rank_recording(r, ranks, lookups, specs);
    edo::db::ProfileStore(path, edo::db::ProfileStore::Mode::kCreate).save(p, true);
    inputs.push_back(path);
    input_bytes += fs::file_size(path);
  }
  const double make_s = seconds_since(t0);

  // Anchor: the inputs' bytes copied into one file.
  const std::string copy = dir + "/copy.bin";
  t0 = Clock::now();
  {
    std::ofstream out(copy, std::ios::binary | std::ios::trunc);
    std::vector<char> buf(1 << 20);
    for (const auto& in : inputs) {
      std::ifstream f(in, std::ios::binary);
      while (f) {
        f.read(buf.data(), std::streamsize(buf.size()));
        out.write(buf.data(), f.gcount());
      }
    }
  }
  const double copy_s = seconds_since(t0);

  const std::string merged = dir + "/job.edodb";
  fs::remove(merged);
  t0 = Clock::now();
  const pid_t child = fork();
  if (child == 0) {
    try {
      edo::db::merge_files(inputs, merged, {});
      _exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_merge: %s\n", e.what());
      _exit(1);
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  const double merge_s = seconds_since(t0);
  const long rss = peak_rss_of_children_kib();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  const uintmax_t merged_bytes = fs::file_size(merged);

  // The merged file reads back with every rank.
  const edo::model::Profile back = edo::db::ProfileStore(merged, edo::db::ProfileStore::Mode::kReadOnly).load();
  const bool ok = back.sessions.size() == size_t(ranks) && back.tables.size() == size_t(ranks) * specs.size();

  if (tables <= 0)
    std::printf("edo merge of %lld one-rank recordings (3 tables each: 2^18 and 2^16 rows exact, 2^22 rows sketched; "
                "%llu lookups per table and rank)\n",
                static_cast<long long>(ranks), static_cast<unsigned long long>(lookups));
  else
    std::printf("edo merge of %lld one-rank recordings (%lld tables each, rows log-uniform in [100, 1M]; "
                "%llu lookups per table and rank); target at 8 ranks x 1,000 tables: < 10 s\n",
                static_cast<long long>(ranks), static_cast<long long>(tables), static_cast<unsigned long long>(lookups));
  std::printf("  inputs: %.1f MiB in all (made in %.1f s); merged file %.1f MiB\n", double(input_bytes) / 1048576.0,
              make_s, double(merged_bytes) / 1048576.0);
  std::printf("  %-44s %9.3f s\n", "project: edo merge (read, check, merge, write)", merge_s);
  std::printf("  %-44s %9.3f s\n", "anchor:  copy the inputs' bytes into one file", copy_s);
  std::printf("  ratio merge / copy: %.1fx\n", copy_s > 0 ? merge_s / copy_s : 0.0);
  std::printf("  peak resident memory of the merge (its own process): %.1f MiB (%.2fx the inputs' size)\n",
              double(rss) / 1024.0, double(rss) * 1024.0 / double(input_bytes ? input_bytes : 1));
  std::printf("  merged file: %zu processes, %zu tables: %s\n", back.sessions.size(), back.tables.size(), ok ? "ok" : "WRONG");
  if (own_dir) fs::remove_all(dir);
  return ok ? 0 : 1;
}
