// The SSD tier end to end (issue 35 point 2): mch_job.c's 2 GiB table "big" (2^27 rows x 4 fp32,
// 1000 uniform ids a step for 50 steps) under `edo record`, then `edo tune` with a device budget
// of 1 GiB and a host budget of 1 GiB, below its bytes: the plan keeps it on the SSD behind a
// device and a host cache, with the bytes per tier FBGEMM's SSD TBE allocates for those caches
// and the hit rates of an exact two-level replay of the job's own ids (regenerated here from the
// job's generator) on the held-out 30 %; the printed plan and `edo report` show its tier; a host
// or SSD budget no plan can meet is a one-line error naming the tier and the shortfall;
// --ssd-budget alone offers the tier; a device profile's storage figures cost the SSD reads.
// Trained (mch_job --train-big: Adam state recorded for "big"), the table trains on the SSD tier
// with row-wise Adagrad (its state on the device for every row: ssd_candidates.h), its step
// pays the replay's write-backs, and `edo export --format torchrec` gives it TorchRec's
// KEY_VALUE kernel with that optimizer; with EDO_TORCHREC_PYTHON the exported file goes through
// the real TorchRec (check_torchrec_key_value.py, a cuda topology).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_command.h"
#include "ssd_replay.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using edo::testing::run_command;
using json = nlohmann::json;

