// The SSD tier end to end (issue 35 point 2): mch_job.c's 2 GiB table "big" (2^27 rows x 4 fp32,
// 1000 uniform ids a step for 50 steps) under `edo record`, then `edo tune` with a device budget
// of 1 GiB and a host budget of 1 GiB, below its bytes: the plan keeps it on the SSD behind a
// device and a host cache, with the bytes per tier FBGEMM's SSD TBE allocates for those caches
// and the hit rates of an exact two-level replay of the job's own ids (regenerated here from the
// job's generator) on the held-out 30 %; the printed plan and `edo report` show its tier; a host
// or SSD budget no plan can meet is a one-line error naming the tier and the shortfall;
// --ssd-budget alone offers the tier; a device profile's storage figures cost the SSD reads.
#include <gtest/gtest.h>

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

const std::string& recording() {
  static const std::string db = [] {
    const std::string dir = edo::testing::process_temp_dir("edo_ssd_cli_");
    const std::string path = (fs::path(dir) / "job.edodb").string();
    const auto c = run_command(kEdo + " record -o " + path + " -- " + MCH_JOB);
    EXPECT_EQ(c.exit_code, 0) << c.err;
    return path;
  }();
  return db;
}

const std::string kTune = " --budget 1GiB --host-budget 1GiB --strategies ssd --max-error inf";

const json& tuned() {
  static const json plan = [] {
    const auto r = run_command(kEdo + " tune " + recording() + kTune + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return json::parse(r.out, nullptr, false);
  }();
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

}  // namespace
