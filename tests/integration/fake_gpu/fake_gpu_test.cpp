// The tracer's GPU path on the fake CUDA stack (fake_cuda.h): a job whose launches go through
// the CUPTI callbacks exactly as on a GPU, run with and without `edo record`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "edo/db/profile_store.h"
#include "edo/stats/table_stats.h"

namespace {

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr
  std::map<std::string, std::string> values;  // "key value" lines
};

Result sh(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    auto sp = line.find(' ');
    if (sp != std::string::npos) r.values[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return r;
}

std::string db_path(const char* tag) {
  return ::testing::TempDir() + "/fake_gpu_" + tag + "_" + std::to_string(getpid()) + ".edodb";
}

std::string recorded(const std::string& db, const std::string& env = "") {
  return env + " EDO_CUPTI_PATH=" FAKE_CUPTI " " EDO_BIN " record -o " + db + " -- " FAKE_GPU_JOB;
}

const edo::model::KernelStat* kernel(const edo::model::Profile& p, const std::string& prefix) {
  for (const auto& k : p.kernels)
    if (k.name.rfind(prefix, 0) == 0) return &k;
  return nullptr;
}

const edo::model::KernelTableStat* per_table(const edo::model::KernelStat& k, const std::string& table) {
  for (const auto& t : k.per_table)
    if (t.table == table) return &t;
  return nullptr;
}

// Bytes the recording's allocation events add up to (frees not subtracted): the job's
// allocations, when edo's own are kept out of them.
int64_t allocated_bytes(const edo::model::Profile& p) {
  int64_t allocated = 0;
  for (const auto& e : p.memory_events)
    if (e.bytes > 0) allocated += e.bytes;
  return allocated;
}

}  // namespace

// Issue 9: under `edo record` every launch still leaves cudaSuccess as the last error, the
// results are the same, and the tracer called nothing of the job's runtime from a callback.
TEST(FakeGpu, TheJobRunsUnharmedUnderRecord) {
  Result plain = sh(FAKE_GPU_JOB);
  ASSERT_EQ(plain.status, 0) << plain.out;
  EXPECT_EQ(plain.values["launch_errors"], "0") << plain.out;
  const std::string db = db_path("unharmed");
  Result traced = sh(recorded(db));
  ASSERT_EQ(traced.status, 0) << traced.out;
  EXPECT_EQ(traced.values["checksum"], plain.values["checksum"]) << traced.out;
  EXPECT_EQ(traced.values["launch_errors"], "0") << "cudaGetLastError() after a launch failed:\n" << traced.out;
  EXPECT_EQ(traced.values["last_error"], "0") << traced.out;
  EXPECT_EQ(traced.values["runtime_calls_in_callbacks"], "0")
      << "the tracer called the job's CUDA runtime from a CUPTI callback:\n" << traced.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  EXPECT_EQ(p.metadata.count("cupti") ? p.metadata.at("cupti") : "", "active") << traced.out;
  std::filesystem::remove(db);
}

