// Weight snapshots end to end: `edo record --weights` on a C job with known weights and counts
// (host memory, padded rows, an f16 table) and on a PyTorch job (tables trained for a few
// steps, one tied); the snapshots read back from the database hold the hottest rows, a uniform
// sample of the rest, and the job's exact values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "edo/db/profile_store.h"
#include "edo/db/weight_store.h"
#include "run_command.h"

namespace fs = std::filesystem;
using edo::testing::run_command;

namespace {

std::string tmp(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / ("edo_weights_" + std::to_string(getpid()) + "_" + info->name());
  fs::create_directories(dir);
  fs::remove(dir / name);  // a repeated run (--gtest_repeat) records afresh
  return (dir / name).string();
}

const edo::model::WeightSnapshot* find(const std::vector<edo::model::WeightSnapshot>& w, const std::string& name) {
  for (const auto& s : w)
    if (s.table == name) return &s;
  return nullptr;
}

float f32_at(const edo::model::WeightSnapshot& s, size_t i, uint32_t d) {
  float v;
  std::memcpy(&v, s.values.data() + (i * s.dim + d) * 4, 4);
  return v;
}

TEST(WeightSnapshotE2E, CJobHotRowsSampleAndExactValues) {
  const std::string db = tmp("c.edodb");
  auto r = run_command(std::string(EDO_BIN) + " record --weights --weight-rows 1000 -o " + db + " -- " + WEIGHTS_JOB + " bad");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("weights_job done"), std::string::npos);
  edo::db::ProfileStore store(db, edo::db::ProfileStore::Mode::kReadOnly);
  const auto snaps = edo::db::load_weight_snapshots(store);
  ASSERT_EQ(snaps.size(), 2u);
  const auto* big = find(snaps, "model.big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->dtype, "fp32");
  EXPECT_EQ(big->dim, 8u);
  EXPECT_EQ(big->table_rows, 200000u);
  ASSERT_EQ(big->rows.size(), 1000u);
  // The 500 hottest rows are rows 7k for k < 500, most-read first.
  ASSERT_EQ(big->hot_count, 500u);
  for (size_t k = 0; k < 500; ++k) EXPECT_EQ(big->rows[k], 7 * k) << k;
  EXPECT_EQ(big->population, 200000u - 500u);
  std::set<uint64_t> seen;
  for (size_t i = 0; i < big->rows.size(); ++i) {
    EXPECT_TRUE(seen.insert(big->rows[i]).second) << "row twice: " << big->rows[i];
    // Values are the job's (row stride 12 floats honoured), copied before the job cleared them.
    for (uint32_t d = 0; d < 8; ++d) ASSERT_EQ(f32_at(*big, i, d), float(big->rows[i]) + float(d) / 8.0f) << i;
  }
  EXPECT_DOUBLE_EQ(big->inclusion_weight(999), (200000.0 - 500.0) / 500.0);
  // The small table is kept whole.
  const auto* small = find(snaps, "model.small");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->dtype, "fp16");
  ASSERT_EQ(small->rows.size(), 300u);
  EXPECT_EQ(small->population, 0u);
  for (size_t i = 0; i < 300; ++i) {
    uint16_t h;
    std::memcpy(&h, small->values.data() + (i * 4 + 3) * 2, 2);
    EXPECT_EQ(h, small->rows[i] * 4 + 3);
  }
}

