// The benchmark harness on a tiny shape: JSON shape and sanity (no timing thresholds).
#include <gtest/gtest.h>

#include <cmath>

#include "edo/kernels/bench.h"
#include "edo/kernels/cuda.h"
#include "edo/kernels/backend.h"
#include "edo/kernels/encode.h"
#include "edo/kernels/workload.h"

using namespace edo::kernels;

namespace {
// A shape that measures in milliseconds.
BenchConfig tiny(std::uint64_t rows, std::uint32_t dim, std::uint64_t batch, std::uint32_t pooling, const char* strategies) {
  BenchConfig c;
  c.rows = rows;
  c.dim = dim;
  c.batch = batch;
  c.pooling = pooling;
  c.sets = 2;
  c.reps = 2;
  c.pin = false;
  c.strategies = strategies;
  return c;
}
}  // namespace

TEST(Bench, JsonShape) {
  BenchConfig c = tiny(2000, 16, 512, 8, "fp32,int8,offload:policy=lru");
  c.anchor = false;
  auto rep = run_bench(c);
  auto j = to_json(rep);
  EXPECT_EQ(j["schema"], "edo.bench/1");
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_GE(j["threads"].get<int>(), 1);
  EXPECT_EQ(j["anchor"]["name"], "triad");
  ASSERT_EQ(j["results"].size(), 3u);
  for (const auto& r : j["results"]) {
    for (const char* k : {"strategy", "params", "device_bytes", "host_bytes", "bytes_per_row", "error", "gather_rows_per_s",
                          "bag_rows_per_s", "bag_gbs"})
      EXPECT_TRUE(r.contains(k)) << k;
    EXPECT_GT(r["bag_rows_per_s"].get<double>(), 0);
    EXPECT_GT(r["gather_rows_per_s"].get<double>(), 0);
  }
  EXPECT_EQ(j["results"][0]["error"].get<double>(), 0.0);
  EXPECT_EQ(j["results"][0]["device_bytes"].get<std::uint64_t>(), 2000u * 16 * 4);
  EXPECT_EQ(j["results"][1]["bytes_per_row"].get<double>(), 32.0);
  EXPECT_EQ(j["results"][2]["strategy"], "offload");
  EXPECT_TRUE(j["results"][2].contains("hit_rate"));
  EXPECT_NE(to_text(rep).find("int8"), std::string::npos);
}

TEST(Bench, TriadRuns) { EXPECT_GT(triad_gbs(1, 8 << 20, 2), 0.0); }

TEST(Bench, LatencyRuns) {
  const double ns = memory_latency_ns(4 << 20, 100000);
  EXPECT_GT(ns, 0.0);
  EXPECT_TRUE(std::isfinite(ns));
}

// Strategies are measured interleaved in groups that fit in memory: one table per group
// gives the same results, in the same order, as one group for all; the anchor and the
// latency are in the report.
TEST(Bench, GroupsKeepTheStrategyOrder) {
  BenchConfig c = tiny(1000, 8, 256, 4, "int4,fp32,pruned,offload:policy=static");
  const auto together = run_bench(c);
  c.group_bytes = 1;
  c.anchor = false;
  const auto apart = run_bench(c);
  ASSERT_EQ(together.results.size(), 4u);
  ASSERT_EQ(apart.results.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(together.results[i].strategy, apart.results[i].strategy);
    EXPECT_EQ(together.results[i].device_bytes, apart.results[i].device_bytes);
    EXPECT_EQ(together.results[i].error, apart.results[i].error);
    EXPECT_EQ(together.results[i].hit_rate, apart.results[i].hit_rate);
    EXPECT_GT(apart.results[i].bag_rows_per_s, 0.0);
  }
  EXPECT_EQ(together.results[0].strategy, "int4");
  // Every strategy has its bound from the same run (the random-row probe at its row size);
  // the anchors are sized to this 32 KiB table, not to a DRAM-sized default.
  for (const auto& r : together.results) {
    EXPECT_GT(r.bound_rows_per_s, 0.0) << r.strategy;
    EXPECT_NE(r.bound_basis.find("probe"), std::string::npos) << r.bound_basis;
  }
  EXPECT_FALSE(together.probes.empty());
  EXPECT_LE(together.anchor_bytes, 16u << 20);
  EXPECT_TRUE(to_json(together)["results"][0].contains("bag_vs_bound"));
  EXPECT_NE(to_text(together).find("probe"), std::string::npos);
  EXPECT_GT(together.anchor_gbs, 0.0);
  EXPECT_GT(together.latency_ns, 0.0);
  EXPECT_TRUE(to_json(together)["anchor"].contains("latency_ns"));
  EXPECT_FALSE(to_json(apart)["anchor"].contains("latency_ns"));
}

