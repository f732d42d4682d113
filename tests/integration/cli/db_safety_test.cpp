// Issue 30 §8-§10 at the user's level: a recording that carries SQL of its own is refused, one
// exit-code table (0 ok, 1 runtime or bad file, 2 bad flags) walked through the commands, damaged
// counts named with their table and file, and a data-parallel headline that says which figures
// sum the ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <SQLiteCpp/Database.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/stats/table_stats.h"
#include "run_command.h"

namespace {

namespace fs = std::filesystem;
namespace model = edo::model;
using edo::testing::run_command;

const std::string kEdo = EDO_BIN;

std::string dir_for_test() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::temp_directory_path() / ("edo-db-safety-" + std::to_string(getpid()) + "-" + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string q(const std::string& path) { return "'" + path + "'"; }

std::string synth(const std::string& path) {
  const auto r = run_command(kEdo + " synth -o " + q(path) + " --tables 2 --rows 200 --lookups 2000");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

int64_t rows_in(const std::string& db, const std::string& table) {
  SQLite::Database d(db, SQLite::OPEN_READONLY);
  return d.execAndGet("SELECT COUNT(*) FROM " + table).getInt64();
}

// Issue 30 §8: a trigger planted in a file deleted every row of `tables` when `edo tune` wrote to
// it. Now every command refuses the file, in one line naming the object, exit 1, and its rows
// are untouched; a view is refused the same way.
TEST(DbSafety, APlantedTriggerIsRefusedAndRunsNothing) {
  const std::string dir = dir_for_test();
  const std::string db = synth(dir + "/planted.edodb");
  {
    SQLite::Database d(db, SQLite::OPEN_READWRITE);
    d.exec("CREATE TRIGGER wipe AFTER INSERT ON tune_runs BEGIN DELETE FROM tables; END");
  }
  const int64_t before = rows_in(db, "tables");
  ASSERT_EQ(before, 2);
  for (const std::string cmd : {" tune --budget 1GiB --backend cpu ", " report ", " report --json ", " export --format json "}) {
    const auto r = run_command(kEdo + cmd + q(db));
    EXPECT_EQ(r.exit_code, 1) << cmd << r.err;
    EXPECT_NE(r.err.find(db), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("holds SQL objects edo did not create (trigger wipe)"), std::string::npos) << cmd << r.err;
    EXPECT_EQ(r.err.find("disk space"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(rows_in(db, "tables"), before);
  EXPECT_EQ(rows_in(db, "tune_runs"), 0);

  const std::string db2 = synth(dir + "/view.edodb");
  {
    SQLite::Database d(db2, SQLite::OPEN_READWRITE);
    d.exec("CREATE VIEW v AS SELECT * FROM tables");
  }
  const auto r = run_command(kEdo + " report " + q(db2));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("view v"), std::string::npos) << r.err;
}

// Issue 30 §4, for every writer of an .edodb: several `edo synth --force -o` of one file at once
// (and over an earlier recording) leave one whole recording, and no file of theirs beside it.
// (Before, the race lost the file in about one round in three; four rounds of four writers.)
TEST(DbSafety, ConcurrentForcedSynthsLeaveOneWholeRecording) {
  const std::string dir = dir_for_test(), db = synth(dir + "/same.edodb");
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::string cmd = "cd " + q(dir) + " && (";
    for (int i = 1; i <= 4; ++i)
      cmd += kEdo + " synth --force -o same.edodb --tables 2 --rows 100000 --lookups 1000000 --seed " + std::to_string(i) +
             " 2>>err.txt & ";
    cmd += "wait)";
    const auto r = run_command(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rep = run_command(kEdo + " report --json " + q(db));
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    EXPECT_NE(rep.out.find("\"rows\": 100000"), std::string::npos) << "a recording of the synths, not the earlier one";
    size_t whole = 0;
    for (size_t at = rep.out.find("\"lookups\": 1000000"); at != std::string::npos;
         at = rep.out.find("\"lookups\": 1000000", at + 1))
      ++whole;
    EXPECT_EQ(whole, 2u) << rep.out.substr(0, 2000);
    for (const auto& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().filename().string().find("edo-writing"), std::string::npos) << e.path();
  }
}

// Issue 30 §9: one exit-code table. 2 is for the command line only; a bad or existing file is 1,
// the same in every command.
TEST(DbSafety, ExitCodesFollowOneTable) {
  const std::string dir = dir_for_test();
  const std::string db = synth(dir + "/run.edodb");
  ASSERT_EQ(run_command(kEdo + " tune --budget 1GiB --backend cpu " + q(db)).exit_code, 0);
  const std::string plan = dir + "/plan.json", bad_plan = dir + "/bad.json";
  ASSERT_EQ(run_command(kEdo + " export --format json -o " + q(plan) + " " + q(db)).exit_code, 0);
  std::ofstream(bad_plan) << "{\"bad\": 1}\n";
  struct Case {
    std::string args;
    int code;
  };
  const std::vector<Case> cases = {
      // 0: ok
      {" report " + q(db), 0},
      {" export --format yaml " + q(plan), 0},
      // 1: a bad, missing or existing file
      {" export --format yaml " + q(bad_plan), 1},                             // an invalid plan file
      {" diff --plan " + q(bad_plan) + " " + q(db), 1},                        // the same, in diff
      {" export --format json -o " + q(plan) + " " + q(db), 1},                // an existing -o
      {" synth -o " + q(db) + " --tables 1 --rows 10 --lookups 10", 1},       // an existing -o
      {" record -o " + q(db) + " -- /bin/true", 1},                            // an existing -o
      {" report " + q(dir + "/missing.edodb"), 1},                             // a missing file
      {" report " + q(bad_plan), 1},                                           // not a recording
      {" import " + q(dir + "/missing.edotrace") + " -o " + q(dir + "/i.edodb"), 1},  // a missing input
      {" merge " + q(db) + " " + q(dir + "/missing.edodb") + " -o " + q(dir + "/m.edodb"), 1},
      {" tune --budget 1GiB --target-device " + q(bad_plan) + " " + q(db), 1},  // a file, not a device profile
      // 2: bad flags
      {" report --no-such-flag " + q(db), 2},
      {" tune --budget lots " + q(db), 2},
      {" export --format xml " + q(db), 2},
      {" record -o " + q(dir + "/x.edodb"), 2},  // no command
      {" tune --budget 1GiB --target-device no-such-gpu " + q(db), 2},
      {" import", 2},  // no input
  };
  for (const auto& c : cases) {
    const auto r = run_command(kEdo + c.args);
    EXPECT_EQ(r.exit_code, c.code) << "edo" << c.args << "\n" << r.err;
    if (c.code != 0) {
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "edo" << c.args << "\n" << r.err;
    }
    if (c.code == 1) {
      EXPECT_EQ(r.err.find("--help"), std::string::npos) << "a file error is not a usage error: " << r.err;
    }
  }
}

// Issue 30 §9: corrupt counts said "table too large (see 'edo tune --help')", exit 2, naming
// neither table nor file, and negative counts showed as 18446744073709551615. A negative count is
// damage (every reader, exit 1, table and file named); a row count no table has is refused by
// edo tune the same way.
TEST(DbSafety, DamagedCountsNameTheirTableAndFile) {
  const std::string dir = dir_for_test();
  const std::string neg = synth(dir + "/negative.edodb"), huge = synth(dir + "/huge.edodb");
  {
    SQLite::Database d(neg, SQLite::OPEN_READWRITE);
    d.exec("UPDATE tables SET rows = -1 WHERE name = (SELECT MIN(name) FROM tables)");
  }
  std::string name;
  {
    SQLite::Database d(huge, SQLite::OPEN_READWRITE);
    name = d.execAndGet("SELECT MIN(name) FROM tables").getString();
    d.exec("UPDATE tables SET rows = 9223372036854775807 WHERE name = '" + name + "'");
  }
  for (const std::string cmd : {" report ", " report --json ", " tune --budget 1GiB --backend cpu "}) {
    const auto r = run_command(kEdo + cmd + q(neg));
    EXPECT_EQ(r.exit_code, 1) << cmd << r.err;
    EXPECT_NE(r.err.find(neg), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("table '" + name + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("rows is -1"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("18446744073709551615"), std::string::npos) << r.out;
  }
  const auto r = run_command(kEdo + " tune --budget 1GiB --backend cpu " + q(huge));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(huge), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("table '" + name + "'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--help"), std::string::npos) << r.err;
}

// Issue 30 §10: a data-parallel job's headline said "peak 35.89 MiB" summing both replicas while
// the table list shows one rank's copy. Each figure now says whether it is per rank or all ranks.
TEST(DbSafety, TheDataParallelHeadlineSaysPerRankOrAllRanks) {
  const std::string dir = dir_for_test(), db = dir + "/ranks.edodb";
  model::Profile p;
  for (int64_t rank : {0, 1}) {
    model::Session s;
    s.id = rank + 1;
    s.command = "python3 train.py";
    s.host = "box";
    s.pid = 100 + rank;
    s.parent_pid = 1;
    s.source = "record";
    s.rank = rank;
    s.exit_code = 0;
    p.sessions.push_back(s);
    model::Table t;
    t.session_id = rank + 1;
    t.name = "emb";
    t.rows = 1000;
    t.dim = 16;
    t.dtype = "fp32";
    t.device = "cuda";
    t.base_address = 0x10000;
    t.weight_bytes = 64000;
    edo::stats::TableIngestor ing(1000, edo::stats::StatsConfig{});
    const int64_t rows[] = {1, 2, 3};
    ing.add(rows, 3);
    ing.close_window();
    t.aggregate = ing.take_delta();
    p.tables.push_back(t);
  }
  edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kCreate).save(p);
  const auto r = run_command(kEdo + " report --wide " + q(db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string head = r.out.substr(r.out.find("memory:"), r.out.find('\n', r.out.find("memory:")) - r.out.find("memory:"));
  EXPECT_NE(head.find("peak 125.00 KiB (all 2 ranks"), std::string::npos) << head;
  EXPECT_NE(head.find("tables 125.00 KiB (all 2 ranks; the table list shows one rank's copy)"), std::string::npos) << head;
  EXPECT_EQ(head.find("% of peak"), std::string::npos) << head;
  const auto j = run_command(kEdo + " report --json " + q(db));
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"peak_scope\": \"all_ranks\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"table_bytes_scope\": \"all_ranks\""), std::string::npos) << j.out;
}

}  // namespace