// Issue 9 item 2: each launch lists the tables its pointer arguments point into, with launches
// and GPU time per (kernel, table), whichever way it was launched.
TEST(FakeGpu, KernelsAreTiedToTheTablesTheyRead) {
  const std::string db = db_path("kernels");
  Result r = sh(recorded(db));
  ASSERT_EQ(r.status, 0) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const auto* gather = kernel(p, "gather_rows(");
  ASSERT_NE(gather, nullptr) << "runtime launch (cudaLaunchKernel, no driver callback inside) not recorded";
  EXPECT_EQ(gather->launches, 20u);
  EXPECT_GT(gather->total_ns, 0u);
  EXPECT_EQ(gather->tables, std::vector<std::string>{"fake.emb.a"});
  const auto* ga = per_table(*gather, "fake.emb.a");
  ASSERT_NE(ga, nullptr);
  EXPECT_EQ(ga->launches, 20u);
  EXPECT_EQ(ga->total_ns, gather->total_ns) << "every launch of gather_rows read fake.emb.a";

  const auto* half = kernel(p, "gather_half(");
  ASSERT_NE(half, nullptr) << "__cudaLaunchKernel (CUDA 13 <<<>>>) launch not recorded";
  EXPECT_EQ(half->launches, 3u);
  ASSERT_NE(per_table(*half, "fake.emb.b"), nullptr) << "arguments of a CUkernel launch not read";
  EXPECT_EQ(per_table(*half, "fake.emb.b")->launches, 3u);
  EXPECT_GT(per_table(*half, "fake.emb.b")->total_ns, 0u);

  const auto* triton = kernel(p, "triton_gather");
  ASSERT_NE(triton, nullptr) << "driver launch with packed arguments not recorded";
  EXPECT_EQ(triton->launches, 2u);
  ASSERT_NE(per_table(*triton, "fake.emb.a"), nullptr);
  EXPECT_EQ(per_table(*triton, "fake.emb.a")->launches, 2u);

  // Issue 21.2: runtime launches that pass through no driver callback (cudaLaunchKernelExC,
  // cooperative): their arguments are read by the parameter types of the kernel's mangled name.
  for (const char* name : {"gather_ex(", "gather_coop("}) {
    const auto* k = kernel(p, name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(k->launches, 1u) << name;
    ASSERT_NE(per_table(*k, "fake.emb.a"), nullptr) << name << ": runtime launch not tied to its table";
    EXPECT_EQ(per_table(*k, "fake.emb.a")->launches, 1u) << name;
  }

  // A CUkernel launched as a CUfunction: cuFuncGetParamInfo answers "no parameter at index 0";
  // cuKernelGetParamInfo is asked before concluding so.
  const auto* kern = kernel(p, "gather_kern(");
  ASSERT_NE(kern, nullptr);
  EXPECT_EQ(kern->launches, 2u);
  ASSERT_NE(per_table(*kern, "fake.emb.a"), nullptr) << "a CUkernel launched as a CUfunction was taken for one without parameters";
  EXPECT_EQ(per_table(*kern, "fake.emb.a")->launches, 2u);

  const auto* sel = kernel(p, "index_select_info(");
  ASSERT_NE(sel, nullptr);
  EXPECT_EQ(sel->launches, 6u);
  EXPECT_EQ(sel->tables, std::vector<std::string>{"fake.emb.b"})
      << "a table pointer passed inside a struct argument (PyTorch's TensorInfo) was not found";
  ASSERT_NE(per_table(*sel, "fake.emb.b"), nullptr);
  EXPECT_EQ(per_table(*sel, "fake.emb.b")->launches, 4u) << "the four <<<>>> launches (a CUkernel the driver describes)";
  // The two cudaLaunchKernel launches of a kernel taking structs cannot be read without the
  // runtime: said per kernel, not guessed.
  const auto drops = p.drops();
  const std::string unread = "kernel_launches_args_unread:index_select_info(TensorInfo, TensorInfo, TensorInfo, int)";
  ASSERT_TRUE(drops.count(unread)) << "launches whose arguments could not be read are not reported";
  EXPECT_EQ(drops.at(unread), 2u);
  for (const auto& [key, n] : drops)
    EXPECT_TRUE(key.rfind("kernel_launches_args_unread:", 0) != 0 || key == unread) << key << " " << n;

  const auto* fill = kernel(p, "fill_scratch(");
  ASSERT_NE(fill, nullptr);
  EXPECT_TRUE(fill->tables.empty());
  EXPECT_TRUE(fill->per_table.empty());

  // The report lists (kernel, table) with launches and GPU time, in text and JSON.
  Result text = sh(std::string(EDO_BIN) + " report " + db);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("TABLE IT READS"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("fake.emb.b"), std::string::npos) << text.out;
  Result json = sh(std::string(EDO_BIN) + " report --json " + db);
  ASSERT_EQ(json.status, 0) << json.out;
  EXPECT_NE(json.out.find("\"per_table\""), std::string::npos);
  std::filesystem::remove(db);
}

// Allocations through the runtime (which calls the driver inside) are counted once and
// attributed to the tables; device indices are counted exactly.
TEST(FakeGpu, AllocationsAndDeviceIndicesAreRecorded) {
  const std::string db = db_path("memory");
  Result r = sh(recorded(db));
  ASSERT_EQ(r.status, 0) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  int a_allocs = 0, frees = 0;
  int64_t sum = 0;
  for (const auto& e : p.memory_events) {
    if (e.bytes > 0 && e.table == "fake.emb.a") ++a_allocs;
    if (e.bytes < 0) ++frees;
    sum += e.bytes;
  }
  EXPECT_EQ(a_allocs, 1) << "one cudaMalloc, reported by the runtime and the driver: counted once";
  EXPECT_EQ(frees, 5);
  EXPECT_EQ(sum, 0) << "every allocation of the job was freed";
  EXPECT_EQ(p.peak_bytes(), int64_t(100 * 8 * 4 + 50 * 4 * 2 + 1000 * 8 + 1000 * 4 + 64 * 4));
  const edo::model::Table* a = nullptr;
  for (const auto& t : p.tables)
    if (t.name == "fake.emb.a") a = &t;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->aggregate.lookups(), 20u * 1000u);
  EXPECT_EQ(a->aggregate.unique_rows(), 100u);
  for (uint64_t row = 0; row < 100; ++row) ASSERT_EQ(a->aggregate.count(row), 200u) << row;
  std::filesystem::remove(db);
}

