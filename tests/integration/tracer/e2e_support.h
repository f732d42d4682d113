// Helpers of the tracer's end-to-end tests: run a program with a given environment and
// collect its exit status and output, temporary paths per test, reading a database back.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"

namespace edo_e2e {

namespace fs = std::filesystem;
using edo::model::Profile;

struct Result {
  int status = -1;  // exit code, or 128+signal
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string tmp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / ("edo_tracer_" + std::to_string(getpid()) + "_" + info->name());
  // A fresh folder per test: one left by an earlier run with the same pid would hold outputs
  // that edo record refuses to replace.
  static std::set<std::string> fresh;
  if (fresh.insert(dir.string()).second) fs::remove_all(dir);
  fs::create_directories(dir);
  return (dir / name).string();
}

// Runs argv with extra environment (NAME=VALUE; "NAME=" with empty value unsets NAME).
// In a forked child: apply `env` ("K=V" sets, "K=" unsets) and exec argv; 126 if exec fails.
[[noreturn]] inline void exec_with_env(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  for (auto& kv : env) {
    auto eq = kv.find('=');
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (v.empty()) unsetenv(k.c_str());
    else setenv(k.c_str(), v.c_str(), 1);
  }
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  execv(a[0], a.data());
  _exit(126);
}

inline Result run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  const std::string out = tmp_path("stdout.txt"), err = tmp_path("stderr.txt");
  pid_t pid = fork();
  if (pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGHUP}) signal(sig, SIG_DFL);
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    exec_with_env(argv, env);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  Result r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// What LD_PRELOAD must hold to inject `lib`: in sanitizer builds the sanitizer runtime comes
// first (the same rule `edo record` applies).
inline std::string preload_of(const std::string& lib) {
#ifdef EDO_SANITIZER_PRELOAD
  if (std::string(EDO_SANITIZER_PRELOAD).size() > 0) return std::string(EDO_SANITIZER_PRELOAD) + ":" + lib;
#endif
  return lib;
}

inline const std::vector<std::string> kClean = {"EDO_OUTPUT=", "EDO_CHANNEL=", "LD_PRELOAD=", "NVTX_INJECTION64_PATH=",
                                         "EDO_OUTPUT_OWNER=", "EDO_ROOT_PID=", "EDO_FLUSH_MS=", "EDO_ASYNC=", "EDO_RUN_ID="};

inline std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> e = kClean;
  e.insert(e.end(), extra.begin(), extra.end());
  return e;
}

// A program started in the background (stdout and stderr into one file), for tests that
// signal it while it runs.
struct Background {
  pid_t pid = -1;
  std::string out;  // its stdout + stderr
};

inline Background start(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  static int started = 0;
  Background b;
  b.out = tmp_path("background" + std::to_string(++started) + ".txt");
  std::ofstream(b.out).close();  // exists and is empty before the child writes
  b.pid = fork();
  if (b.pid == 0) {
    // Default dispositions whatever the test runner had (a shell's background job ignores
    // SIGINT, and exec keeps that).
    for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGHUP}) signal(sig, SIG_DFL);
    int fd = open(b.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    exec_with_env(argv, env);
  }
  return b;
}

// Waits until the output holds `text` (a generous 300 s at most: a job's start on a loaded
// machine takes what it takes); returns the output.
inline std::string wait_for_output(const Background& b, const std::string& text) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (true) {
    got = slurp(b.out);
    if (got.find(text) != std::string::npos || std::chrono::steady_clock::now() > deadline) break;
    siginfo_t info{};
    // It ended without the text: no point waiting (WNOWAIT: wait_exit() still reaps it).
    if (waitid(P_PID, id_t(b.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == b.pid) {
      got = slurp(b.out);
      break;
    }
    usleep(25000);
  }
  return got;
}

// Waits for the job's "ready <pid>" line and returns that pid; -1 when it never came (the
// program is then killed and reaped, and `out` holds what it printed).
inline pid_t wait_ready(const Background& b, std::string& out);

// The exit status (code, or 128+signal); -1 when it was still running after `watchdog_s`
// seconds (it is SIGKILLed then: a hang, never a slow run, since nothing it does takes long
// -- the watchdog is at least 300 s, so a loaded machine is never taken for a hang).
inline int wait_exit(const Background& b, int watchdog_s = 300) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::max(watchdog_s, 300));
  while (std::chrono::steady_clock::now() < deadline) {
    int st = 0;
    if (waitpid(b.pid, &st, WNOHANG) == b.pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    usleep(10000);
  }
  kill(b.pid, SIGKILL);
  waitpid(b.pid, nullptr, 0);
  return -1;
}

inline pid_t wait_ready(const Background& b, std::string& out) {
  out = wait_for_output(b, "ready ");
  const auto at = out.find("ready ");
  if (at == std::string::npos) {
    kill(b.pid, SIGKILL);
    wait_exit(b);
    return -1;
  }
  return pid_t(std::stol(out.substr(at + 6)));
}

inline Profile load(const std::string& path) { return edo::db::ProfileStore(path, edo::db::ProfileStore::Mode::kReadOnly).load(); }

inline const edo::model::Table* table(const Profile& p, int64_t session_id, const std::string& name) {
  for (auto& t : p.tables)
    if (t.session_id == session_id && t.name == name) return &t;
  return nullptr;
}

}  // namespace edo_e2e
