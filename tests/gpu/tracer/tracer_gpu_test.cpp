// tracer_gpu_job under `edo record` on a real GPU: allocations attributed to tables, kernel
// names and times, exact device-index counts. Skips with the reason when there is no device.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <string>

#include "edo/db/profile_store.h"
#include "edo/stats/table_stats.h"

namespace {

struct Result {
  int status = -1;
  std::string out;
};

[[maybe_unused]] Result sh(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// A program built next to this test (build/bin), found beside the running executable first:
// a bundle from scripts/gpu-bundle.sh runs from another directory than it was built in.
[[maybe_unused]] std::string beside_me(const char* built_path) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto p = self.parent_path() / std::filesystem::path(built_path).filename();
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  return built_path;
}

}  // namespace

TEST(TracerGpu, CudaJobUnderRecord) {
#ifndef TRACER_GPU_JOB
  GTEST_SKIP() << "built without the CUDA toolkit: no GPU job";
#else
  const std::string db = ::testing::TempDir() + "/tracer_gpu_" + std::to_string(getpid()) + ".edodb";
  std::remove(db.c_str());  // an earlier run's file: edo record refuses to replace it
  Result r = sh(beside_me(EDO_BIN) + " record -o " + db + " -- " + beside_me(TRACER_GPU_JOB));
  if (r.status == 77 || r.out.find("SKIP: no CUDA device") != std::string::npos)
    GTEST_SKIP() << "no CUDA device: " << r.out.substr(0, r.out.find('\n'));
  ASSERT_EQ(r.status, 0) << r.out;
  std::printf("%s", r.out.c_str());
  // Issue 9.1: the job sees cudaSuccess after every launch under `edo record`.
  EXPECT_NE(r.out.find("launch_errors 0"), std::string::npos) << "cudaGetLastError() failed under edo record:\n" << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(p.sessions.size(), 1u);
  EXPECT_EQ(p.metadata.count("cupti") ? p.metadata.at("cupti") : "", "active") << "CUPTI did not attach";
  const edo::model::Table* a = nullptr;
  for (auto& t : p.tables)
    if (t.name == "gpu.emb.a") a = &t;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->device, "cuda:0");
  // Device-index counts are exact: 20 batches of 100000, idx = i % 1000.
  EXPECT_EQ(a->aggregate.lookups(), 2000000u);
  EXPECT_EQ(a->aggregate.unique_rows(), 1000u);
  for (uint64_t row = 0; row < 1000; ++row) ASSERT_EQ(a->aggregate.count(row), 2000u) << row;
  EXPECT_EQ(a->aggregate.count(1000), 0u);
  // Issue 9.3: counted on the device; the LRU curve of a 1000-row cycle: no hit below 1000
  // rows, all but the first reads from 1000 rows on (as the exact algorithm gives).
  EXPECT_TRUE(p.metadata.count("device_counting")) << "device indices were not counted on the device";
  if (p.metadata.count("device_counting")) std::printf("device_counting: %s\n", p.metadata.at("device_counting").c_str());
  EXPECT_NEAR(edo::stats::lru_hit_rate(a->aggregate, 500), 0.0, 0.01);
  EXPECT_NEAR(edo::stats::lru_hit_rate(a->aggregate, 1001), 1.0 - 1000.0 / 2000000.0, 0.01);
  // Allocations attributed to the tables.
  bool a_alloc = false, b_alloc = false, async_free = false;
  for (auto& e : p.memory_events) {
    if (e.bytes > 0 && e.table == "gpu.emb.a" && e.kind == "cudaMalloc") a_alloc = true;
    if (e.bytes > 0 && e.table == "gpu.emb.b" && e.kind == "cudaMallocAsync") b_alloc = true;
    if (e.bytes < 0 && e.kind == "cudaFreeAsync") async_free = true;
  }
  EXPECT_TRUE(a_alloc) << "no cudaMalloc event attributed to gpu.emb.a";
  EXPECT_TRUE(b_alloc) << "no cudaMallocAsync event attributed to gpu.emb.b";
  EXPECT_TRUE(async_free) << "no cudaFreeAsync event";
  EXPECT_GE(p.peak_bytes(), int64_t(100000) * 64 * 4);
  // The tracer's own device memory (counters, 32 MiB sample arena) is not the job's.
  EXPECT_LT(p.peak_bytes(), int64_t(100000) * 64 * 4 + 50000 * 32 * 2 + 100000 * 12 + (1 << 20) + (8 << 20));
  for (auto& e : p.memory_events) EXPECT_NE(e.bytes, int64_t(32) << 20) << "the tracer's arena is in the job's timeline";
  // Kernel names, launches, times and the tables their pointer arguments point into.
  bool gather = false;
  for (auto& k : p.kernels) {
    if (k.name.find("gather_rows") == std::string::npos) continue;
    gather = true;
    EXPECT_EQ(k.launches, 20u);
    EXPECT_GT(k.total_ns, 0u) << "no kernel activity records";
    EXPECT_NE(std::find(k.tables.begin(), k.tables.end(), "gpu.emb.a"), k.tables.end()) << "pointer args not resolved";
    // Issue 9.2: launches and GPU time per (kernel, table).
    bool per_table = false;
    for (auto& t : k.per_table)
      if (t.table == "gpu.emb.a") {
        per_table = true;
        EXPECT_EQ(t.launches, 20u);
        EXPECT_EQ(t.total_ns, k.total_ns);
      }
    EXPECT_TRUE(per_table) << "no per-table figures for gather_rows";
    EXPECT_EQ(k.name.find("edo_count"), std::string::npos);
  }
  EXPECT_TRUE(gather) << "kernel gather_rows not recorded";
  // A table pointer inside a struct argument (how PyTorch passes tensors), pointing past the
  // table's base.
  bool info = false;
  for (auto& k : p.kernels) {
    if (k.name.find("gather_info") == std::string::npos) continue;
    info = true;
    EXPECT_EQ(k.launches, 3u);
    EXPECT_EQ(k.tables, std::vector<std::string>{"gpu.emb.b"}) << "a pointer inside a struct argument not resolved";
  }
  EXPECT_TRUE(info) << "kernel gather_info not recorded";
  for (auto& k : p.kernels) EXPECT_EQ(k.name.find("edo_count"), std::string::npos) << "the tracer's kernel is listed";
  std::filesystem::remove(db);
