// Where `edo record`, `edo synth` and `edo import` write: an existing output is refused unless
// --force, a file that is not an edo database is never replaced, an unwritable place is said
// in words before the job starts, and a symbolic link is replaced, not followed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "run_command.h"
#include "support/output_file.h"

namespace {

namespace fs = std::filesystem;
using edo::testing::run_command;

const std::string kEdo = EDO_BIN;
const std::string kScript = "import torch\nprint('training')\n";

std::string dir_for_test() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::temp_directory_path() / ("edo-output-test-" + std::to_string(getpid()) + "-" + info->name());
  fs::remove_all(dir);  // left by an earlier run with the same pid
  fs::create_directories(dir);
  return dir.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// A job that leaves a mark when it runs: the checks below must happen before it starts.
std::string marking_job(const std::string& marker) { return "/bin/sh -c 'touch " + marker + "'"; }

std::string synth(const std::string& path) {
  return kEdo + " synth -o '" + path + "' --tables 1 --rows 100 --lookups 1000";
}

// Defect (issue 14, item 1): `edo record -o v.py -- python3 v.py` turned the user's script into
// a database before the job started.
TEST(OutputFile, AScriptIsNeverReplacedEvenWithForce) {
  const std::string dir = dir_for_test(), script = dir + "/v.py", marker = dir + "/ran";
  std::ofstream(script) << kScript;
  for (const char* force : {"", "--force "}) {
    auto r = run_command(kEdo + " record " + std::string(force) + "-o '" + script + "' -- " + marking_job(marker));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(script), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not an edo database"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(script), kScript);
    EXPECT_FALSE(fs::exists(marker)) << "the job ran although its output was refused";
  }
  // The same for the other commands that write a database.
  auto s = run_command(kEdo + " synth --force -o '" + script + "' --rows 100 --lookups 100");
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_EQ(slurp(script), kScript);
  const std::string trace = dir + "/t.edotrace";
  std::ofstream(trace) << "x";
  auto i = run_command(kEdo + " import --force '" + trace + "' -o '" + script + "'");
  EXPECT_EQ(i.exit_code, 1) << i.err;
  EXPECT_EQ(slurp(script), kScript);
}

TEST(OutputFile, AnExistingDatabaseIsReplacedOnlyWithForce) {
  const std::string dir = dir_for_test(), db = dir + "/run.edodb", marker = dir + "/ran";
  ASSERT_EQ(run_command(synth(db)).exit_code, 0);
  const std::string before = slurp(db);
  auto r = run_command(kEdo + " record -o '" + db + "' -- " + marking_job(marker));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(db + " already exists"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(db), before);
  EXPECT_FALSE(fs::exists(marker));
  auto s = run_command(synth(db));
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_NE(s.err.find("--force"), std::string::npos) << s.err;

  r = run_command(kEdo + " record --force -o '" + db + "' -- " + marking_job(marker));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(marker));
  auto p = edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(p.sessions.size(), 1u);
  EXPECT_EQ(p.sessions[0].source, "record");
  // An empty file (left by an interrupted run) holds nothing to lose: --force replaces it.
  const std::string empty = dir + "/empty.edodb";
  std::ofstream(empty).close();
  EXPECT_EQ(run_command(synth(empty)).exit_code, 1);
  EXPECT_EQ(run_command(synth(empty) + " --force").exit_code, 0);
  EXPECT_TRUE(edo::db::is_edo_database(empty));
}

// Issue 13: a symbolic link planted at the output path is replaced, not followed.
TEST(OutputFile, ASymlinkIsReplacedNotFollowed) {
  const std::string dir = dir_for_test(), target = dir + "/precious.txt", link = dir + "/out.edodb";
  std::ofstream(target) << kScript;
  fs::create_symlink(target, link);
  auto r = run_command(synth(link));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  r = run_command(synth(link) + " --force");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_TRUE(edo::db::is_edo_database(link));
  EXPECT_EQ(slurp(target), kScript);
}

