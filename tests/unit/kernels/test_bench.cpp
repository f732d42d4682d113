// The benchmark harness on a tiny shape: JSON shape and sanity (no timing thresholds).
#include <gtest/gtest.h>

#include "kernels/cpu/measure.h"
#include "kernels/cuda/cuda_backend.h"

using namespace edo::kernels;

TEST(Bench, JsonShape) {
  BenchConfig c;
  c.rows = 2000;
  c.dim = 16;
  c.batch = 512;
  c.pooling = 8;
  c.sets = 2;
  c.reps = 2;
  c.anchor = false;
  c.pin = false;
  c.strategies = "fp32,int8,offload:policy=lru";
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