#endif
}

// Above EDO_EXACT_ROWS the device keeps a count-min sketch and HyperLogLog registers.
TEST(TracerGpu, SketchModeOnTheDevice) {
#ifndef TRACER_GPU_JOB
  GTEST_SKIP() << "built without the CUDA toolkit: no GPU job";
#else
  const std::string db = ::testing::TempDir() + "/tracer_gpu_sketch_" + std::to_string(getpid()) + ".edodb";
  std::remove(db.c_str());  // an earlier run's file: edo record refuses to replace it
  Result r = sh("EDO_EXACT_ROWS=1000 " + beside_me(EDO_BIN) + " record -o " + db + " -- " + beside_me(TRACER_GPU_JOB));
  if (r.status == 77 || r.out.find("SKIP: no CUDA device") != std::string::npos) GTEST_SKIP() << "no CUDA device";
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("launch_errors 0"), std::string::npos) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const edo::model::Table* a = nullptr;
  for (auto& t : p.tables)
    if (t.name == "gpu.emb.a") a = &t;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->aggregate.mode(), edo::stats::CountMode::kSketch);
  EXPECT_EQ(a->aggregate.lookups(), 2000000u);
  EXPECT_NEAR(double(a->aggregate.unique_rows()), 1000.0, 50.0);
  EXPECT_GE(a->aggregate.count(5), 2000u);  // count-min never under-counts
  std::filesystem::remove(db);
#endif
}

// Issue 13: a job that is a CUPTI client itself holds CUPTI first; edo says so in one line
// naming it and records tables and device lookups all the same.
TEST(TracerGpu, AJobHoldingCuptiIsNamedAndTheRestRecorded) {
#ifndef CUPTI_HOLDER_JOB
  GTEST_SKIP() << "built without the CUDA toolkit's CUPTI: no holder job";
#else
  const std::string db = ::testing::TempDir() + "/tracer_gpu_holder_" + std::to_string(getpid()) + ".edodb";
  std::remove(db.c_str());
  Result r = sh(beside_me(EDO_BIN) + " record -o " + db + " -- " + beside_me(CUPTI_HOLDER_JOB));
  if (r.status == 77 || r.out.find("SKIP: no CUDA device") != std::string::npos) GTEST_SKIP() << "no CUDA device";
  ASSERT_EQ(r.status, 0) << r.out;
  std::printf("%s", r.out.c_str());
  EXPECT_NE(r.out.find("holder_subscribed 0"), std::string::npos) << "the job could not hold CUPTI:\n" << r.out;
  EXPECT_NE(r.out.find("launch_errors 0"), std::string::npos) << r.out;
  int lines = 0;
  for (size_t at = r.out.find("edo: "); at != std::string::npos; at = r.out.find("edo: ", at + 1)) {
    ++lines;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find("edo-test-holder"), std::string::npos) << line;
  }
  EXPECT_EQ(lines, 1) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const edo::model::Table* t = nullptr;
  for (auto& x : p.tables)
    if (x.name == "holder.emb") t = &x;
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->aggregate.lookups(), 500000u);
  EXPECT_EQ(t->aggregate.unique_rows(), 5000u);
  EXPECT_EQ(t->aggregate.count(42), 100u);
  std::filesystem::remove(db);
#endif
}