TEST(OutputFile, DirectoriesAndMissingFoldersAreNamed) {
  const std::string dir = dir_for_test();
  auto r = run_command(synth(dir));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  r = run_command(synth(dir + "/no/such/folder/x.edodb"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
}

// Defect (issue 14, item 5): a read-only output folder (as a non-root user) said "truncated or
// corrupt edo database ... re-record it or restore a copy".
TEST(OutputFile, AnUnwritableFolderIsPermissionDeniedBeforeTheJobStarts) {
  std::string as_user;
  if (geteuid() == 0) {
    // root writes anywhere: run edo as nobody to meet the permission check a user meets.
    if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "running as root without setpriv";
    as_user = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups ";
    // A build tree inside a private folder (mktemp -d makes them 0700) is out of nobody's reach.
    const std::string lib = kEdo.substr(0, kEdo.rfind('/')) + "/../lib/libedo_trace.so";
    if (run_command(as_user + "/usr/bin/test -r '" + lib + "'").exit_code != 0)
      GTEST_SKIP() << "user nobody cannot read " << lib << " (the build tree is in a private folder)";
  }
  const std::string dir = dir_for_test(), ro = dir + "/readonly", marks = dir + "/marks";
  fs::create_directories(ro);
  fs::create_directories(marks);
  chmod(dir.c_str(), 0755);
  chmod(ro.c_str(), 0555);
  chmod(marks.c_str(), 0777);
  const std::string marker = marks + "/ran", out = ro + "/run.edodb";
  auto r = run_command(as_user + kEdo + " record -o '" + out + "' -- " + marking_job(marker));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("corrupt"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(marker)) << "the job started although nothing could be recorded";
  EXPECT_FALSE(fs::exists(out));
  auto s = run_command(as_user + synth(out));
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_NE(s.err.find("Permission denied"), std::string::npos) << s.err;
}

// Default names (no -o) never land on an existing file.
TEST(OutputFile, DefaultNamesSkipExistingFiles) {
  const std::string stem = dir_for_test() + "/edo.job.42";
  EXPECT_EQ(edo::cli::unused_output_name(stem), stem + ".edodb");
  std::ofstream(stem + ".edodb") << kScript;
  EXPECT_EQ(edo::cli::unused_output_name(stem), stem + ".2.edodb");
  std::ofstream(stem + ".2.edodb-wal") << "";
  EXPECT_EQ(edo::cli::unused_output_name(stem), stem + ".3.edodb");
}

TEST(OutputFile, RecordWithoutOutputWritesAFreshDefaultName) {
  const std::string dir = dir_for_test();
  auto r = run_command("cd '" + dir + "' && " + kEdo + " record -- /bin/true");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  int found = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("edo.true.", 0) == 0 && name.size() > 6 && name.substr(name.size() - 6) == ".edodb") ++found;
  }
  EXPECT_EQ(found, 1);
}

// SQLite reads ":memory:" as a database in memory and "file:..." as a URI (which may also mean
// memory); as -o they name files like any other: the recording is kept, reads back, and is
// recognised as an edo database (--force replaces it, nothing else does).
TEST(OutputFile, NamesSqliteReadsSpeciallyAreFiles) {
  const std::string dir = dir_for_test();
  for (const std::string name : {":memory:", "file:run.edodb?mode=memory"}) {
    SCOPED_TRACE(name);
    const std::string in_dir = "cd '" + dir + "' && " + kEdo;
    auto r = run_command(in_dir + " record -o '" + name + "' -- /bin/true");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(fs::is_regular_file(dir + "/" + name)) << r.err;
    EXPECT_TRUE(edo::db::is_edo_database(dir + "/" + name));
    r = run_command(in_dir + " report '" + name + "'");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_command(in_dir + " record -o '" + name + "' -- /bin/true");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
    r = run_command(in_dir + " record --force -o '" + name + "' -- /bin/true");
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{":memory:", "file:run.edodb?mode=memory"}));
}

}  // namespace
