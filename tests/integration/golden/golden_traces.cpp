// Writes the golden wire streams of tests/fixtures/golden/<case>/ (see the README there):
// deterministic frame files as libedo_trace.so writes them with EDO_OUTPUT (one file per
// process: run.edotrace, run.edotrace.<pid>), built with the same encoders (edo_wire,
// edo_stats). Run it only to change the streams on purpose (a new case, a wire change):
//
//   build/bin/edo_golden_traces tests/fixtures/golden
//
// then regenerate the expected reports (EDO_GOLDEN_UPDATE=1, README) and review the diff.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "edo/stats/table_stats.h"
#include "edo/wire/wire.h"

using namespace edo;
using namespace edo::wire;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kStart = 1700000000000000000;  // 2023-11-14, fixed: no clock is read
constexpr uint8_t kF32 = 0, kF16 = 1;            // edo_dtype (edo.h)
constexpr uint8_t kHost = 0, kCuda = 1;          // edo_device (edo.h)

Hello hello(int64_t pid, int64_t ppid, const std::string& command) {
  Hello h;
  h.pid = pid;
  h.ppid = ppid;
  h.start_unix_ns = kStart + pid * 1000;
  h.host = "golden-host";
  h.command = command;
  h.tool_version = "golden";
  h.settings = {{"EDO_FLUSH_MS", "1000"}};
  return h;
}

// A delta of a table of `rows` rows read `n` times, row i*mul mod (rows/div) for the i-th read
// (a skewed but fixed stream).
std::string delta_bytes(uint64_t rows, uint64_t n, uint64_t mul, uint64_t div) {
  stats::TableIngestor ing(rows, stats::StatsConfig{});
  std::vector<int64_t> idx;
  idx.reserve(n);
  const uint64_t span = std::max<uint64_t>(1, rows / div);
  for (uint64_t i = 0; i < n; ++i) idx.push_back(int64_t((i * mul + (i * i) % 7) % span));
  ing.add(idx.data(), idx.size());
  return ing.take_delta().serialize();
}

void write(const fs::path& file, const std::vector<Message>& msgs, size_t cut_last_frame_at = 0) {
  std::string s;
  for (const auto& m : msgs) encode(m, s);
  if (cut_last_frame_at) {
    std::string last = encode(msgs.back());
    s.resize(s.size() - last.size() + cut_last_frame_at);
  }
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(s.data(), std::streamsize(s.size()));
  std::printf("wrote %s (%zu bytes)\n", file.string().c_str(), s.size());
}

// One process: two tables and a tied LM head, optimizer bytes, NVTX ranges, steps, exit 0.
void single_process(const fs::path& dir) {
  std::vector<Message> m;
  m.push_back(hello(100, 1, "python3 train.py --epochs 1"));
  m.push_back(TableReg{0, "sparse.user", 0x7f0000000000, 1000, 16, kF32, kHost, -1});
  m.push_back(TableReg{1, "sparse.item", 0x7f0000100000, 5000, 8, kF16, kHost, -1});
  m.push_back(TableReg{2, "lm_head", 0x7f0000000000, 1000, 16, kF32, kHost, -1});
  m.push_back(Tie{0, 2});
  m.push_back(ExtraBytes{0, "adam.exp_avg", 1000 * 16 * 4});
  m.push_back(ExtraBytes{0, "adam.exp_avg_sq", 1000 * 16 * 4});
  m.push_back(TableDelta{0, delta_bytes(1000, 4000, 7, 1)});
  m.push_back(TableDelta{1, delta_bytes(5000, 3000, 13, 10)});
  m.push_back(Steps{5});
  // A second flush: more deltas add up.
  m.push_back(TableDelta{0, delta_bytes(1000, 6000, 3, 4)});
  m.push_back(Steps{10});
  m.push_back(RangeStats{{{"forward", 10, 5000000, 13000, 0}, {"epoch", 1, 90000000, 13000, 0}}});
  m.push_back(Goodbye{100000000, EndReason::kExit, 0});
  write(dir / "run.edotrace", m);
}

// A parent and two forked workers (their own files, as EDO_OUTPUT names them), the workers
// reading the table they inherited.
void forked_workers(const fs::path& dir) {
  const TableReg emb{0, "emb", 0x7f0000000000, 2000, 32, kF32, kHost, -1};
  write(dir / "run.edotrace", {hello(200, 1, "python3 loader.py"), emb, TableDelta{0, delta_bytes(2000, 500, 11, 1)},
                               Steps{3}, Goodbye{50000000, EndReason::kExit, 0}});
  for (int k = 1; k <= 2; ++k) {
    const int64_t pid = 200 + k;
    write(dir / ("run.edotrace." + std::to_string(pid)),
          {hello(pid, 200, "python3 loader.py"), emb, TableDelta{0, delta_bytes(2000, 1000 * uint64_t(k), 17, 2)},
           Goodbye{40000000, EndReason::kExit, 0}});
  }
}

// A job killed by SIGTERM after its final flush, with drop counters; a worker that died
// without one (no Goodbye) and whose last frame is cut in the middle.
void killed(const fs::path& dir) {
  write(dir / "run.edotrace",
        {hello(300, 1, "./train --steps 100"), TableReg{0, "emb.user", 0x10000, 100000, 64, kF16, kHost, -1},
         TableDelta{0, delta_bytes(100000, 20000, 101, 5)}, Steps{42}, Dropped{{{"batches", 2}, {"indices", 8192}}},
         Goodbye{7000000000, EndReason::kSignal, 15}});
  write(dir / "run.edotrace.301",
        {hello(301, 300, "./train --steps 100"), TableReg{0, "emb.user", 0x10000, 100000, 64, kF16, kHost, -1},
         TableDelta{0, delta_bytes(100000, 700, 3, 1)}, Steps{1}},
        /*cut_last_frame_at=*/10);
}

// Device tables: memory events attributed to tables by address, kernels per table, a note.
void gpu(const fs::path& dir) {
  MemoryEvents me;
  me.events.push_back({10, 1000LL * 128 * 4, 0x7e0000000000, 0, 0, "cudaMalloc"});
  me.events.push_back({20, 4 << 20, 0x7e0001000000, 7, 0, "cudaMallocAsync"});
  me.events.push_back({30, -(4 << 20), 0x7e0001000000, 7, 0, "cudaFreeAsync"});
  write(dir / "run.edotrace",
        {hello(400, 1, "python3 dlrm.py"), TableReg{0, "emb.cat0", 0x7e0000000000, 1000, 128, kF32, kCuda, 0}, me,
         TableDelta{0, delta_bytes(1000, 8192, 29, 3)},
         KernelStats{{{"embedding_bag_forward", 16, 3200000, {"emb.cat0"}, {{"emb.cat0", 16, 3200000}}},
                      {"sgemm", 32, 900000, {}, {}}}},
         Note{"cupti", "available"}, Steps{16}, Goodbye{2000000000, EndReason::kExit, 0}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: edo_golden_traces DIR (tests/fixtures/golden)\n");
    return 2;
  }
  const fs::path root = argv[1];
  const std::vector<std::pair<const char*, std::function<void(const fs::path&)>>> cases = {
      {"single_process", single_process}, {"forked_workers", forked_workers}, {"killed", killed}, {"gpu", gpu}};
  for (auto& [name, make] : cases) {
    fs::create_directories(root / name);
    for (auto& f : fs::directory_iterator(root / name, std::filesystem::directory_options::skip_permission_denied))
      if (f.path().filename().string().rfind("run.edotrace", 0) == 0) fs::remove(f.path());
    make(root / name);
  }
  return 0;
}
