// The tracer and the job's signals: the library installs no handler, so the job's own handlers
// and default dispositions are exactly what they are without edo (Python's KeyboardInterrupt,
// a job's own SIGTERM handler, a C job reading its dispositions), and what was recorded before
// the signal is in the database. Each case under `edo record` and under LD_PRELOAD +
// EDO_OUTPUT + `edo import`; Ctrl-C through a real terminal (a pty); a job whose own handler
// re-raises the signal while two threads read (the library's signal path is async-signal-safe:
// the process always dies by the signal, never hangs).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
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
  std::string out;
  const pid_t job = wait_ready(b, out);
  if (job < 0) {
    ADD_FAILURE() << "the job never got ready: " << out;
    return {};
  }
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

// Runs `edo record -o db -- job...` in a new pseudo-terminal (edo in its foreground group,
// as typed at a shell), types Ctrl-C once the output shows "ready ", and returns the exit
// status (-1 when it did not end) and everything the terminal showed.
struct InTerminal {
  int status = -1;
  std::string out;
};

InTerminal ctrl_c_in_a_terminal(const std::string& db, const std::vector<std::string>& job) {
  int master = -1;
  InTerminal res;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return res;
  if (pid == 0) {
    std::vector<std::string> argv = {EDO_BIN, "record", "-o", db, "--"};
    argv.insert(argv.end(), job.begin(), job.end());
    exec_with_env(argv, kClean);
  }
  std::string& out = res.out;
  auto read_some = [&] {
    char buf[4096];
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(master, &fds);
    timeval tv{0, 50000};
    if (select(master + 1, &fds, nullptr, nullptr, &tv) > 0) {
      ssize_t n = read(master, buf, sizeof buf);
      if (n > 0) out.append(buf, size_t(n));
      // EIO once the session leader (edo) has hung the terminal up on its way out: it is not
      // waitable yet; poll again a little later instead of spinning through the loop's rounds.
      if (n <= 0) usleep(10000);
      return n > 0;
    }
    return true;
  };
  for (int i = 0; i < 400 && out.find("ready ") == std::string::npos; ++i) read_some();
  if (out.find("ready ") == std::string::npos || write(master, "\x03", 1) != 1) {  // Ctrl-C
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(master);
    return res;
  }
  int st = 0;
  pid_t r = 0;
  for (int i = 0; i < 600 && (r = waitpid(pid, &st, WNOHANG)) == 0; ++i) read_some();
  while (read_some() && out.find("wrote ") == std::string::npos) {
  }
  close(master);
  if (r != pid) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return res;
  }
  res.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return res;
}

// Ctrl-C typed in a terminal: the kernel sends SIGINT to the foreground process group, which
// is the job's while it runs (edo hands the terminal over); the job handles it as it would
// without edo.
TEST(TracerSignals, CtrlCInATerminalReachesThePythonJobUnderRecord) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
  const std::string ckpt = tmp_path("tty.ckpt"), db = tmp_path("tty.edodb");
  const InTerminal t = ctrl_c_in_a_terminal(db, {kPython, SIGNAL_JOB, "keyboard", ckpt});
  const std::string& out = t.out;
  EXPECT_EQ(t.status, 0) << out;
  EXPECT_NE(out.find("caught KeyboardInterrupt"), std::string::npos) << out;
  EXPECT_EQ(slurp(ckpt), "keyboard");
  Profile p = load(db);
  expect_checkpoint_table(p);
}

// ---- each signal reaches the job once (issue 18) ----
// The job (tracer_job count_signals) appends a line per SIGTERM/SIGINT its handler runs to a
// file, lingers after the first, and exits with 3. A signal sent to edo's process group (as
// `kill -TERM -PGID`, `timeout` and batch schedulers do) used to reach the job directly and
// again from edo: the job now runs in a group of its own and edo passes the signal on once.

// `edo record` started as a shell with job control starts a command: in a process group of
// its own (its pid), so that kill(-pid) is a signal to that group and to nothing else here.
Background start_in_own_group(const std::vector<std::string>& argv) {
  static int started = 0;
  Background b;
  b.out = tmp_path("grouped" + std::to_string(++started) + ".txt");
  std::ofstream(b.out).close();
  b.pid = fork();
  if (b.pid == 0) {
    setpgid(0, 0);
    for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGHUP}) signal(sig, SIG_DFL);
    int fd = open(b.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    exec_with_env(argv, kClean);
  }
  setpgid(b.pid, b.pid);  // either call wins; both make kill(-pid) valid at once
  return b;
}

std::string handler_line(int sig) { return sig == SIGTERM ? "TERM\n" : sig == SIGQUIT ? "QUIT\n" : "INT\n"; }

