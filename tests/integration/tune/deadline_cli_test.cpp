// Issue 31: `edo tune --time-limit S` is the whole command's limit, setting up included. On this
// recording (1,500 tables of 1,000..100,000 rows, 20,000 lookups each) the held-out replays of
// the tables' recorded order alone take longer than the limit: before, `--time-limit 8` took
// 11.1 s on the loaded 2-core VM and measured nothing. Now the replays run largest table first
// while setting up has used a quarter of the limit, the other tables' offloads take the recorded
// curve's estimate and say so, and the command ends in time (5.8 s) with every baseline measured
// or predicted.
//
// Robust on a loaded machine: the budget is the tables' bytes as recorded, so a plan exists
// whatever was measured (how much a loaded machine measures in the limit decides nothing here);
// what fails without the deadline whatever the machine's speed is the note and the largest-first
// split (the replays of 1,500 tables do not fit in a quarter of the limit on any machine edo runs
// on); the wall clock is checked against the limit with room for process start and a loaded
// machine (5 % and 2 s): without the deadline the command takes longer than that.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>
#include <string>

#include "run_command.h"
#include "temp_dir.h"

using edo::testing::run_command;
using json = nlohmann::json;

namespace {

const std::string kEdo = EDO_BIN;
constexpr int kLimitS = 8;

TEST(TuneDeadline, SettingUpSharesTheTimeLimit) {
  const std::string db = edo::testing::process_temp_dir("edo_tune_deadline_") + "/replays.edodb";
  const auto s = run_command(kEdo + " synth -o " + db +
                             " --tables 1500 --min-rows 1000 --rows 100000 --dim 16 --min-zipf 0.6 --zipf 1.2 --lookups 20000 --seed 5");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const auto rep = run_command(kEdo + " report --json " + db);
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  std::map<std::string, uint64_t> bytes_of;
  uint64_t total = 0;
  const json report = json::parse(rep.out);
  for (const auto& t : report["tables"]) {
    bytes_of[t["name"].get<std::string>()] = t["total_bytes"].get<uint64_t>();
    total += t["total_bytes"].get<uint64_t>();
  }

  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_command(kEdo + " tune " + db + " --budget " + std::to_string(total) + " --time-limit " +
                             std::to_string(kLimitS) + " --json");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(wall, 1.05 * kLimitS + 2.0) << "edo tune --time-limit " << kLimitS << " took " << wall << " s";
  const json plan = json::parse(r.out);
  EXPECT_TRUE(plan["feasible"].get<bool>());
  EXPECT_EQ(plan["time_limit_s"].get<double>(), kLimitS);

  // The note: for how many tables the replay ran, and for how many not.
  std::string note;
  for (const auto& n : plan["notes"])
    if (n.get<std::string>().rfind("time limit: the held-out replay", 0) == 0) note = n.get<std::string>();
  ASSERT_FALSE(note.empty()) << "no note on the replays cut by the time limit: " << plan["notes"].dump();

  // Each tuned table's offloads (all candidates are in the database the run saved) were replayed
  // (held out) or estimated, saying why; the replayed ones are the largest (no estimated table
  // larger than a replayed one).
  uint64_t smallest_replayed = UINT64_MAX, largest_estimated = 0;
  size_t replayed = 0, estimated = 0;
  std::map<std::string, int> kind_of;  // table -> 1 replayed, 2 estimated
  SQLite::Database file(db, SQLite::OPEN_READONLY);
  SQLite::Statement q(file, "SELECT table_name, params, heldout_hit_rate FROM tune_candidates WHERE strategy = 'offload'"
                            " AND run_id = (SELECT MAX(id) FROM tune_runs)");
  while (q.executeStep()) {
    const std::string table = q.getColumn(0).getString();
    const json p = json::parse(q.getColumn(1).getString());
    int kind = 0;
    if (p.contains("heldout")) {
      kind = 1;
      EXPECT_FALSE(q.getColumn(2).isNull()) << table;
    } else {
      ASSERT_TRUE(p.contains("hit_rate_estimated")) << table << " " << p.dump();
      EXPECT_EQ(p["hit_rate_estimated"].get<std::string>().rfind("not replayed within --time-limit", 0), 0u) << p.dump();
      EXPECT_TRUE(q.getColumn(2).isNull()) << table;
      kind = 2;
    }
    ASSERT_TRUE(kind_of.emplace(table, kind).first->second == kind) << table << ": some offloads replayed, some not";
  }
  for (const auto& [table, kind] : kind_of) {
    ASSERT_TRUE(bytes_of.count(table)) << table;
    if (kind == 1) {
      ++replayed;
      smallest_replayed = std::min(smallest_replayed, bytes_of[table]);
    } else {
      ++estimated;
      largest_estimated = std::max(largest_estimated, bytes_of[table]);
    }
  }
  EXPECT_GT(estimated, 0u);
  // The note counts every tuned table (one without a cache size worth offering has no offload).
  unsigned ran = 0, not_run = 0;
  ASSERT_EQ(std::sscanf(note.c_str(), "time limit: the held-out replay of the recorded order ran for the %u largest tuned tables, "
                        "not for the other %u", &ran, &not_run), 2) << note;
  EXPECT_GE(ran, replayed) << note;
  EXPECT_GE(not_run, estimated) << note;
  EXPECT_GT(not_run, 0u) << note;
  if (replayed > 0) {
    EXPECT_LE(largest_estimated, smallest_replayed) << "replays go to the largest tables first";
  }
}

}  // namespace