namespace {

const std::string kEdo = EDO_BIN;

std::string record(const std::string& name, const std::string& args) {
  const std::string dir = edo::testing::process_temp_dir("edo_ssd_cli_");
  const std::string path = (fs::path(dir) / name).string();
  const auto c = run_command(kEdo + " record -o " + path + " -- " + MCH_JOB + args);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  return path;
}

const std::string& recording() {
  static const std::string db = record("job.edodb", "");
  return db;
}

const std::string& trained_recording() {
  static const std::string db = record("trained.edodb", " --train-big");
  return db;
}

const std::string kTune = " --budget 1GiB --host-budget 1GiB --strategies ssd --max-error inf";

json tune(const std::string& db) {
  const auto r = run_command(kEdo + " tune " + db + kTune + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return json::parse(r.out, nullptr, false);
}

const json& tuned() {
  static const json plan = tune(recording());
  return plan;
}

// mch_job.c's "big" ids, as its generator makes them (xorshift64*, the ids table's 1000 draws
// first in every step).
edo::tuner::ReplayStream big_stream() {
  uint64_t state = 0x2545F4914F6CDD1DULL;
  auto next = [&] {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
  };
  edo::tuner::ReplayStream s;
  for (uint64_t step = 0; step < 50; ++step) {
    for (int k = 0; k < 1000; ++k) (void)next();
    for (int k = 0; k < 1000; ++k) {
      s.rows.push_back(next() & ((uint64_t{1} << 27) - 1));
      s.batch.push_back(step);
    }
  }
  s.split = 35000;  // 70 % of the 50,000 lookups (cache_replay.h)
  return s;
}

json table_named(const json& plan, const std::string& name) {
  for (const auto& t : plan["tables"])
    if (t["name"] == name) return t;
  return json();
}

TEST(SsdTierCli, TheTableOverTheHostBudgetIsOnTheSsdWithTheRatesOfAnExactReplay) {
  const json& plan = tuned();
  ASSERT_FALSE(plan.is_discarded());
  ASSERT_TRUE(plan["feasible"].get<bool>()) << plan.dump();
  EXPECT_EQ(plan["host_budget_bytes"], uint64_t{1} << 30);
  EXPECT_TRUE(plan["ssd_budget_bytes"].is_null());
  const json big = table_named(plan, "big");
  ASSERT_EQ(big["strategy"], "ssd") << big.dump();
  EXPECT_EQ(big["tier"], "ssd");
  EXPECT_EQ(big["spec"], "fp32");
  EXPECT_EQ(big["ssd_bytes"], uint64_t{2} << 30);
  const json& p = big["params"];
  const uint64_t l1 = p["device_cache_rows"], l2 = p["host_cache_rows"];
  EXPECT_EQ(p["row_bytes"], 16);
  // Device: ceil(L1 / 32) x 32 slots of 16-byte rows plus two int64 of state each. Host: L2 rows
  // and two eviction buffers (rows, an int64 index and an int32 slot per slot, an int32 count).
  const uint64_t slots = (l1 + 31) / 32 * 32;
  EXPECT_EQ(big["device_bytes"].get<uint64_t>(), slots * 32) << p.dump();
  EXPECT_EQ(big["host_bytes"].get<uint64_t>(), l2 * 16 + 2 * (slots * 28 + 4)) << p.dump();
  EXPECT_LE(big["host_bytes"].get<uint64_t>() + table_named(plan, "ids")["host_bytes"].get<uint64_t>(), uint64_t{1} << 30);
  // The whole stream is sampled: the rates are those of the exact replay, at those sizes.
  EXPECT_EQ(p["heldout"]["sample_rate"], 1.0);
  const edo::tuner::TwoLevelCount want = edo::tuner::replay_two_level(big_stream(), l1, l2);
  ASSERT_EQ(want.refs, 15000u);
  EXPECT_DOUBLE_EQ(p["device_hit_rate"].get<double>(), want.device_rate()) << p.dump();
  EXPECT_DOUBLE_EQ(p["host_hit_rate"].get<double>(), want.host_rate()) << p.dump();
  EXPECT_NEAR(p["ssd_reads_per_step"].get<double>(), 1000 * want.ssd_rate(), 1e-9);
  EXPECT_NEAR(p["host_fetches_per_step"].get<double>(), 1000 * (1 - want.device_rate()), 1e-9);
  // Uniform ids over 2^27 rows barely repeat: nearly every lookup is an SSD read.
  EXPECT_GT(want.ssd_rate(), 0.99);
  // No storage figures on this machine: TorchRec's 100 MiB/s, said in the candidate.
  EXPECT_NE(p["storage"].get<std::string>().find("100 MiB/s"), std::string::npos) << p.dump();
  EXPECT_EQ(plan["plan"]["ssd_bytes"].get<uint64_t>(),
            big["ssd_bytes"].get<uint64_t>() + table_named(plan, "ids")["ssd_bytes"].get<uint64_t>());
}

TEST(SsdTierCli, ThePrintedPlanAndTheReportShowEachTablesTier) {
  ASSERT_FALSE(tuned().is_discarded());
  const auto r = run_command(kEdo + " report " + recording());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("TIER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("host 1.00 GiB"), std::string::npos) << r.out;
  bool big_on_ssd = false;
  size_t at = 0;
  while ((at = r.out.find("\nbig ", at)) != std::string::npos) {
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    big_on_ssd = big_on_ssd || (line.find(" ssd ") != std::string::npos && line.find("2.00 GiB") != std::string::npos);
    ++at;
  }
  EXPECT_TRUE(big_on_ssd) << r.out;
}

TEST(SsdTierCli, AHostBudgetNoPlanMeetsNamesTheTierAndTheShortfall) {
  ASSERT_FALSE(tuned().is_discarded());
  const auto r = run_command(kEdo + " tune " + recording() + " --budget 1GiB --host-budget 1KiB --strategies ssd --max-error inf");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the host budget of 1.00 KiB is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("raise --host-budget"), std::string::npos) << r.err;
}

TEST(SsdTierCli, AnSsdBudgetBoundsThePlanAndOneNoPlanMeetsNamesTheShortfall) {
  ASSERT_FALSE(tuned().is_discarded());
  // --ssd-budget alone offers the tier to the tables over what --budget leaves them: both
  // (512 GiB and 2 GiB) on the SSD within 1 TiB.
  const auto ok = run_command(kEdo + " tune " + recording() + " --budget 1GiB --ssd-budget 1TiB --strategies ssd --max-error inf --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  const json plan = json::parse(ok.out, nullptr, false);
  EXPECT_EQ(table_named(plan, "big")["tier"], "ssd") << ok.out;
  EXPECT_EQ(plan["plan"]["ssd_bytes"], (uint64_t{514} << 30));
  EXPECT_EQ(plan["ssd_budget_bytes"], uint64_t{1} << 40);
  EXPECT_TRUE(plan["host_budget_bytes"].is_null());
  // 513 GiB holds one of them, and the other does not fit the device: no plan, named.
  const auto r = run_command(kEdo + " tune " + recording() + " --budget 1GiB --ssd-budget 513GiB --strategies ssd --max-error inf");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the SSD budget of 513.00 GiB is 1.00 GiB short of the 514.00 GiB"), std::string::npos) << r.err;
}

TEST(SsdTierCli, AProfilesStorageFiguresCostTheSsdReads) {
  ASSERT_FALSE(tuned().is_discarded());
  // An edo.device/1 profile with the storage `edo bench --storage DIR --save-device` stores:
  // 4096-byte row reads at 250,000 per second at queue depth 32 (4 us each), a 50 GB/s link.
  const json storage = {{"dir", "/mnt/nvme"},         {"file_bytes", 1 << 30},     {"block_bytes", 4096},
                        {"row_bytes", 16},            {"row_read_bytes", 4096},    {"seq_read_gbs", 6.5},
                        {"seq_write_gbs", 3.0},       {"method", "psync threads"},
                        {"random_4k_qd1", {{"reads_per_s", 12000}, {"mean_latency_us", 80}}},
                        {"random_4k_qd32", {{"reads_per_s", 250000}, {"mean_latency_us", 120}}},
                        {"row_qd1", {{"reads_per_s", 12000}, {"mean_latency_us", 80}}},
                        {"row_qd32", {{"reads_per_s", 250000}, {"mean_latency_us", 120}}}};
  const json device = {{"schema", "edo.device/1"}, {"name", "Test SSD box"}, {"source", "written by the test"},
                       {"memory_gbs", 3000},        {"onchip_gbs", 10000},       {"host_link_gbs", 50},
                       {"host_link_measured", true}, {"host_link_basis", "test"}, {"launch_us", 5},
                       {"launch_measured", true},   {"launch_basis", "test"},    {"storage", storage}};
  const std::string file = (fs::path(recording()).parent_path() / "device.json").string();
  std::ofstream(file) << device.dump();
  const auto r = run_command(kEdo + " tune " + recording() + kTune + " --target-device " + file + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json big = table_named(json::parse(r.out, nullptr, false), "big");
  ASSERT_EQ(big["strategy"], "ssd") << r.out;
  const json& p = big["params"];
  EXPECT_DOUBLE_EQ(p["ssd_read_us"].get<double>(), 4.0);
  EXPECT_EQ(p["ssd_queue_depth"], 32);
  EXPECT_EQ(p["host_link_gbs"], 50);
  EXPECT_NE(p["storage"].get<std::string>().find("queue depth 32 measured by edo bench --storage (device profile Test SSD box)"),
            std::string::npos) << p.dump();
}

TEST(SsdTierCli, ATrainedTableTrainsOnTheSsdWithRowwiseAdagradAndPaysItsWriteBacks) {
  const json plan = tune(trained_recording());
  ASSERT_FALSE(plan.is_discarded());
  ASSERT_TRUE(plan["feasible"].get<bool>()) << plan.dump();
  const json big = table_named(plan, "big");
  ASSERT_EQ(big["strategy"], "ssd") << big.dump();
  EXPECT_EQ(big["tier"], "ssd");
  EXPECT_EQ(big["optimizer"], "rowwise_adagrad");
  EXPECT_EQ(big["recorded_optimizer"], "adam");
  EXPECT_TRUE(big["needs_retraining"].get<bool>());
  const json& p = big["params"];
  EXPECT_NE(p["optimizer_why"].get<std::string>().find("trained with adam as recorded"), std::string::npos) << p.dump();
  const uint64_t l1 = p["device_cache_rows"], l2 = p["host_cache_rows"];
  // Device: the L1 (as untrained) and row-wise Adagrad's fp32 for each of the 2^27 rows.
  const uint64_t slots = (l1 + 31) / 32 * 32;
  EXPECT_EQ(p["optimizer_state_bytes"], uint64_t{1} << 29);
  EXPECT_EQ(big["device_bytes"].get<uint64_t>(), slots * 32 + (uint64_t{1} << 29)) << p.dump();
  EXPECT_EQ(big["host_bytes"].get<uint64_t>(), l2 * 16 + 2 * (slots * 28 + 4)) << p.dump();
  EXPECT_EQ(big["ssd_bytes"], uint64_t{2} << 30);
  // The write-backs of the exact replay of the job's ids at those sizes.
  const edo::tuner::TwoLevelCount want = edo::tuner::replay_two_level(big_stream(), l1, l2);
  ASSERT_EQ(want.refs, 15000u);
  EXPECT_NEAR(p["writebacks_per_step"].get<double>(), 1000.0 * static_cast<double>(want.writebacks) / 15000, 1e-9);
  EXPECT_NEAR(p["ssd_writes_per_step"].get<double>(), 1000.0 * static_cast<double>(want.ssd_writes) / 15000, 1e-9);
  EXPECT_GT(want.ssd_writes, 14000u) << "uniform ids over 2^27 rows: nearly every lookup evicts a dirty row to the SSD";
  EXPECT_NE(p["storage_writes"].get<std::string>().find("100 MiB/s"), std::string::npos) << p.dump();

  // Exported for TorchRec: the KEY_VALUE kernel, trained with row-wise Adagrad.
  const std::string dir = fs::path(trained_recording()).parent_path().string();
  const std::string plan_json = dir + "/plan.json", plan_py = dir + "/plan.py", tables = dir + "/tables.json";
  std::ofstream(plan_json) << plan.dump();
  const auto e = run_command(kEdo + " export " + plan_json + " --format torchrec -o " + plan_py);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  std::ifstream in(plan_py);
  const std::string py((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = py.find("\n    \"big\": ParameterConstraints(\n");
  ASSERT_NE(at, std::string::npos) << py;
  EXPECT_EQ(py.find("compute_kernels=[EmbeddingComputeKernel.KEY_VALUE.value]", at), py.find("compute_kernels=", at)) << py;
  EXPECT_NE(py.find("fused_params = {\"optimizer\": EmbOptimType.EXACT_ROWWISE_ADAGRAD}"), std::string::npos) << py;
  EXPECT_NE(py.find("rowwise_adagrad_tables = [\n    \"big\",\n]"), std::string::npos) << py;
  const std::string edo_only = py.substr(py.find("\nedo_only = {"), py.find("\nedo_only_why") - py.find("\nedo_only = {"));
  EXPECT_EQ(edo_only.find("\"big\""), std::string::npos) << edo_only;

  const char* python = std::getenv("EDO_TORCHREC_PYTHON");
  if (!python || !*python) GTEST_SKIP() << "EDO_TORCHREC_PYTHON is not set: the real TorchRec check of the exported file is skipped";
  std::ofstream(tables) << json{{"big", {{"rows", uint64_t{1} << 27}, {"dim", 4}, {"features", {"f_big"}}}},
                                {"ids", {{"rows", uint64_t{1} << 30}, {"dim", 128}, {"features", {"f_ids"}}}}}
                               .dump();
  const auto c = run_command(std::string(python) + " " + CHECK_KEY_VALUE + " " + plan_py + " " + tables);
  if (c.exit_code == 77) GTEST_SKIP() << c.out;
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const json out = json::parse(c.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << c.out;
  const json& kv = out["key_value_tables"]["big"];
  EXPECT_EQ(kv["optimizer"], "EXACT_ROWWISE_ADAGRAD");
  EXPECT_EQ(out["planned"]["big"], json({{"compute_kernel", "key_value"},
                                          {"max_l1_cache_size", kv["max_l1_cache_size_mb"]},
                                          {"l2_cache_size", kv["l2_cache_size_gb"]}}))
      << c.out;
  bool built = false;
  for (const auto& tbe : out["runtime"])
    if (tbe["tables"] == json::array({"big"})) {
      built = true;
      EXPECT_EQ(tbe["cache_sets"].get<uint64_t>() * 32, kv["l1_rows"].get<uint64_t>()) << tbe.dump();
      EXPECT_GE(kv["l1_rows"].get<uint64_t>(), l1);
      EXPECT_EQ(tbe["optimizer"], "EXACT_ROWWISE_ADAGRAD") << tbe.dump();
    }
  EXPECT_TRUE(built) << out["runtime"].dump();
}

}  // namespace