// The CUDA bounds count whole 32-byte sectors (issue 10: a 144 B int8 row touches 160 B on
// average, an 80 B int4 row 96 B), from the bytes a row's lookup uses.
TEST(Bench, SectorArithmeticAndAccessModels) {
  EXPECT_DOUBLE_EQ(sector_bytes(512, 512), 512);
  EXPECT_DOUBLE_EQ(sector_bytes(144, 144), 160);
  EXPECT_DOUBLE_EQ(sector_bytes(80, 80), 96);
  EXPECT_DOUBLE_EQ(sector_bytes(136, 144), 160);
  EXPECT_DOUBLE_EQ(sector_bytes(68, 80), 96);
  EXPECT_DOUBLE_EQ(sector_bytes(16, 16), 32);
  EXPECT_DOUBLE_EQ(sector_bytes(4, 4), 32);
  EXPECT_DOUBLE_EQ(sector_bytes(40, 40), 64);   // offsets 0, 8, 16, 24: two sectors each
  EXPECT_DOUBLE_EQ(sector_bytes(50, 50), 80);   // 16 offsets: three sectors when off > 14 (8 of 16)

  std::vector<float> w(100 * 128, 0.5f);
  auto i8 = encode(StrategySpec::parse("int8"), w.data(), 100, 128);
  const AccessModel m = access_model(*i8);
  EXPECT_EQ(m.read_bytes, 136);
  EXPECT_EQ(m.stride, 144);
  EXPECT_EQ(m.reads, 1);
  auto mh = encode(StrategySpec::parse("multihash:buckets=10:k=3"), w.data(), 100, 128);
  EXPECT_EQ(access_model(*mh).reads, 3);
  EXPECT_EQ(access_model(*mh).entries, 10u);
  auto pq = encode(StrategySpec::parse("pq:m=16"), w.data(), 100, 128);
  EXPECT_EQ(access_model(*pq).read_bytes, 16);
  EXPECT_EQ(access_model(*pq).onchip_bytes, 512);
  EXPECT_EQ(access_model(*encode(StrategySpec::parse("offload"), w.data(), 100, 128)).index_bytes, 4);
}

TEST(Bench, CudaWithoutDeviceIsOneClearLine) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is present";
  BenchConfig c;
  c.backend = "cuda";
  c.rows = 100;
  try {
    run_bench(c);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("no CUDA device: ", 0), 0u) << e.what();
  }
}

// The Backend a tuner uses, on the CPU: load once, time passes; offload's hit rate comes back;
// a bad index in the workload is refused at load time; "cuda" without a device is one line.
TEST(Bench, CpuBackendTimesLookups) {
  const std::uint64_t R = 5000;
  const std::uint32_t D = 16;
  std::vector<float> w(R * D, 0.25f);
  const Workload work = Workload::fixed_bags(zipf_batches(R, 1.05, 9, 3, 4096), 32);
  auto backend = make_backend("cpu");
  EXPECT_EQ(backend->name(), "cpu");
  for (const char* spec : {"int8", "offload:cache=0.1:policy=lru"}) {
    auto t = encode(StrategySpec::parse(spec), w.data(), R, D);
    auto loaded = backend->load(*t, work);
    EXPECT_EQ(loaded->indices(), 3u * 4096);
    const LookupTimes lt = time_lookups(*loaded, 2, 1);
    EXPECT_GT(lt.bag_rows_per_s, 0.0) << spec;
    EXPECT_GT(lt.gather_s_per_pass, 0.0) << spec;
    EXPECT_EQ(lt.hit_rate >= 0, std::string(spec).rfind("offload", 0) == 0) << spec;
  }
  Workload bad = work;
  bad.batches[1][7] = static_cast<std::int64_t>(R);
  auto t = encode(StrategySpec::parse("fp32"), w.data(), R, D);
  EXPECT_THROW(backend->load(*t, bad), IndexOutOfRange);
  EXPECT_THROW(make_backend("tpu"), std::invalid_argument);
  if (!cuda::available()) {
    try {
      make_backend("cuda");
      FAIL();
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("no CUDA device: ", 0), 0u) << e.what();
    }
  }
}
