// `edo --help`, each command's --help, and the usage errors a user meets first (issue 14,
// item 8): readable option types, internal variables apart, unknown commands named, bad
// record flags refused before anything runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "run_command.h"
#include "support/help_format.h"

namespace {

using edo::testing::run_command;
const std::string kEdo = EDO_BIN;

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// Defect: `--help` showed "--top UINT:UINT in [0 - 4294967296]".
TEST(Help, OptionTypesReadLikeWords) {
  for (const char* cmd : {"record", "import", "report", "diff", "synth", "bench"}) {
    auto r = run_command(kEdo + " " + cmd + " --help");
    ASSERT_EQ(r.exit_code, 0) << cmd;
    for (const char* noise : {"UINT", "INT:", "FLOAT:", " in [", "4294967296", "1099511627776", "Excludes:"})
      EXPECT_EQ(r.out.find(noise), std::string::npos) << cmd << " --help shows '" << noise << "':\n" << r.out;
  }
  EXPECT_EQ(edo::cli::readable_type("UINT:UINT in [1 - 1099511627776]", "1000000"), "N=1000000 [1..2^40]");
  EXPECT_EQ(edo::cli::readable_type("INT:INT in [0 - 4096]", "0"), "N=0 [0..4096]");
  EXPECT_EQ(edo::cli::readable_type("TEXT:{fp32,fp16,bf16}", "fp32"), "{fp32,fp16,bf16}=fp32");
  EXPECT_EQ(edo::cli::readable_type("FLOAT:POSITIVE", "1.05"), "X=1.05 >0");
  EXPECT_EQ(edo::cli::readable_type("TEXT", ""), "TEXT");
  EXPECT_EQ(edo::cli::readable_type("FLOAT:FLOAT in [-5 - 10]", ""), "X [-5..10]");  // a negative limit
  EXPECT_EQ(edo::cli::readable_type("TEXT:in [1 - 2]", ""), "TEXT in [1 - 2]");      // not a range: kept
}

// Defect: EDO_CHANNEL, EDO_ROOT_PID and EDO_TRACE_LIB were listed beside the variables a user sets.
TEST(Help, RecordListsInternalVariablesApart) {
  auto r = run_command(kEdo + " record --help");
  ASSERT_EQ(r.exit_code, 0);
  const size_t apart = r.out.find("Set by edo record for its own use");
  ASSERT_NE(apart, std::string::npos) << r.out;
  for (const char* v : {"EDO_CHANNEL", "EDO_ROOT_PID", "EDO_TRACE_LIB"}) {
    EXPECT_GT(r.out.find(v), apart) << v << " is listed among the user's variables:\n" << r.out;
  }
  for (const char* v : {"EDO_FLUSH_MS", "EDO_EXACT_ROWS", "EDO_OUTPUT", "EDO_TORCH"}) {
    EXPECT_LT(r.out.find(v), apart) << v;
  }
}

// Defect: `edo --help` promised "recommend a plan" before any command did. Every command the
// workflow names must exist (a plan is promised now that `edo tune` makes one).
TEST(Help, TopLevelPromisesOnlyWhatExists) {
  auto r = run_command(kEdo + " --help");
  ASSERT_EQ(r.exit_code, 0);
  const size_t subcommands = r.out.find("Subcommands:");
  ASSERT_NE(subcommands, std::string::npos) << r.out;
  size_t at = 0;
  while ((at = r.out.find("\n  edo ", at)) != std::string::npos && at < subcommands) {
    at += 7;
    const std::string name = r.out.substr(at, r.out.find(' ', at) - at);
    EXPECT_NE(r.out.find("\n  " + name + " ", subcommands), std::string::npos) << "the workflow names 'edo " << name << "'";
  }
  if (r.out.find("plan") < subcommands) {
    EXPECT_NE(r.out.find("\n  tune ", subcommands), std::string::npos) << "the help promises a plan: 'tune' makes one";
  }
}

// Defect: `edo frobnicate` said "A subcommand is required".
TEST(Errors, UnknownCommandIsNamed) {
  auto r = run_command(kEdo + " frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("report"), std::string::npos) << r.err;  // the commands that exist
  r = run_command(kEdo + " reprot run.edodb");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'report'"), std::string::npos) << r.err;
  // A control character in the typed word does not reach the terminal.
  r = run_command(kEdo + " $(printf 'x\\033[2Jy')");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find('\033'), std::string::npos) << r.err;
}

// Defect: `--flush-ms 5` and `--exact-rows 0` were accepted, then warned about by every traced
// process (or ignored).
TEST(Errors, RecordRefusesOutOfRangeSettingsBeforeTheJobRuns) {
  const auto dir = std::filesystem::temp_directory_path() / ("edo-help-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);  // left by an earlier run with the same pid
  std::filesystem::create_directories(dir);
  const std::string marker = (dir / "ran").string(), db = (dir / "x.edodb").string();
  for (const std::string& flag : std::vector<std::string>{"--flush-ms 5", "--flush-ms 3600001", "--exact-rows 0", "--flush-ms=9"}) {
    auto r = run_command(kEdo + " record " + flag + " -o " + db + " -- touch " + marker);
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(flag.substr(0, flag.find_first_of(" ="))), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("edo record"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << flag;
    EXPECT_FALSE(std::filesystem::exists(db)) << flag;
  }
  // The bounds are the tracer's own: at the edge the job gets the value and no warning.
  auto r = run_command(kEdo + " record --flush-ms 10 --exact-rows 1 -o " + db +
                       " -- /bin/sh -c 'echo $EDO_FLUSH_MS $EDO_EXACT_ROWS'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "10 1\n");
  EXPECT_EQ(r.err.find("ignoring"), std::string::npos) << r.err;
}

}  // namespace