// Issue 9.3: device indices are counted on the device (the counting kernel, here run by the
// fake driver), and the report's figures are those of the same indices counted on the host.
TEST(FakeGpu, DeviceCountedTablesGiveTheHostFigures) {
  const std::string db = db_path("zipf");
  Result r = sh(recorded(db) + " zipf");
  ASSERT_EQ(r.status, 0) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  ASSERT_TRUE(p.metadata.count("device_counting")) << "device indices were not counted on the device";
  EXPECT_NE(p.metadata.at("device_counting").find("40 batches, 2000000 indices"), std::string::npos)
      << p.metadata.at("device_counting");
  const edo::model::Table *dev = nullptr, *host = nullptr;
  for (const auto& t : p.tables) {
    if (t.name == "zipf.device") dev = &t;
    if (t.name == "zipf.host") host = &t;
  }
  ASSERT_NE(dev, nullptr);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(dev->aggregate.lookups(), 2000000u);
  EXPECT_EQ(dev->aggregate.lookups(), host->aggregate.lookups());
  EXPECT_EQ(dev->aggregate.unique_rows(), host->aggregate.unique_rows());
  for (uint64_t row = 0; row < 60000; ++row)
    ASSERT_EQ(dev->aggregate.count(row), host->aggregate.count(row)) << row;
  const auto sd = edo::stats::summarize(dev->aggregate), sh_ = edo::stats::summarize(host->aggregate);
  EXPECT_DOUBLE_EQ(sd.coverage_top_1pct, sh_.coverage_top_1pct);
  ASSERT_EQ(sd.lru_curve.size(), sh_.lru_curve.size());
  double mae = 0;
  for (size_t i = 0; i < sd.lru_curve.size(); ++i) mae += std::fabs(sd.lru_curve[i].y - sh_.lru_curve[i].y);
  mae /= double(sd.lru_curve.size());
  std::printf("LRU curve of the device-counted table vs the host-counted one (exact): MAE %.5f\n", mae);
  EXPECT_LE(mae, 0.01);
  std::filesystem::remove(db);
}

// Without a module for the device (FAKE_CUDA_NO_MODULES: a driver too old for the fatbin),
// device indices are copied to the host and counted there: the same counts.
TEST(FakeGpu, WithoutTheCountingModuleIndicesAreCopiedToTheHost) {
  const std::string db = db_path("nomodule");
  Result r = sh(recorded(db, "FAKE_CUDA_NO_MODULES=1") + " zipf");
  ASSERT_EQ(r.status, 0) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  EXPECT_FALSE(p.metadata.count("device_counting"));
  const edo::model::Table *dev = nullptr, *host = nullptr;
  for (const auto& t : p.tables) {
    if (t.name == "zipf.device") dev = &t;
    if (t.name == "zipf.host") host = &t;
  }
  ASSERT_NE(dev, nullptr);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(dev->aggregate.lookups(), 2000000u);
  for (uint64_t row = 0; row < 60000; row += 7) ASSERT_EQ(dev->aggregate.count(row), host->aggregate.count(row)) << row;
  std::filesystem::remove(db);
}

