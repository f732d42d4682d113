// Caches from the real stream, end to end (issue 19 points 1 and 6): a C job whose right
// answers are known by hand (heldout_job.c: a cyclic scan, rows first read late) recorded by
// `edo record` through the tracer, then `edo tune --json`: each offload cache's held-out hit
// rate beside the recorded one, and the words of the plan.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_command.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using edo::testing::run_command;
using json = nlohmann::json;

namespace {

const std::string kEdo = EDO_BIN;

std::string recording() {
  static const std::string path = [] {
    const std::string p = (fs::path(edo::testing::process_temp_dir("edo_heldout_cli_")) / "job.edodb").string();
    const auto r = run_command(kEdo + " record -o " + p + " -- " + HELDOUT_JOB);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return p;
  }();
  return path;
}

TEST(HeldOutCli, ARecordedScanAndLateRowsGetTheirHandComputedHitRates) {
  // 150000 bytes: under one table as recorded (262144), so both are offloaded.
  const auto r = run_command(kEdo + " tune " + recording() + " --budget 150000 --strategies offload --max-error inf --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json plan = json::parse(r.out);
  std::map<std::string, json> chosen;
  for (const auto& t : plan["tables"]) chosen[t["name"].get<std::string>()] = t;
  ASSERT_TRUE(chosen.count("scan") && chosen.count("late")) << r.out;
  // The scan: the cache fitted on steps 0..6 holds the whole cycle and hits every held-out
  // reference.
  const json& scan = chosen["scan"];
  EXPECT_EQ(scan["strategy"], "offload") << scan.dump();
  EXPECT_EQ(scan["params"]["cache_rows"], 1000) << scan.dump();
  EXPECT_EQ(scan["heldout_hit_rate"], 1.0) << scan.dump();
  EXPECT_EQ(scan["hit_rate"], 1.0) << scan.dump();
  // Recorded: the whole recording's LRU curve (its first pass is cold: 90 %), or the coverage
  // of 1000 rows (all of them) for a static hot set.
  EXPECT_NEAR(scan["recorded_hit_rate"].get<double>(), scan["params"]["policy"] == "lru" ? 0.9 : 1.0, 1e-9) << scan.dump();
  EXPECT_NE(scan["why"].get<std::string>().find("held out"), std::string::npos) << scan.dump();
  // The late rows: a static hot set fitted early hits nothing held out; an LRU of 100 rows
  // 2900 of 3000.
  const json& late = chosen["late"];
  EXPECT_EQ(late["strategy"], "offload") << late.dump();
  EXPECT_EQ(late["params"]["cache_rows"], 100) << late.dump();
  ASSERT_TRUE(late["heldout_hit_rate"].is_number()) << late.dump();
  if (late["params"]["policy"] == "static") {
    EXPECT_EQ(late["heldout_hit_rate"], 0.0) << late.dump();
  } else {
    EXPECT_NEAR(late["heldout_hit_rate"].get<double>(), 2900.0 / 3000.0, 1e-12) << late.dump();
  }
}

}  // namespace