// Whom the signal is sent to: edo's process group, edo's pid alone, or `timeout` (which
// passes a SIGTERM/SIGINT it gets on to its child's pid and then to its whole group).
enum class To { kGroup, kPid, kTimeout };

struct Once {
  int status = -1;
  std::string handled, output;
};

Once signal_edo_record(To to, int sig, const std::string& name) {
  const std::string count = tmp_path(name + ".count"), db = tmp_path(name + ".edodb");
  std::vector<std::string> argv = {EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "count_signals", "3", count};
  if (to == To::kTimeout) argv.insert(argv.begin(), {"/usr/bin/timeout", "600"});
  Background b = start_in_own_group(argv);
  Once o;
  const std::string out = wait_for_output(b, "ready ");
  if (out.find("ready ") == std::string::npos) {
    kill(-b.pid, SIGKILL);
    wait_exit(b);
    ADD_FAILURE() << "the job never got ready: " << out;
    return o;
  }
  kill(to == To::kGroup ? -b.pid : b.pid, sig);
  o.status = wait_exit(b);
  o.handled = slurp(count);
  o.output = slurp(b.out);
  Profile p = load(db);
  EXPECT_NE(session_with_table(p, "emb.user"), nullptr) << name;
  if (const edo::model::Session* s = session_with_table(p, "emb.user")) {
    EXPECT_EQ(s->exit_code.value_or(-1), 3) << name;
  }
  return o;
}

class SignalOnce : public ::testing::TestWithParam<int> {};

TEST_P(SignalOnce, ToEdosProcessGroupTwentyTimes) {
  const int sig = GetParam();
  for (int i = 0; i < 20; ++i) {
    const Once o = signal_edo_record(To::kGroup, sig, "group" + std::to_string(i));
    ASSERT_EQ(o.handled, handler_line(sig)) << "run " << i << ": the job's handler ran " << o.handled.size() / handler_line(sig).size()
                                            << " times\n" << o.output;
    ASSERT_EQ(o.status, 3) << "run " << i << "\n" << o.output;
  }
}

TEST_P(SignalOnce, ToEdosPidAloneIsPassedOn) {
  const int sig = GetParam();
  for (int i = 0; i < 3; ++i) {
    const Once o = signal_edo_record(To::kPid, sig, "pid" + std::to_string(i));
    ASSERT_EQ(o.handled, handler_line(sig)) << "run " << i << "\n" << o.output;
    ASSERT_EQ(o.status, 3) << "run " << i << "\n" << o.output;
  }
}

TEST_P(SignalOnce, FromTimeout) {
  if (access("/usr/bin/timeout", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/timeout";
  const int sig = GetParam();
  for (int i = 0; i < 5; ++i) {
    const Once o = signal_edo_record(To::kTimeout, sig, "timeout" + std::to_string(i));
    ASSERT_EQ(o.handled, handler_line(sig)) << "run " << i << "\n" << o.output;
    ASSERT_EQ(o.status, 3) << "run " << i << "\n" << o.output;  // timeout exits with its child's code
  }
}

// SIGQUIT too: the job no longer dies with edo (issue 30), so edo passes a Ctrl-backslash that
// reaches it (a script's group) on, as it does SIGINT.
INSTANTIATE_TEST_SUITE_P(Tracer, SignalOnce, ::testing::Values(SIGTERM, SIGINT, SIGQUIT), [](const auto& info) {
  return info.param == SIGTERM ? "Sigterm" : info.param == SIGQUIT ? "Sigquit" : "Sigint";
});

// Ctrl-C in a terminal reaches the job once (edo gives the job's group the terminal, and
// takes it back after: its closing lines are printed).
TEST(TracerSignals, CtrlCInATerminalReachesTheCJobOnce) {
  const std::string count = tmp_path("tty.count"), db = tmp_path("tty_c.edodb");
  const InTerminal t = ctrl_c_in_a_terminal(db, {TRACER_JOB, "count_signals", "3", count});
  EXPECT_EQ(t.status, 3) << t.out;
  EXPECT_EQ(slurp(count), "INT\n") << t.out;
  EXPECT_NE(t.out.find("wrote "), std::string::npos) << t.out;
  Profile p = load(db);
  EXPECT_NE(session_with_table(p, "emb.user"), nullptr);
}

// `edo record` run by a script in a terminal (no job control: the script's group is the
// foreground one and edo does not lead it): the terminal stays with the script's group, so
// Ctrl-C reaches the script as it did without edo, and edo, which passes it on to the job once.
TEST(TracerSignals, CtrlCReachesAScriptThatRunsRecordAndTheJobOnce) {
  const std::string count = tmp_path("script.count"), db = tmp_path("script.edodb");
  const std::string script = std::string("trap 'echo script-got-INT' INT; ") + EDO_BIN + " record -o " + db + " -- " +
                             TRACER_JOB + " count_signals 3 " + count + "; echo edo-exit-$?";
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) exec_with_env({"/bin/sh", "-c", script}, kClean);
  std::string out;
  auto read_some = [&] {
    char buf[4096];
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(master, &fds);
    timeval tv{0, 50000};
    if (select(master + 1, &fds, nullptr, nullptr, &tv) > 0) {
      const ssize_t n = read(master, buf, sizeof buf);
      if (n > 0) out.append(buf, size_t(n));
      if (n <= 0) usleep(10000);  // EIO: see ctrl_c_in_a_terminal()
    }
  };
  for (int i = 0; i < 400 && out.find("ready ") == std::string::npos; ++i) read_some();
  if (out.find("ready ") == std::string::npos) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(master);
    FAIL() << "the job never got ready: " << out;
  }
  ASSERT_EQ(write(master, "\x03", 1), 1);  // Ctrl-C
  int st = 0;
  pid_t r = 0;
  for (int i = 0; i < 600 && (r = waitpid(pid, &st, WNOHANG)) == 0; ++i) read_some();
  for (int i = 0; i < 100 && out.find("edo-exit-") == std::string::npos; ++i) read_some();
  close(master);
  if (r != pid) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    FAIL() << "the script did not end: " << out;
  }
  EXPECT_EQ(slurp(count), "INT\n") << out;
  EXPECT_NE(out.find("script-got-INT"), std::string::npos) << out;
  EXPECT_NE(out.find("edo-exit-3"), std::string::npos) << out;
}