// A device-counted table that the statistics budget (EDO_MAX_MEMORY_MB) refuses gets no
// device counters either, and its lookups are counted as refused; a table that fits is
// counted on the device as usual.
TEST(FakeGpu, ADeviceTableBeyondTheMemoryBoundIsRefusedAndCounted) {
  const std::string db = db_path("bound");
  Result r = sh(recorded(db, "EDO_MAX_MEMORY_MB=16") + " bound");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["failed_lookups"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  ASSERT_TRUE(p.metadata.count("device_counting")) << r.out;
  EXPECT_NE(p.metadata.at("device_counting").find("5 batches, 5000 indices"), std::string::npos)
      << "only the small table's batches reach the device: " << p.metadata.at("device_counting");
  const edo::model::Table *big = nullptr, *small = nullptr;
  for (const auto& t : p.tables) {
    if (t.name == "bound.big") big = &t;
    if (t.name == "bound.small") small = &t;
  }
  ASSERT_NE(big, nullptr);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(big->aggregate.lookups(), 0u);
  EXPECT_EQ(small->aggregate.lookups(), 5000u);
  EXPECT_EQ(small->aggregate.count(7), 50u);
  const auto drops = p.drops();
  ASSERT_TRUE(drops.count("memory_bound_tables")) << r.out;
  EXPECT_EQ(drops.at("memory_bound_tables"), 1u);
  ASSERT_TRUE(drops.count("memory_bound_lookups"));
  EXPECT_EQ(drops.at("memory_bound_lookups"), 5000u);
  std::filesystem::remove(db);
}

// Issue 21.4: edo's own device memory (cuMemAlloc, outside the job's allocator) is bounded by
// EDO_MAX_DEVICE_MB and reported. The 8M-row table's exact counters (32 MB) do not fit a
// 40 MiB bound beside the sample arena (a quarter of it): that table is refused on the device,
// counted (device_memory_bound_tables) and its indices counted on the host instead, exactly.
// What `edo report` says edo held is what the fake driver saw allocated beside the job's own.
TEST(FakeGpu, EdosDeviceMemoryIsBoundedAndReported) {
  const std::string db = db_path("devbound");
  Result r = sh(recorded(db, "EDO_MAX_DEVICE_MB=40 FAKE_CUDA_REPORT_COPIES=1") + " device_bound");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["failed_lookups"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const uint64_t bound = uint64_t{40} << 20, arena = bound / 4;
  const uint64_t peak = std::stoull(r.values["peak_device_bytes"]), job = std::stoull(r.values["job_device_bytes"]);
  EXPECT_LE(peak - job, bound) << "edo allocated past EDO_MAX_DEVICE_MB";
  // The small table: 100 counters and its dirty bitmap (one word, and one for the taken copy).
  EXPECT_EQ(p.edo_device_bytes(), arena + 100 * 4 + 2 * 4) << "the arena and the small table's counters";
  EXPECT_EQ(p.edo_device_bytes(), peak - job) << "the report must say what the driver handed edo";
  EXPECT_EQ(p.edo_pinned_bytes(), arena + 100 * 4 + 4) << "the arena's mirror and the small table's counter and bitmap copy";
  // Each flush copies the counters into pinned memory, never into pageable memory.
  EXPECT_EQ(r.values["fake_cuda_pageable_dtoh_bytes"], "0") << r.out;
  const auto drops = p.drops();
  ASSERT_TRUE(drops.count("device_memory_bound_tables")) << r.out;
  EXPECT_EQ(drops.at("device_memory_bound_tables"), 1u);
  EXPECT_EQ(p.dropped_events(), 0u) << "a table moved to the host loses nothing";
  const edo::model::Table *big = nullptr, *small = nullptr;
  for (const auto& t : p.tables) {
    if (t.name == "dbound.big") big = &t;
    if (t.name == "dbound.small") small = &t;
  }
  ASSERT_NE(big, nullptr);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(big->aggregate.lookups(), 5000u) << "the refused table is counted on the host";
  EXPECT_EQ(big->aggregate.count(7), 50u);
  EXPECT_EQ(small->aggregate.lookups(), 5000u);
  EXPECT_EQ(small->aggregate.count(7), 50u);
  ASSERT_TRUE(p.metadata.count("device_counting"));
  EXPECT_NE(p.metadata.at("device_counting").find("5 batches, 5000 indices"), std::string::npos)
      << p.metadata.at("device_counting");

  Result text = sh(std::string(EDO_BIN) + " report " + db);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("edo's own device memory: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("device_memory_bound_tables: 1"), std::string::npos) << text.out;
  Result json = sh(std::string(EDO_BIN) + " report --json " + db);
  ASSERT_EQ(json.status, 0) << json.out;
  EXPECT_NE(json.out.find("\"edo_device_bytes\": " + std::to_string(arena + 408)), std::string::npos) << json.out;
  std::filesystem::remove(db);
}

// Issue 21.4: each flush copies only the counters that changed. The counting kernel marks the
// 4 KiB blocks of counters it touched in a device-side bitmap; a flush takes the bitmap, then
// copies those blocks. A 1M-row table whose batches read 3 rows: the fake's device-to-host
// bytes are the 3 blocks per flush that saw a batch, the bitmaps and the batches' samples,
// not 4 MB of counters per flush (the old tracer copied 4,000,000 bytes at each one). The
// counts stay exact.
TEST(FakeGpu, AFlushCopiesOnlyTheCountersThatChanged) {
  const std::string db = db_path("sparse");
  Result r = sh(recorded(db, "EDO_FLUSH_MS=10 FAKE_CUDA_REPORT_COPIES=1") + " sparse");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["failed_lookups"], "0") << r.out;
  ASSERT_TRUE(r.values.count("fake_cuda_dtoh_bytes")) << r.out;
  const uint64_t copied = std::stoull(r.values["fake_cuda_dtoh_bytes"]);
  // At most one collect per batch saw it dirty (4), plus the final one: 5 x (3 blocks of
  // 4096 bytes + the 128-byte bitmap), and 4 sample regions of under 200 bytes.
  EXPECT_LE(copied, 5u * (3 * 4096 + 128) + 4 * 200) << "counters copied that did not change";
  EXPECT_GE(copied, 3u * 4096) << "the touched blocks were never copied";
  EXPECT_EQ(r.values["fake_cuda_pageable_dtoh_bytes"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const edo::model::Table* t = nullptr;
  for (const auto& x : p.tables)
    if (x.name == "sparse.big") t = &x;
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->aggregate.lookups(), 12u);
  EXPECT_EQ(t->aggregate.count(5), 4u);
  EXPECT_EQ(t->aggregate.count(500000), 4u);
  EXPECT_EQ(t->aggregate.count(999999), 4u);
  EXPECT_EQ(t->aggregate.count(6), 0u);
  std::filesystem::remove(db);
}

// Issue 21.4: no mutex is held across a driver call. The fake delivers CUPTI's activity
// buffers on another thread while edo's first counting-kernel launch is in progress, and the
// launch waits for that delivery (FAKE_CUPTI_DELIVER_IN_LAUNCH); edo's buffer callback asks
// whether the delivered allocations are edo's own, under the mutex a lookup takes. The old
// tracer held that mutex across its set-up and launch: the delivery could not finish.
TEST(FakeGpu, TheBufferCallbackNeverWaitsForALaunch) {
  const std::string db = db_path("deliverlaunch");
  Result r = sh(recorded(db, "EDO_FLUSH_MS=10 FAKE_CUPTI_DELIVER_IN_LAUNCH=1") + " contexts");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["blocked_deliveries"], "0") << r.out;
  EXPECT_EQ(r.values["failed_lookups"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const int64_t allocated = allocated_bytes(p);
  EXPECT_EQ(allocated, int64_t(1000 * sizeof(long))) << "edo's own allocations are not the job's";
  const edo::model::Table* a = nullptr;
  for (const auto& t : p.tables)
    if (t.name == "ctx.a") a = &t;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->aggregate.lookups(), 10000u);
  std::filesystem::remove(db);
}

// Issue 21.4: the launch path allocates nothing. The job counts the allocations made on its
// thread inside tool callbacks (the tracer's work at each launch) across 1000 launches of four
// kinds after 100 rounds of warm-up: 0. The warm-up's count is not 0 (names, layouts and
// per-thread lists are made then), so the counter is live. The old tracer allocated several
// times per launch (demangled names, pointer lists, table names, the pending-launch map).
TEST(FakeGpu, TheLaunchPathAllocatesNothing) {
  const std::string db = db_path("mallocs");
  Result r = sh(recorded(db) + " launch_mallocs");
  ASSERT_EQ(r.status, 0) << r.out;
  if (r.values.count("launch_mallocs")) GTEST_SKIP() << "a sanitizer build interposes malloc itself";
  EXPECT_EQ(r.values["launch_errors"], "0") << r.out;
  EXPECT_NE(r.values["mallocs_in_callbacks_warmup"], "0") << "the counter saw nothing:\n" << r.out;
  EXPECT_EQ(r.values["mallocs_in_callbacks_1000_launches"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const edo::model::KernelStat* k = kernel(p, "driver_fill");
  ASSERT_NE(k, nullptr) << "the launches were recorded";
  EXPECT_EQ(k->launches, 350u);
  const auto* t = per_table(*k, "mallocs.emb");
  ASSERT_NE(t, nullptr) << "tied to the table it read";
  EXPECT_EQ(t->launches, 350u);
  const auto drops = p.drops();
  ASSERT_TRUE(drops.count("kernel_launches_args_unread:struct_fill(TensorInfo)")) << r.out;
  EXPECT_EQ(drops.at("kernel_launches_args_unread:struct_fill(TensorInfo)"), 350u);
  std::filesystem::remove(db);
}

// Issue 21.4: device counting runs in the stream's context (cuStreamGetCtx), not whichever the
// thread has current: a job that switches contexts after creating its stream keeps every batch
// counted (the old code set up a second context's module and arena and launched on a stream of
// another context, which the driver refuses). The primary context stays retained while edo
// holds handles in it.
TEST(FakeGpu, DeviceCountingUsesTheStreamsContext) {
  const std::string db = db_path("contexts");
  Result r = sh(recorded(db, "EDO_FLUSH_MS=10") + " contexts");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["failed_lookups"], "0") << r.out;
  EXPECT_EQ(r.values["wrong_context_launches"], "0") << r.out;
  EXPECT_EQ(r.values["unbalanced_pops"], "0") << r.out;
  EXPECT_EQ(r.values["primary_retains"], "2") << "the job's runtime's retain and edo's:\n" << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const edo::model::Table* a = nullptr;
  for (const auto& t : p.tables)
    if (t.name == "ctx.a") a = &t;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->aggregate.lookups(), 10000u);
  EXPECT_EQ(a->aggregate.count(7), 100u);
  std::filesystem::remove(db);
}

// Issue 21.4: a context push that fails is never popped (the pop would take the calling thread's
// own context off its stack). FAKE_CUDA_PUSH_FAILS: every cuCtxPushCurrent fails; the batches
// that needed one are dropped and counted, the job is unharmed.
TEST(FakeGpu, AFailedContextPushIsNeverPopped) {
  const std::string db = db_path("pushfails");
  Result r = sh(recorded(db, "EDO_FLUSH_MS=10 FAKE_CUDA_PUSH_FAILS=1") + " contexts");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["event_queries_seen"], "1") << "edo's background thread never polled:\n" << r.out;
  EXPECT_EQ(r.values["unbalanced_pops"], "0") << r.out;
  EXPECT_EQ(r.values["wrong_context_launches"], "0") << r.out;
  EXPECT_EQ(r.values["failed_lookups"], "5") << "the 5 batches that needed a push: refused, said\n" << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const auto drops = p.drops();
  ASSERT_TRUE(drops.count("device_batches")) << r.out;
  EXPECT_EQ(drops.at("device_batches"), 5u);
  std::filesystem::remove(db);
}

// Issue 21.4: no mutex that CUPTI's buffer callback takes is held across a driver call. The
// fake delivers the activity buffers on another thread while edo's first event query is in
// progress and the query waits for it (FAKE_CUPTI_DELIVER_IN_QUERY); the old tracer held its
// counting mutex across the query and its buffer callback asked that same mutex whether an
// address was edo's own: the delivery could not finish. Every allocation is still attributed
// (edo's own are not the job's).
TEST(FakeGpu, TheBufferCallbackNeverWaitsForADriverCall) {
  const std::string db = db_path("deliver");
  Result r = sh(recorded(db, "EDO_FLUSH_MS=10 FAKE_CUPTI_DELIVER_IN_QUERY=1") + " contexts");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["event_queries_seen"], "1") << r.out;
  EXPECT_EQ(r.values["blocked_deliveries"], "0") << r.out;
  EXPECT_EQ(r.values["failed_lookups"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const int64_t allocated = allocated_bytes(p);
  EXPECT_EQ(allocated, int64_t(1000 * sizeof(long))) << "only the job's own allocation is the job's";
  std::filesystem::remove(db);
}

// Issue 13: another tool already holds CUPTI (FAKE_CUPTI_HELD_BY: what cuptiSubscribe_v2
// reports of it). One warning line names it; the job is unharmed; tables, device lookups
// (counted without CUPTI) and the rest are recorded; GPU allocations and kernels are not.
TEST(FakeGpu, AnotherCuptiSubscriberIsNamedAndEverythingElseRecorded) {
  Result plain = sh(FAKE_GPU_JOB);
  const std::string db = db_path("held");
  Result r = sh(recorded(db, "FAKE_CUPTI_HELD_BY='Nsight Systems'"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["checksum"], plain.values["checksum"]);
  EXPECT_EQ(r.values["launch_errors"], "0");
  int warnings = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("edo: ", 0) == 0) {
      ++warnings;
      EXPECT_NE(line.find("Nsight Systems"), std::string::npos) << line;
    }
  EXPECT_EQ(warnings, 1) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  EXPECT_EQ(p.metadata.count("cupti") ? p.metadata.at("cupti") : "", "unavailable: held by Nsight Systems");
  EXPECT_TRUE(p.kernels.empty());
  EXPECT_TRUE(p.memory_events.empty());
  const edo::model::Table* a = nullptr;
  for (const auto& t : p.tables)
    if (t.name == "fake.emb.a") a = &t;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->aggregate.lookups(), 20u * 1000u);
  EXPECT_EQ(a->aggregate.count(7), 200u);
  std::filesystem::remove(db);
}

// torch.profiler about to trace CUDA: the PyTorch hook calls edo_release_gpu_capture. edo
// gives CUPTI up (one line naming the tool), the other tool can subscribe, and everything else
// is still recorded.
TEST(FakeGpu, CuptiIsHandedOverToAnotherTool) {
  const std::string db = db_path("release");
  Result r = sh(recorded(db) + " release");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["other_subscribed"], "0") << "the other tool could not subscribe:\n" << r.out;
  EXPECT_EQ(r.values["launch_errors"], "0");
  int lines = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("edo: ", 0) == 0) {
      ++lines;
      EXPECT_NE(line.find("torch.profiler"), std::string::npos) << line;
    }
  EXPECT_EQ(lines, 1) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  EXPECT_EQ(p.metadata.count("cupti") ? p.metadata.at("cupti") : "", "released to torch.profiler");
  const auto* gather = kernel(p, "gather_rows(");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->launches, 5u) << "launches before the hand-over are kept, none after";
  ASSERT_FALSE(p.tables.empty());
  EXPECT_EQ(p.tables[0].aggregate.lookups(), 10u * 1000u);
  std::filesystem::remove(db);
}