TEST(WeightSnapshotE2E, TheTunerComputesErrorsOnTheRecordedWeights) {
  const std::string db = tmp("tune.edodb");
  ASSERT_EQ(run_command(std::string(EDO_BIN) + " record --weights --weight-rows 1000 -o " + db + " -- " + WEIGHTS_JOB).exit_code, 0);
  // model.big is 6.10 MiB in fp32 and 3.05 MiB in int8: a 4 MiB budget leaves int8 the only
  // plan, whatever the timings (a test that let the timings choose failed under load).
  auto r = run_command(std::string(EDO_BIN) + " tune " + db + " --budget 4MiB --strategies int8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out);
  EXPECT_EQ(plan.at("weights"), "recorded");
  const nlohmann::json* big = nullptr;
  for (const auto& t : plan.at("tables"))
    if (t.at("name") == "model.big") big = &t;
  ASSERT_NE(big, nullptr) << r.out.substr(0, 400);
  EXPECT_EQ(big->at("strategy"), "int8");
  // Rows r + d/8 (r up to 200000) in int8: each row's 255 levels over a range of 7/8 round by at
  // most 7/8/255/2 = 0.0017, relative to values near r: tiny but not zero. (Without the recorded
  // weights the tuner would score int8 on synthetic rows, an error near 0.003.)
  const double err = big->at("error").get<double>();
  EXPECT_GT(err, 0.0);
  EXPECT_LT(err, 1e-5);
}

TEST(WeightSnapshotE2E, WithoutTheFlagNothingIsKept) {
  const std::string db = tmp("off.edodb");
  auto r = run_command(std::string(EDO_BIN) + " record -o " + db + " -- " + WEIGHTS_JOB);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  edo::db::ProfileStore store(db, edo::db::ProfileStore::Mode::kReadOnly);
  EXPECT_TRUE(edo::db::load_weight_snapshots(store).empty());
  EXPECT_EQ(store.load().tables.size(), 2u);
}

TEST(WeightSnapshotE2E, BadWeightRowsIsAUsageError) {
  auto r = run_command(std::string(EDO_BIN) + " record --weights --weight-rows 3 -o " + tmp("x.edodb") + " -- " + WEIGHTS_JOB);
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

std::string torch_python() {
  std::vector<std::string> cands;
  if (const char* e = std::getenv("EDO_TEST_PYTHON")) cands.push_back(e);
  cands.push_back("/usr/bin/python3");
  cands.push_back("python3");
  for (const auto& c : cands)
    if (run_command(c + " -c 'import torch, numpy'").exit_code == 0) return c;
  return "";
}

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  std::vector<float> v(s.size() / 4);
  std::memcpy(v.data(), s.data(), v.size() * 4);
  return v;
}

TEST(WeightSnapshotE2E, PyTorchJobHandsItsTrainedWeightsOverAtExit) {
  const std::string py = torch_python();
  if (py.empty()) GTEST_SKIP() << "no python3 with torch and numpy (set EDO_TEST_PYTHON)";
  const std::string db = tmp("torch.edodb"), out = tmp("weights");
  auto r = run_command(std::string(EDO_BIN) + " record --weights --weight-rows 2000 -o " + db + " -- " + py + " " +
                       TORCH_JOB + " " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  edo::db::ProfileStore store(db, edo::db::ProfileStore::Mode::kReadOnly);
  const auto profile = store.load();
  const auto snaps = edo::db::load_weight_snapshots(store);
  // The tied LM head shares the embedding's weights: one snapshot for the pair.
  ASSERT_EQ(snaps.size(), 2u) << r.err;
  const edo::model::WeightSnapshot *emb = nullptr, *bag = nullptr;
  for (const auto& s : snaps) (s.table_rows == 5000 ? emb : bag) = &s;
  ASSERT_TRUE(emb && bag);
  const auto emb_w = read_floats(out + ".emb"), bag_w = read_floats(out + ".bag");
  ASSERT_EQ(emb_w.size(), 5000u * 16);
  ASSERT_EQ(emb->rows.size(), 2000u);
  ASSERT_GT(emb->hot_count, 0u);
  for (size_t i = 0; i < emb->rows.size(); ++i)
    for (uint32_t d = 0; d < 16; ++d) ASSERT_EQ(f32_at(*emb, i, d), emb_w[emb->rows[i] * 16 + d]) << "row " << emb->rows[i];
  // Rows 0, 1, 4 (squares of small ids) are among the most read.
  std::set<uint64_t> hot(emb->rows.begin(), emb->rows.begin() + long(emb->hot_count));
  EXPECT_TRUE(hot.count(0) && hot.count(1) && hot.count(4));
  ASSERT_EQ(bag->rows.size(), 300u);  // below the bound: whole
  for (size_t i = 0; i < bag->rows.size(); ++i)
    for (uint32_t d = 0; d < 8; ++d) ASSERT_EQ(f32_at(*bag, i, d), bag_w[bag->rows[i] * 8 + d]);
  // Adam's moments were recorded by kind (the tuner's optimizer lever reads them).
  bool adam = false;
  for (const auto& t : profile.tables)
    for (const auto& [kind, bytes] : t.extra_by_kind) adam |= kind.rfind("adam.", 0) == 0 && bytes > 0;
  EXPECT_TRUE(adam);
}

}  // namespace
