// `edo synth`, `edo report`, `edo diff` end to end: statistics checked against exact ground
// truth recomputed here from the same generator, and the errors a user meets.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "edo/stats/table_stats.h"
#include "run_command.h"

namespace {

using edo::testing::run_command;
using nlohmann::json;

const std::string kEdo = EDO_BIN;

// A path in this process's folder, with nothing at it (a folder left by an earlier run whose pid
// was the same must not hold the file: edo refuses to replace an existing output).
std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("edo-cli-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / name);
  return (dir / name).string();
}

size_t count_lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// The documented synth stream: table t uses seed S + 1000003 * t, batches of B lookups.
std::map<int64_t, uint64_t> ground_truth(uint64_t rows, double alpha, uint64_t seed, int table, uint64_t lookups) {
  edo::stats::ZipfGenerator gen(rows, alpha, seed + 1000003ull * static_cast<uint64_t>(table));
  std::vector<int64_t> buf(lookups);
  gen.fill(buf.data(), buf.size());
  std::map<int64_t, uint64_t> counts;
  for (int64_t r : buf) ++counts[r];
  return counts;
}

json report(const std::string& db, const std::string& extra = "") {
  auto r = run_command(kEdo + " report --json " + extra + " " + db);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

TEST(Synth, ReportMatchesExactGroundTruth) {
  const std::string db = temp_path("exact.edodb");
  const uint64_t rows = 5000, lookups = 200000;
  // One batch holds the whole stream so that the ground truth reads the generator the same way.
  auto r = run_command(kEdo + " synth -o " + db + " --tables 2 --rows 5000 --dim 32 --zipf 1.1 --lookups 200000 --batch 200000 --seed 7");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = report(db, "--top 5000");
  EXPECT_EQ(j["schema"], "edo.report/2");
  ASSERT_EQ(j["tables"].size(), 2u);
  for (int t = 0; t < 2; ++t) {
    const json* table = nullptr;
    for (const auto& tj : j["tables"]) if (tj["name"] == "synth.table_" + std::to_string(t)) table = &tj;
    ASSERT_NE(table, nullptr);
    auto truth = ground_truth(rows, 1.1, 7, t, lookups);
    EXPECT_EQ((*table)["rows"], rows);
    EXPECT_EQ((*table)["dim"], 32);
    EXPECT_EQ((*table)["weight_bytes"], rows * 32 * 4);
    EXPECT_EQ((*table)["optimizer_bytes"], 0);
    EXPECT_EQ((*table)["grad_bytes"], 0);
    EXPECT_EQ((*table)["total_bytes"], rows * 32 * 4);
    EXPECT_EQ((*table)["counts"], "exact");
    EXPECT_EQ((*table)["lookups"], lookups);
    EXPECT_EQ((*table)["unique_rows"], truth.size());
    // Every row's count.
    std::map<int64_t, uint64_t> reported;
    for (const auto& pair : (*table)["top_rows"]) reported[pair[0].get<int64_t>()] = pair[1].get<uint64_t>();
    EXPECT_EQ(reported, truth);
    // Coverage of the top 1 % = top floor(50) rows.
    std::vector<uint64_t> sorted;
    for (auto& [row, c] : truth) sorted.push_back(c);
    std::sort(sorted.rbegin(), sorted.rend());
    uint64_t top50 = 0;
    for (size_t i = 0; i < 50 && i < sorted.size(); ++i) top50 += sorted[i];
    EXPECT_NEAR((*table)["coverage"]["top_1pct"].get<double>(), static_cast<double>(top50) / lookups, 1e-12);
    // LRU at full cache = 1 - unique / lookups (only cold misses remain).
    const auto& lru = (*table)["lru_hit_rate"];
    ASSERT_FALSE(lru.empty());
    EXPECT_EQ(lru.back()[0].get<uint64_t>(), rows);
    EXPECT_NEAR(lru.back()[1].get<double>(), 1.0 - static_cast<double>(truth.size()) / lookups, 1e-9);
    // The curve includes 1, 10, 50 and 100 % of rows and never decreases.
    std::vector<uint64_t> xs;
    double prev = -1;
    for (const auto& p : lru) {
      xs.push_back(p[0].get<uint64_t>());
      EXPECT_GE(p[1].get<double>(), prev - 1e-12);
      prev = p[1].get<double>();
    }
    for (uint64_t must : {rows / 100, rows / 10, rows / 2, rows}) {
      EXPECT_NE(std::find(xs.begin(), xs.end(), must), xs.end()) << must;
    }
    EXPECT_TRUE((*table)["zipf_alpha"].is_number());
    EXPECT_NEAR((*table)["zipf_alpha"].get<double>(), 1.1, 0.25);
  }
  EXPECT_EQ(j["memory"]["table_bytes"], 2 * rows * 32 * 4);
  EXPECT_EQ(j["dropped_events"], 0);
  EXPECT_EQ(j["session"]["source"], "synth");
}

TEST(Synth, SketchModeAboveTheExactLimit) {
  const std::string db = temp_path("sketch.edodb");
  auto r = run_command(kEdo + " synth -o " + db + " --tables 1 --rows 50000 --zipf 1.0 --lookups 300000 --batch 300000 --seed 3 --exact-rows 1000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json t = report(db)["tables"][0];
  EXPECT_EQ(t["counts"], "sketch");
  EXPECT_EQ(t["lookups"], 300000);
  auto truth = ground_truth(50000, 1.0, 3, 0, 300000);
  const double unique = t["unique_rows"].get<double>();
  EXPECT_NEAR(unique / truth.size(), 1.0, 0.05);
}

TEST(Report, TextOutputNamesTablesAndTotals) {
  const std::string db = temp_path("text.edodb");
  ASSERT_EQ(run_command(kEdo + " synth -o " + db + " --tables 3 --rows 1000 --lookups 10000").exit_code, 0);
  auto r = run_command(kEdo + " report " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* needle : {"synth.table_0", "synth.table_2", "memory: peak", "LRU10%", "dropped events: 0"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }
}

TEST(Diff, ShowsChangesAndTablesOnlyInOne) {
  const std::string a = temp_path("a.edodb"), b = temp_path("b.edodb");
  ASSERT_EQ(run_command(kEdo + " synth -o " + a + " --tables 2 --rows 2000 --lookups 20000 --zipf 0.8").exit_code, 0);
  ASSERT_EQ(run_command(kEdo + " synth -o " + b + " --tables 3 --rows 2000 --lookups 40000 --zipf 1.2").exit_code, 0);
  auto r = run_command(kEdo + " diff --json " + a + " " + b);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "edo.diff/2");
  ASSERT_EQ(j["tables"].size(), 2u);
  EXPECT_EQ(j["tables"][0]["lookups"]["before"], 20000);
  EXPECT_EQ(j["tables"][0]["lookups"]["after"], 40000);
  EXPECT_EQ(j["only_in_after"], json::array({"synth.table_2"}));
  auto text = run_command(kEdo + " diff " + a + " " + b);
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("only in after:  synth.table_2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("+100.0%"), std::string::npos) << text.out;
}

TEST(Errors, BadFlagsAreUsageErrorsOnOneLine) {
  for (const std::string& args : std::vector<std::string>{"synth --tables 2", "synth -o x.edodb --tables -3", "synth -o x.edodb --dtype f64",
                                 "report", "frobnicate", "synth -o x.edodb --zipf abc"}) {
    auto r = run_command(kEdo + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << args << ": " << r.err;
  }
}

TEST(Errors, BadFilesAreRuntimeErrorsNamingTheFile) {
  const std::string garbage = temp_path("garbage.edodb");
  std::ofstream(garbage) << std::string(10000, 'g');
  const std::string missing = temp_path("missing.edodb");
  for (const std::string& path : {garbage, missing}) {
    for (const std::string& cmd : std::vector<std::string>{"report ", "report --json ", "diff " + path + " "}) {
      auto r = run_command(kEdo + " " + cmd + path);
      EXPECT_EQ(r.exit_code, 1) << cmd << path;
      EXPECT_EQ(count_lines(r.err), 1u) << r.err;
      EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
    }
  }
}

TEST(Errors, BenchTooLargeForMemoryIsOneLine) {
  // 20e9 x 128 fp32 = 9.5 TiB: refused at allocation unless the kernel overcommits blindly,
  // in which case the benchmark would start filling it.
  std::ifstream oc("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  if (oc >> mode && mode == 1) GTEST_SKIP() << "vm.overcommit_memory = 1: the allocation would succeed";
  // (a sanitizer build would abort on the request instead of failing it)
  auto r = run_command("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1 " + kEdo +
                       " bench -q --rows 20000000000 --dim 128 --strategies fp32");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  size_t ours = 0;  // lines of edo's own (a sanitizer build adds a "==pid==WARNING" line)
  for (size_t at = 0; at < r.err.size(); at = r.err.find('\n', at) + 1) {
    if (r.err.compare(at, 2, "==") != 0) ++ours;
    if (r.err.find('\n', at) == std::string::npos) break;
  }
  EXPECT_EQ(ours, 1u) << r.err;
  EXPECT_NE(r.err.find("not enough memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--rows"), std::string::npos) << r.err;
  auto u = run_command(kEdo + " bench -q --rows 1000 --strategies fp32:bogus=1");
  EXPECT_EQ(u.exit_code, 2) << u.err;
  EXPECT_EQ(count_lines(u.err), 1u) << u.err;
}

// The anchors are sized to the table: a 1000 x 8 benchmark once held 1.1 GB (a 1 GiB latency
// buffer and 768 MiB of triad arrays whatever the table).
// Runs `cmd` (its output to `out_file`) in a child of its own and returns its peak RSS in KiB,
// or -1: getrusage(RUSAGE_CHILDREN) in this process is the peak of every child it ever waited
// for, so, with the tests run as one process, another test's larger child was blamed.
long peak_rss_kib_of(const std::string& cmd, const std::string& out_file, int& status) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    long result[2] = {-1, std::system((cmd + " > " + out_file + " 2>&1").c_str())};
    rusage ru{};
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0) result[0] = ru.ru_maxrss;
    (void)!write(fds[1], result, sizeof result);
    _exit(0);
  }
  close(fds[1]);
  long result[2] = {-1, -1};
  const bool got = pid > 0 && read(fds[0], result, sizeof result) == ssize_t(sizeof result);
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  status = int(result[1]);
  return got ? result[0] : -1;
}

TEST(Bench, SmallTableNeedsLittleMemory) {
  const std::string out = ::testing::TempDir() + "/small_bench.txt";
  int status = -1;
  const long kib = peak_rss_kib_of(kEdo + " bench -q --rows 1000 --dim 8 --strategies fp32,int8 --reps 2 --sets 2", out, status);
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(out.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_NE(text.find("probe"), std::string::npos) << text;
  ASSERT_GT(kib, 0);
  EXPECT_LT(kib, 300 * 1024) << "peak RSS of edo bench in KiB";
}

TEST(Errors, BenchOnCudaWithoutADeviceSaysSoInWords) {
  auto r = run_command(kEdo + " bench -q --backend cuda --rows 1000 --dim 8 --strategies fp32");
  if (r.exit_code == 0) GTEST_SKIP() << "this machine has a usable CUDA device";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("no CUDA device: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--backend cpu"), std::string::npos) << r.err;
  // the runtime's own words for a machine without a driver are misleading ("driver version is
  // insufficient"); edo says what is missing instead
  EXPECT_EQ(r.err.find("insufficient"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Issue 24: what the library needs loaded before it comes first in `edo env`'s LD_PRELOAD, as
// under `edo record`: in a sanitizer build the sanitizer runtime (which refuses to start after
// libedo_trace.so), else libedo_trace.so itself; a preload the caller had stays, last. A
// sanitizer build also turns the job's leak report off unless the caller asked for one.
TEST(Env, PreloadStartsWithWhatTheLibraryNeedsFirst) {
  std::string runtime;
#ifdef EDO_SANITIZER_PRELOAD
  runtime = EDO_SANITIZER_PRELOAD;
#endif
  const std::string lib = std::filesystem::canonical(std::filesystem::path(kEdo).parent_path() / ".." / "lib" /
                                                     "libedo_trace.so").string();
  const std::string expect = (runtime.empty() ? "" : runtime + ":") + lib + ":/opt/other.so";
  // printf is a builtin: nothing is started with the preload.
  auto r = run_command("unset ASAN_OPTIONS; LD_PRELOAD=/opt/other.so; eval \"$(" + kEdo +
                       " env -o run.edotrace)\" && printf '%s|%s\\n' \"$LD_PRELOAD\" \"${ASAN_OPTIONS-unset}\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expect + "|" + (runtime.empty() ? "unset" : "detect_leaks=0") + "\n");
  r = run_command("ASAN_OPTIONS=detect_leaks=1; eval \"$(" + kEdo + " env -o run.edotrace)\" && echo \"$ASAN_OPTIONS\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "detect_leaks=1\n");
}

TEST(Help, ListsEveryCommandAndEachHasHelp) {
  auto r = run_command(kEdo + " --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"synth", "report", "diff"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
    auto sub = run_command(kEdo + " " + cmd + " --help");
    EXPECT_EQ(sub.exit_code, 0) << cmd;
    EXPECT_NE(sub.out.find("Example"), std::string::npos) << cmd;
  }
}

}  // namespace

// Issue 18 §3: `edo env` names the run, so that processes a launcher starts side by side share
// one run id and `edo import` keeps their files together; each eval starts a new run.
TEST(Env, PrintsAFreshRunIdEachTime) {
  std::string ids[2];
  for (auto& id : ids) {
    auto r = run_command(kEdo + " env -o /tmp/edo-env-test.edotrace");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find("export EDO_RUN_ID=");
    ASSERT_NE(at, std::string::npos) << r.out;
    id = r.out.substr(at + 18, r.out.find('\n', at) - at - 18);
    EXPECT_EQ(id.size(), 16u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  }
  EXPECT_NE(ids[0], ids[1]);
}