// A device batch whose count runs past its allocation is refused and counted, never read.
TEST(FakeGpu, ABatchPastItsBufferIsRefused) {
  const std::string db = db_path("overrun");
  Result r = sh(recorded(db) + " overrun");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["overrun_rc"], "-1") << r.out;  // EDO_ERR_INVALID_ARGUMENT
  EXPECT_EQ(r.values["fits_rc"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].aggregate.lookups(), 1000u);
  EXPECT_EQ(p.tables[0].aggregate.count(3), 1000u);
  EXPECT_EQ(p.dropped_events(), 1u);
  std::filesystem::remove(db);
}

// Issue 21.1: a job that captures a CUDA graph (torch.cuda.graph: GLOBAL mode) with a device
// lookup inside, while edo's background thread flushes every 10 ms. The capture must succeed
// (edo adds only its counting kernel to it, and its own threads run in RELAXED mode), every
// replay is counted (rows and kernel launches), the captured launch itself is not a launch, and
// the replayed kernels are tied to their table through the graph launch's correlation id.
TEST(FakeGpu, GraphCaptureIsNeverBrokenAndEveryReplayCounts) {
  Result plain = sh(std::string(FAKE_GPU_JOB) + " graph");
  ASSERT_EQ(plain.status, 0) << plain.out;
  ASSERT_EQ(plain.values["capture_rc"], "0") << plain.out;
  const std::string db = db_path("graph");
  Result r = sh(recorded(db, "EDO_FLUSH_MS=10 FAKE_WAIT_FOREIGN_CALLS=1") + " graph");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["capture_rc"], "0") << "edo broke the job's CUDA graph capture (904: unjoined, 901: invalidated):\n"
                                         << r.out;
  EXPECT_NE(r.values["foreign_calls_during_capture"], "0")
      << "edo's background thread made no driver call during the capture (the test needs one):\n" << r.out;
  EXPECT_EQ(r.values["graph_replays"], "5") << r.out;
  EXPECT_EQ(r.values["checksum"], plain.values["checksum"]) << r.out;
  EXPECT_EQ(r.values["launch_errors"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const edo::model::Table* a = nullptr;
  for (const auto& t : p.tables)
    if (t.name == "fake.emb.a") a = &t;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->aggregate.lookups(), 6u * 1000u) << "one eager batch and five replays of the captured one";
  for (uint64_t row = 0; row < 100; row += 9) ASSERT_EQ(a->aggregate.count(row), 60u) << row;
  const auto* gather = kernel(p, "gather_rows(");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->launches, 6u) << "one eager launch and five graph replays; the captured launch ran nothing";
  const auto* ga = per_table(*gather, "fake.emb.a");
  ASSERT_NE(ga, nullptr);
  EXPECT_EQ(ga->launches, 6u);
  EXPECT_EQ(ga->total_ns, gather->total_ns) << "the replayed kernels' GPU time was not tied to fake.emb.a";
  std::filesystem::remove(db);
}

