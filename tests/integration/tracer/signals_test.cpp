// The tracer and the job's signals: the library installs no handler, so the job's own handlers
// and default dispositions are exactly what they are without edo (Python's KeyboardInterrupt,
// a job's own SIGTERM handler, a C job reading its dispositions), and what was recorded before
// the signal is in the database. Each case under `edo record` and under LD_PRELOAD +
// EDO_OUTPUT + `edo import`; Ctrl-C through a real terminal (a pty); a job whose own handler
// re-raises the signal while two threads read (the library's signal path is async-signal-safe:
// the process always dies by the signal, never hangs).
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "e2e_support.h"

using namespace edo_e2e;

namespace {

const char* kPython = "/usr/bin/python3";

enum class Mode { kRecord, kOutputFile };

// The job's command line under `mode`, writing to `db` (record) or a trace next to it.
struct Traced {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string db, trace;
};

Traced traced(Mode mode, const std::vector<std::string>& job, const std::string& name) {
  Traced t;
  t.db = tmp_path(name + ".edodb");
  if (mode == Mode::kRecord) {
    t.argv = {EDO_BIN, "record", "-o", t.db, "--"};
    t.argv.insert(t.argv.end(), job.begin(), job.end());
    t.env = kClean;
  } else {
    t.trace = tmp_path(name + ".trace");
    t.argv = job;
    t.env = with({"EDO_OUTPUT=" + t.trace, "LD_PRELOAD=" + preload_of(EDO_TRACE_LIB_PATH), "ASAN_OPTIONS=detect_leaks=0"});
  }
  return t;
}

// The database of a finished traced run (imports the trace in EDO_OUTPUT mode).
Profile finished(const Traced& t) {
  if (!t.trace.empty()) {
    Result im = run({EDO_BIN, "import", t.trace, "-o", t.db});
    EXPECT_EQ(im.status, 0) << im.err;
  }
  return load(t.db);
}

// Starts argv, waits for "ready <pid>", sends `sig` to that pid (the job itself, as `kill`
// from a shell would), and returns the exit status and everything printed.
struct Signalled {
  int status = -1;
  std::string output;
};

Signalled signal_when_ready(const std::vector<std::string>& argv, const std::vector<std::string>& env, int sig) {
  Background b = start(argv, env);
  std::string out = wait_for_output(b, "ready ");
  const auto at = out.find("ready ");
  if (at == std::string::npos) {
    kill(b.pid, SIGKILL);
    wait_exit(b);
    ADD_FAILURE() << "the job never got ready: " << out;
    return {};
  }
  const pid_t job = pid_t(std::stol(out.substr(at + 6)));
  kill(job, sig);
  Signalled s;
  s.status = wait_exit(b);
  s.output = slurp(b.out);
  return s;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

const edo::model::Session* session_with_table(const Profile& p, const std::string& name) {
  for (auto& t : p.tables)
    if (t.name == name)
      for (auto& s : p.sessions)
        if (s.id == t.session_id) return &s;
  return nullptr;
}

// The checkpoint job's table: 1000 lookups, rows 0..99 ten times each.
void expect_checkpoint_table(const Profile& p) {
  const edo::model::Session* s = session_with_table(p, "ckpt.emb");
  ASSERT_NE(s, nullptr) << "table ckpt.emb missing";
  const auto* t = table(p, s->id, "ckpt.emb");
  EXPECT_EQ(t->aggregate.lookups(), 1000u);
  for (uint64_t r = 0; r < 100; ++r) ASSERT_EQ(t->aggregate.count(r), 10u) << "row " << r;
}

class PythonSignals : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
  }
  // What the job prints first without edo: the dispositions Python sees.
  std::string plain_dispositions(const std::string& mode) {
    Signalled s = signal_when_ready({kPython, SIGNAL_JOB, mode, tmp_path("plain.ckpt")}, kClean,
                                    mode == "term" ? SIGTERM : SIGINT);
    EXPECT_EQ(s.status, mode == "term" ? 7 : 0) << s.output;
    return first_line(s.output);
  }
};

