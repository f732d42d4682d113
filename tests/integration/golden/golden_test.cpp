// Golden tests in Perfetto's manner: each case in tests/fixtures/golden/<case>/ is a set of
// checked-in wire streams (run.edotrace*, written by edo_golden_traces) and the report they
// must give: `edo import run.edotrace* -o X.edodb` then `edo report X.edodb --json`, with the
// volatile fields taken out (normalize() below; the README there lists them), must equal
// <case>/expected.json byte for byte. A decoder, collector or report change that alters what
// a recording says shows up here as a diff of the expected file.
//
// EDO_GOLDEN_UPDATE=1 writes the expected files instead of comparing (then review the diff).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs argv with stdout into `out`, stderr into `err`; returns the exit code (-1 when killed).
int run(const std::vector<std::string>& argv, const fs::path& out, const fs::path& err) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// The volatile fields: what would depend on when and where the import ran rather than on
// the streams. Today's report holds none (pids, hosts, start times, durations: all carried by
// the streams, and compared); should these keys or a string holding the temporary folder's
// path appear, the value becomes "<volatile>" (the key stays, so that one that disappears
// still shows up in the diff): metadata "imported_at", "edo_version", "source_files" (time of
// import, the build, paths), "path", "file".
void normalize(json& j, const std::string& tmp) {
  static const std::vector<std::string> kVolatileKeys = {"imported_at", "edo_version", "source_files", "path", "file"};
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (std::find(kVolatileKeys.begin(), kVolatileKeys.end(), it.key()) != kVolatileKeys.end()) it.value() = "<volatile>";
      else normalize(it.value(), tmp);
    }
  } else if (j.is_array()) {
    for (auto& v : j) normalize(v, tmp);
  } else if (j.is_string() && j.get<std::string>().find(tmp) != std::string::npos) {
    j = "<volatile>";
  }
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, ReportEqualsTheExpectedOne) {
  const fs::path dir = fs::path(EDO_GOLDEN_DIR) / GetParam();
  std::vector<std::string> streams;
  for (auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().rfind("run.edotrace", 0) == 0) streams.push_back(f.path().string());
  std::sort(streams.begin(), streams.end());
  ASSERT_FALSE(streams.empty()) << "no run.edotrace* in " << dir;

  const fs::path tmp = fs::path(::testing::TempDir()) / ("edo_golden_" + std::to_string(getpid()) + "_" + GetParam());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const fs::path db = tmp / "golden.edodb";
  std::vector<std::string> import = {EDO_BIN, "import"};
  import.insert(import.end(), streams.begin(), streams.end());
  import.insert(import.end(), {"-o", db.string()});
  // A damaged stream (the killed case) is reported and imported up to its last whole frame.
  ASSERT_EQ(run(import, tmp / "import.out", tmp / "import.err"), 0) << slurp(tmp / "import.err");
  ASSERT_EQ(run({EDO_BIN, "report", db.string(), "--json"}, tmp / "report.json", tmp / "report.err"), 0)
      << slurp(tmp / "report.err");
  json got = json::parse(slurp(tmp / "report.json"));
  normalize(got, tmp.string());
  const std::string text = got.dump(2) + "\n";

  const fs::path expected = dir / "expected.json";
  const char* update = std::getenv("EDO_GOLDEN_UPDATE");
  if (update && std::string(update) == "1") {
    std::ofstream(expected, std::ios::binary | std::ios::trunc) << text;
    GTEST_SKIP() << "wrote " << expected;
  }
  ASSERT_TRUE(fs::exists(expected)) << expected << " is missing: run with EDO_GOLDEN_UPDATE=1 (tests/fixtures/golden/README.md)";
  const std::string want = slurp(expected);
  if (text != want) {
    std::ofstream(tmp / "actual.json", std::ios::binary) << text;
    FAIL() << "the report of " << dir << " differs from expected.json; compare with\n  diff -u " << expected.string() << " "
           << (tmp / "actual.json").string()
           << "\nand, when the change is intended, regenerate (tests/fixtures/golden/README.md)";
  }
}

INSTANTIATE_TEST_SUITE_P(Edo, Golden, ::testing::Values("single_process", "forked_workers", "killed", "gpu"),
                         [](const auto& info) { return info.param; });

}  // namespace