// Issue 21.3: without EDO_CUPTI_PATH, edo finds the libcupti the job's CUDA stack brings (the
// one mapped, or beside the mapped libcudart) rather than giving up or loading another copy,
// and names the file it used.
TEST(FakeGpu, CuptiIsFoundBesideTheJobsCudaAndNamed) {
  const std::string db = db_path("locate");
  Result r = sh("env -u EDO_CUPTI_PATH " EDO_BIN " record -o " + db + " -- " FAKE_GPU_JOB);
  ASSERT_EQ(r.status, 0) << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  EXPECT_EQ(p.metadata.count("cupti") ? p.metadata.at("cupti") : "", "active") << r.out;
  ASSERT_TRUE(p.metadata.count("cupti.library")) << "edo does not say which libcupti it used";
  std::error_code ec;
  EXPECT_TRUE(std::filesystem::equivalent(p.metadata.at("cupti.library"), FAKE_CUPTI, ec))
      << p.metadata.at("cupti.library") << " is not the job's " << FAKE_CUPTI;
  std::filesystem::remove(db);
}

// Issue 21.2: a kernel handle reused after its module was unloaded gets the new kernel's
// parameter layout, not the cached one of the kernel that had the handle before.
TEST(FakeGpu, AReusedKernelHandleIsNotReadWithTheOldLayout) {
  const std::string db = db_path("reload");
  Result r = sh(recorded(db) + " reload");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["launch_errors"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  const auto* first = kernel(p, "first(");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->tables, std::vector<std::string>{"fake.emb.a"});
  const auto* second = kernel(p, "second(");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->tables, std::vector<std::string>{"fake.emb.b"})
      << "the reused handle was read with the unloaded kernel's layout";
  std::filesystem::remove(db);
}