TEST_P(PythonSignals, KeyboardInterruptReachesTheJobAndItsCheckpointIsWritten) {
  const std::string ckpt = tmp_path("job.ckpt");
  const Traced t = traced(GetParam(), {kPython, SIGNAL_JOB, "keyboard", ckpt}, "keyboard");
  Signalled s = signal_when_ready(t.argv, t.env, SIGINT);
  EXPECT_EQ(s.status, 0) << s.output;
  EXPECT_EQ(first_line(s.output), plain_dispositions("keyboard"));
  EXPECT_NE(first_line(s.output).find("default_int_handler"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("caught KeyboardInterrupt\nfinally\n"), std::string::npos) << s.output;
  EXPECT_EQ(slurp(ckpt), "keyboard");
  Profile p = finished(t);
  expect_checkpoint_table(p);
  EXPECT_EQ(p.drops().count("ended_without_final_flush"), 0u);
}

TEST_P(PythonSignals, UnhandledKeyboardInterruptEndsByTheSignalAfterFinallyAndAFlush) {
  const std::string ckpt = tmp_path("job.ckpt");
  const Traced t = traced(GetParam(), {kPython, SIGNAL_JOB, "unhandled", ckpt}, "unhandled");
  Signalled s = signal_when_ready(t.argv, t.env, SIGINT);
  EXPECT_EQ(s.status, 128 + SIGINT) << s.output;
  EXPECT_NE(s.output.find("finally\n"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("KeyboardInterrupt"), std::string::npos) << s.output;
  EXPECT_EQ(slurp(ckpt), "finally");
  Profile p = finished(t);
  expect_checkpoint_table(p);
  // Python ends itself with kill(getpid(), SIGINT): the library's kill() wrapper sent the
  // final flush first.
  EXPECT_EQ(p.drops().count("ended_without_final_flush"), 0u);
  const edo::model::Session* ses = session_with_table(p, "ckpt.emb");
  ASSERT_NE(ses, nullptr);
  EXPECT_EQ(ses->exit_code.value_or(-1), 128 + SIGINT);
}

TEST_P(PythonSignals, TheJobsOwnSigtermHandlerRuns) {
  const std::string ckpt = tmp_path("job.ckpt");
  const Traced t = traced(GetParam(), {kPython, SIGNAL_JOB, "term", ckpt}, "term");
  Signalled s = signal_when_ready(t.argv, t.env, SIGTERM);
  EXPECT_EQ(s.status, 7) << s.output;
  EXPECT_EQ(first_line(s.output), plain_dispositions("term"));
  EXPECT_NE(first_line(s.output).find("SIGTERM <Handlers.SIG_DFL: 0>"), std::string::npos) << s.output;
  EXPECT_EQ(slurp(ckpt), "sigterm");
  Profile p = finished(t);
  expect_checkpoint_table(p);
  EXPECT_EQ(p.drops().count("ended_without_final_flush"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Tracer, PythonSignals, ::testing::Values(Mode::kRecord, Mode::kOutputFile),
                         [](const auto& info) { return info.param == Mode::kRecord ? "Record" : "OutputFile"; });

// Ctrl-C typed in a terminal: the kernel sends SIGINT to the foreground process group,
// `edo record` and the job alike; the job handles it as it would without edo.
TEST(TracerSignals, CtrlCInATerminalReachesThePythonJobUnderRecord) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
  const std::string ckpt = tmp_path("tty.ckpt"), db = tmp_path("tty.edodb");
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    for (auto& kv : kClean) unsetenv(kv.substr(0, kv.find('=')).c_str());
    execl(EDO_BIN, EDO_BIN, "record", "-o", db.c_str(), "--", kPython, SIGNAL_JOB, "keyboard", ckpt.c_str(), (char*)nullptr);
    _exit(126);
  }
  std::string out;
  auto read_some = [&] {
    char buf[4096];
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(master, &fds);
    timeval tv{0, 50000};
    if (select(master + 1, &fds, nullptr, nullptr, &tv) > 0) {
      ssize_t n = read(master, buf, sizeof buf);
      if (n > 0) out.append(buf, size_t(n));
      return n > 0;
    }
    return true;
  };
  for (int i = 0; i < 400 && out.find("ready ") == std::string::npos; ++i) read_some();
  ASSERT_NE(out.find("ready "), std::string::npos) << out;
  ASSERT_EQ(write(master, "\x03", 1), 1);  // Ctrl-C
  int st = 0;
  for (int i = 0; i < 600 && waitpid(pid, &st, WNOHANG) == 0; ++i) read_some();
  while (read_some() && out.find("wrote ") == std::string::npos) {
  }
  close(master);
  ASSERT_TRUE(WIFEXITED(st)) << out;
  EXPECT_EQ(WEXITSTATUS(st), 0) << out;
  EXPECT_NE(out.find("caught KeyboardInterrupt"), std::string::npos) << out;
  EXPECT_EQ(slurp(ckpt), "keyboard");
  Profile p = load(db);
  expect_checkpoint_table(p);
}

class CSignals : public ::testing::TestWithParam<Mode> {};

// sigaction() and the signal mask read the same in a traced job as in an untraced one, also
// when the job's parent ignores SIGINT (nohup, `trap '' INT`).
TEST_P(CSignals, DispositionsAreTheJobsOwn) {
  for (const bool ignore_int : {false, true}) {
    std::vector<std::string> job = {TRACER_JOB, "dispositions", "0"};
    if (ignore_int) job = {"/bin/sh", "-c", "trap '' INT; exec " TRACER_JOB " dispositions 0"};
    Result plain = run(job, kClean);
    ASSERT_EQ(plain.status, 0) << plain.err;
    ASSERT_NE(plain.out.find(ignore_int ? " 2=I/" : " 2=D/"), std::string::npos) << plain.out;
    const Traced t = traced(GetParam(), job, ignore_int ? "ignored" : "dispositions");
    Result r = run(t.argv, t.env);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, plain.out);
    Profile p = finished(t);
    EXPECT_NE(session_with_table(p, "emb.user"), nullptr);
  }
}

// A C job's own SIGTERM handler runs; it exits normally and everything is flushed.
TEST_P(CSignals, OwnSigtermHandlerRunsAndEverythingIsFlushed) {
  const Traced t = traced(GetParam(), {TRACER_JOB, "own_term", "5"}, "own_term");
  Signalled s = signal_when_ready(t.argv, t.env, SIGTERM);
  EXPECT_EQ(s.status, 5) << s.output;
  EXPECT_NE(s.output.find("checkpoint written"), std::string::npos) << s.output;
  Profile p = finished(t);
  const edo::model::Session* ses = session_with_table(p, "emb.user");
  ASSERT_NE(ses, nullptr);
  EXPECT_EQ(table(p, ses->id, "emb.user")->aggregate.lookups(), 10000u);
  EXPECT_EQ(ses->steps, 5u);
  EXPECT_EQ(p.drops().count("ended_without_final_flush"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Tracer, CSignals, ::testing::Values(Mode::kRecord, Mode::kOutputFile),
                         [](const auto& info) { return info.param == Mode::kRecord ? "Record" : "OutputFile"; });

// The job's SIGTERM handler does "signal(SIGTERM, SIG_DFL); raise(SIGTERM);" while two threads
// read (inside the tracer, holding its locks, or inside malloc, at random): the library's
// raise() wrapper asks the background thread for a final flush and waits a bounded time, using
// only async-signal-safe calls. Every run must end by SIGTERM (a hang is killed by the
// watchdog and fails), and its trace must decode with the table in it. Both ingest modes:
// EDO_ASYNC=0 counts inline, under the lock the final flush needs, so some runs end after the
// bounded wait without their final flush.
TEST(TracerSignals, ReraisingHandlerAtRandomPointsNeverHangs) {
  std::mt19937 rng(12345);
  constexpr int kRuns = 5;
  for (const char* async : {"1", "0"}) {
    int flushed = 0;
    for (int i = 0; i < kRuns; ++i) {
      const std::string trace = tmp_path(std::string("reraise") + async + "_" + std::to_string(i) + ".trace");
      Background b = start({TRACER_JOB, "reraise", "0"},
                           with({"EDO_OUTPUT=" + trace, "EDO_ASYNC=" + std::string(async), "EDO_FLUSH_MS=50", "EDO_MAX_BUFFER_MB=8",
                                 "ASAN_OPTIONS=detect_leaks=0"}));
      const std::string out = wait_for_output(b, "ready ");
      ASSERT_NE(out.find("ready "), std::string::npos) << out;
      // The session's first flush is out (the test is about the kill, not about what a
      // process killed before its first flush can keep).
      const auto flushed_by = std::chrono::steady_clock::now() + std::chrono::seconds(300);
      while ((!fs::exists(trace) || fs::file_size(trace) == 0) && std::chrono::steady_clock::now() < flushed_by) usleep(5000);
      ASSERT_GT(fs::exists(trace) ? fs::file_size(trace) : 0, 0u) << "no first flush in 300 s";
      usleep(std::uniform_int_distribution<int>(0, 150000)(rng));
      kill(b.pid, SIGTERM);
      const int status = wait_exit(b);
      ASSERT_EQ(status, 128 + SIGTERM) << "run " << i << " EDO_ASYNC=" << async << (status < 0 ? ": hung" : "");
      const std::string db = trace + ".edodb";
      Result im = run({EDO_BIN, "import", trace, "-o", db});
      ASSERT_EQ(im.status, 0) << im.err;
      Profile p = load(db);
      const edo::model::Session* ses = session_with_table(p, "emb.user");
      ASSERT_NE(ses, nullptr) << "run " << i;
      if (!ses->drops.count("ended_without_final_flush")) {
        ++flushed;
        EXPECT_EQ(ses->exit_code.value_or(-1), 128 + SIGTERM);
      }
    }
    std::printf("EDO_ASYNC=%s: %d runs killed at random points, all ended by SIGTERM, %d with their final flush\n", async,
                kRuns, flushed);
  }
}

}  // namespace