// Ctrl-Z in a terminal stops the job (its group has the terminal); edo then takes the
// terminal back and stops too, as a shell's job does; continued (what `fg` does), it gives
// the terminal back to the job and continues it: a Ctrl-C then reaches the job, once.
TEST(TracerSignals, CtrlZStopsTheJobAndEdoAndFgResumesBoth) {
  const std::string count = tmp_path("tstp.count"), db = tmp_path("tstp.edodb");
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) exec_with_env({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "count_signals", "3", count}, kClean);
  std::string out;
  auto read_some = [&] {
    char buf[4096];
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(master, &fds);
    timeval tv{0, 50000};
    if (select(master + 1, &fds, nullptr, nullptr, &tv) > 0) {
      const ssize_t n = read(master, buf, sizeof buf);
      if (n > 0) out.append(buf, size_t(n));
      if (n <= 0) usleep(10000);  // EIO: see ctrl_c_in_a_terminal()
    }
  };
  auto cleanup = [&] {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(master);
  };
  for (int i = 0; i < 400 && out.find("ready ") == std::string::npos; ++i) read_some();
  if (out.find("ready ") == std::string::npos) {
    cleanup();
    FAIL() << "the job never got ready: " << out;
  }
  ASSERT_EQ(write(master, "\x1a", 1), 1);  // Ctrl-Z
  int st = 0;
  pid_t r = 0;
  for (int i = 0; i < 600 && (r = waitpid(pid, &st, WNOHANG | WUNTRACED)) == 0; ++i) read_some();
  if (r != pid || !WIFSTOPPED(st)) {
    cleanup();
    FAIL() << "edo record did not stop with its job: " << out;
  }
  kill(pid, SIGCONT);  // what `fg` does (a session leader in its own terminal: the terminal is its own)
  // Typed now, Ctrl-C reaches the job directly once it has the terminal again, or before that
  // edo, which passes it on: once either way.
  ASSERT_EQ(write(master, "\x03", 1), 1);
  r = 0;
  for (int i = 0; i < 600 && (r = waitpid(pid, &st, WNOHANG)) == 0; ++i) read_some();
  if (r != pid) {
    cleanup();
    FAIL() << "edo record did not end: " << out;
  }
  close(master);
  ASSERT_TRUE(WIFEXITED(st)) << out;
  EXPECT_EQ(WEXITSTATUS(st), 3) << out;
  EXPECT_EQ(slurp(count), "INT\n") << out;
}