// Issue 21 §6: the CUPTI side's state has a lifetime per part (cupti_state.h): what one
// process's subscription collects (parameter layouts, pending launches, live allocations,
// correlation ids, spare buffers) is replaced in a forked child, whose callbacks must not wait
// on a lock a thread of the parent held at the fork. Children forked while another thread is
// inside a launch callback (the tracer asking the driver for a kernel's parameters) neither
// hang (before, each waited for ever on the layout lock) nor report anything of the parent's;
// each records its own launch, tied to the table, and its own allocation.
TEST(FakeGpu, AForkedChildStartsCleanWhileAnotherThreadIsInsideALaunchCallback) {
  const std::string db = db_path("cupti_fork");
  Result r = sh(recorded(db) + " cupti_fork");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.values["launcher_inside_callback"], "1") << r.out;
  EXPECT_EQ(r.values["cupti_fork_hung"], "0") << r.out;
  EXPECT_EQ(r.values["cupti_fork_children"], "3") << r.out;
  EXPECT_EQ(r.values["launch_errors"], "0") << r.out;
  edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(p.sessions.size(), 4u) << r.out;
  int64_t parent = 0;  // the session whose process's parent traced nothing (edo record)
  for (const auto& s : p.sessions)
    if (std::none_of(p.sessions.begin(), p.sessions.end(), [&](const auto& o) { return o.pid == s.parent_pid; }))
      parent = s.id;
  ASSERT_NE(parent, 0);
  for (const auto& s : p.sessions) {
    std::map<std::string, const edo::model::KernelStat*> kernels;
    for (const auto& k : p.kernels)
      if (k.session_id == s.id) kernels[k.name.substr(0, k.name.find('('))] = &k;
    int64_t allocated = 0, freed = 0;
    for (const auto& e : p.memory_events)
      if (e.session_id == s.id) (e.bytes > 0 ? allocated : freed) += e.bytes;
    const std::string mine = s.id == parent ? "parent_fill" : "child_fill";
    ASSERT_EQ(kernels.size(), 1u) << "session " << s.id << ": its own kernel, and only that";
    ASSERT_EQ(kernels.count(mine), 1u) << "session " << s.id;
    EXPECT_EQ(kernels[mine]->launches, 1u);
    EXPECT_EQ(kernels[mine]->tables, std::vector<std::string>{"fork.emb"});
    if (s.id != parent) {
      EXPECT_EQ(allocated, 64) << "child " << s.pid << ": its own allocation only";
      EXPECT_EQ(freed, -64) << "child " << s.pid;
    }
  }
  std::filesystem::remove(db);
}

