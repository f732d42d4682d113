// Caches from the real stream, end to end (issue 19 points 1 and 6): a C job whose right
// answers are known by hand (heldout_job.c: a cyclic scan, rows first read late) recorded by
// `edo record` through the tracer, then `edo tune --json`: each offload cache's held-out hit
// rate beside the recorded one, and the words of the plan.
#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <filesystem>
#include <map>
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

// FBGEMM's set of a row (the MurmurHash3 64-bit finaliser modulo the sets: fbgemm_gpu's
// split_embeddings_cache/common.cuh cache_slot()), written out here again to check edo's.
uint64_t murmur_set(uint64_t h, uint64_t sets) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h % sets;
}

// Issue 34 point 2 end to end: the scan's LRU cache of 1000 rows is 1024 FBGEMM slots in 32 sets
// of 32 ways. Each step reads rows 0..999 once (one batch): a set given n <= 32 of them holds
// them all after the first batch; one given n > 32 fills its 32 ways in the first batch and
// then never takes the others (every way is used by each batch), so FBGEMM's LRU hits
// sum over sets of min(n, 32) of the 1000 held-out lookups a step. Belady's optimal holds all
// 1000 rows in 1024 slots: 1. FBGEMM's LFU, where a set is over full, replaces cached rows by
// missed ones of the same count every batch, and hits less: the plan's policy is LRU.
TEST(HeldOutCli, TheScansPolicyReplaysAreFbgemmsSetConflicts) {
  const auto r = run_command(kEdo + " tune " + recording() + " --budget 150000 --strategies offload --max-error inf --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::map<uint64_t, int> per_set;
  for (uint64_t row = 0; row < 1000; ++row) ++per_set[murmur_set(row, 32)];
  int fbgemm_hits = 0, overfull = 0;
  for (const auto& [set, n] : per_set) {
    fbgemm_hits += std::min(n, 32);
    overfull += n > 32;
  }
  ASSERT_GT(overfull, 0) << "rows 0..999 over 32 sets: some set gets more than 32";
  SQLite::Database db(recording(), SQLite::OPEN_READONLY);
  SQLite::Statement q(db, "SELECT params FROM tune_candidates WHERE table_name = 'scan' AND spec LIKE '%policy=lru%' AND optimizer = '' "
                          "AND run_id = (SELECT MAX(id) FROM tune_runs)");
  int seen = 0;
  while (q.executeStep()) {
    const json p = json::parse(q.getColumn(0).getString());
    if (p["cache_rows"] != 1000) continue;
    ++seen;
    const json& rep = p["policy_replays"];
    EXPECT_EQ(rep["slots"], 1024) << p.dump();
    EXPECT_EQ(rep["sample_rate"], 1.0) << p.dump();
    EXPECT_EQ(rep["lru"], 1.0) << "fully associative, 1024 slots: the whole cycle";
    EXPECT_EQ(rep["optimal"], 1.0);
    EXPECT_NEAR(rep["fbgemm_lru"].get<double>(), fbgemm_hits / 1000.0, 1e-12) << p.dump();
    EXPECT_LT(rep["fbgemm_lfu"].get<double>(), rep["fbgemm_lru"].get<double>()) << p.dump();
    EXPECT_EQ(p["cache_policy"], "lru") << p.dump();
    EXPECT_NEAR(p["policy_headroom"].get<double>(), 1.0 - fbgemm_hits / 1000.0, 1e-12) << p.dump();
    EXPECT_EQ(p["knee_rows"], 1000) << p.dump();
  }
  EXPECT_EQ(seen, 1);
  // The plan record: an LRU choice carries the policy and its headroom; a static one neither.
  const json plan = json::parse(r.out);
  for (const auto& t : plan["tables"]) {
    if (t["strategy"] != "offload") continue;
    if (t["params"]["policy"] == "lru") {
      EXPECT_TRUE(t["cache_policy"] == "lru" || t["cache_policy"] == "lfu") << t.dump();
      EXPECT_GE(t["policy_headroom"].get<double>(), 0.0) << t.dump();
      EXPECT_NE(t["why"].get<std::string>().find("policy headroom"), std::string::npos) << t.dump();
    } else {
      EXPECT_TRUE(t["cache_policy"].is_null()) << t.dump();
    }
  }
}

}  // namespace