// `edo record ... &` at an interactive shell: the job reads the terminal from the background
// and is stopped (SIGTTIN); edo stops with it, so that the shell sees its job stopped; `fg`
// (the terminal to edo's group, SIGCONT) gives the job the terminal, and it reads its line.
// The pty's session leader plays the shell.
TEST(TracerSignals, ABackgroundRecordFollowsItsJobStoppedByTheTerminalAndFgResumesIt) {
  const std::string db = tmp_path("bg.edodb");
  int master = -1;
  const pid_t shell = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(shell, 0);
  if (shell == 0) {
    const pid_t edo = fork();
    if (edo == 0) {
      setpgid(0, 0);  // a job of its own, in the background: the shell's group keeps the terminal
      exec_with_env({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "read_tty", "4"}, kClean);
    }
    setpgid(edo, edo);
    int st = 0;
    pid_t r = 0;
    for (int i = 0; i < 6000 && (r = waitpid(edo, &st, WNOHANG | WUNTRACED)) == 0; ++i) usleep(10000);
    if (r != edo || !WIFSTOPPED(st)) {
      if (r == 0) kill(-edo, SIGKILL);
      _exit(100);  // edo did not stop with its job
    }
    signal(SIGTTOU, SIG_IGN);
    tcsetpgrp(0, edo);  // `fg`
    kill(-edo, SIGCONT);
    waitpid(edo, &st, 0);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
  std::string out;
  auto read_some = [&] {
    char buf[4096];
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(master, &fds);
    timeval tv{0, 50000};
    if (select(master + 1, &fds, nullptr, nullptr, &tv) > 0) {
      const ssize_t n = read(master, buf, sizeof buf);
      if (n > 0) out.append(buf, size_t(n));
      if (n <= 0) usleep(10000);  // EIO: see ctrl_c_in_a_terminal()
    }
  };
  for (int i = 0; i < 400 && out.find("ready") == std::string::npos; ++i) read_some();
  ASSERT_NE(out.find("ready"), std::string::npos) << out;
  ASSERT_EQ(write(master, "hello\n", 6), 6);  // waits in the terminal until the job may read
  int st = 0;
  pid_t r = 0;
  for (int i = 0; i < 2400 && (r = waitpid(shell, &st, WNOHANG)) == 0; ++i) read_some();  // the shell's own bound is 60 s
  close(master);
  if (r != shell) {
    kill(shell, SIGKILL);
    waitpid(shell, nullptr, 0);
    FAIL() << "did not end: " << out;
  }
  ASSERT_TRUE(WIFEXITED(st)) << out;
  EXPECT_EQ(WEXITSTATUS(st), 4) << "100: edo did not stop with its job\n" << out;
  EXPECT_NE(out.find("got hello"), std::string::npos) << out;
}

// The state letter of /proc/<pid>/stat ('T' stopped), or 0 when it is gone.
char process_state(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// Without the terminal (a script's edo), a SIGTSTP to edo stops the job's group before edo
// stops, and a SIGCONT to edo continues the job too: the job never runs on behind a stopped
// edo, nor stays stopped behind a running one.
TEST(TracerSignals, SigtstpToRecordStopsAndContinuesTheJobWithIt) {
  const std::string count = tmp_path("tstp.count"), db = tmp_path("tstp_script.edodb");
  Background b = start({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "count_signals", "3", count}, kClean);
  std::string out;
  const pid_t job = wait_ready(b, out);
  if (job < 0) FAIL() << "the job never got ready: " << out;
  kill(b.pid, SIGTSTP);
  int st = 0;
  pid_t r = 0;
  for (int i = 0; i < 3000 && (r = waitpid(b.pid, &st, WNOHANG | WUNTRACED)) == 0; ++i) usleep(10000);
  ASSERT_EQ(r, b.pid) << slurp(b.out);
  ASSERT_TRUE(WIFSTOPPED(st));
  EXPECT_EQ(process_state(job), 'T');  // stopped before edo stopped itself
  kill(b.pid, SIGCONT);
  char state = 'T';
  for (int i = 0; i < 3000 && (state = process_state(job)) == 'T'; ++i) usleep(10000);
  EXPECT_NE(state, 'T') << "the job stayed stopped";
  kill(b.pid, SIGTERM);
  EXPECT_EQ(wait_exit(b), 3) << slurp(b.out);
  EXPECT_EQ(slurp(count), "TERM\n");
}

// ---- a signal right after a registration loses nothing (issue 24) ----
// The job registers a table and at once sends SIGTERM to `edo record` (the earliest moment
// there is): its process is known to edo already (it connects when it registers), so edo
// asks it for a flush before passing the signal on, and the table is in the database.
TEST(TracerSignals, SigtermToRecordRightAfterARegistrationKeepsTheTable) {
#ifdef __SANITIZE_THREAD__
  constexpr int kRuns = 5;  // scripts/tsan-check.sh: each run is ~10x slower there
#else
  constexpr int kRuns = 20;
#endif
  for (int i = 0; i < kRuns; ++i) {
    const std::string db = tmp_path("early" + std::to_string(i) + ".edodb");
    Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "register_kill_parent", "0"}, kClean);
    ASSERT_EQ(r.status, 128 + SIGTERM) << "run " << i << "\n" << r.err;
    Profile p = load(db);
    const edo::model::Session* s = session_with_table(p, "emb.user");
    ASSERT_NE(s, nullptr) << "run " << i << ": no table in the database\n" << r.err;
    EXPECT_EQ(s->exit_code.value_or(-1), 128 + SIGTERM) << "run " << i;
  }
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