// Issue 21.3: edo attaches to CUDA (CUPTI) as soon as the runtime is mapped but makes no driver
// call before the job's first CUDA call (cuInit reads CUDA_VISIBLE_DEVICES).
TEST(FakeGpu, EdoDoesNotInitialiseCudaBeforeTheJob) {
  const std::string db = db_path("late_init");
  Result r = sh(recorded(db) + " late_init");
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_EQ(r.values["tool_attached"], "1") << "edo never attached: the check below would prove nothing\n" << r.out;
  EXPECT_EQ(r.values["driver_calls_before_the_job"], "0") << r.out;
  std::filesystem::remove(db);
}

// Issue 19 point 5: the recording names the GPU its tables were counted on (cuDeviceGetName at
// the context's set-up), so that `edo tune` on a machine without that GPU models its times for
// it (a stored device profile of that name) instead of measuring on the CPU.
TEST(FakeGpu, TheRecordingNamesItsGpuAndTuneModelsForIt) {
  const std::string db = db_path("gpu_name");
  Result traced = sh(recorded(db, "FAKE_CUDA_DEVICE_NAME='NVIDIA H200'"));
  ASSERT_EQ(traced.status, 0) << traced.out;
  const edo::model::Profile p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  bool named = false;
  for (const auto& s : p.sessions) named = named || s.gpus == "NVIDIA H200";
  ASSERT_TRUE(named) << "no session names the fake GPU:\n" << traced.out;
  Result tune = sh(std::string(EDO_BIN) + " tune " + db + " --budget 1GiB --strategies fp16 --reps 1 --json");
  ASSERT_EQ(tune.status, 0) << tune.out;
  EXPECT_NE(tune.out.find("\"kind\": \"modelled\""), std::string::npos) << tune.out.substr(0, 2000);
  EXPECT_NE(tune.out.find("\"device\": \"NVIDIA H200\""), std::string::npos) << tune.out.substr(0, 2000);
  // Another name: no stored profile, measured on the CPU, and the note says which GPU it was.
  const std::string other = db_path("gpu_other");
  ASSERT_EQ(sh(recorded(other, "FAKE_CUDA_DEVICE_NAME='Fake GPU 9000'")).status, 0);
  tune = sh(std::string(EDO_BIN) + " tune " + other + " --budget 1GiB --strategies fp16 --reps 1");
  ASSERT_EQ(tune.status, 0) << tune.out;
  EXPECT_NE(tune.out.find("Fake GPU 9000"), std::string::npos) << tune.out.substr(0, 2000);
}
