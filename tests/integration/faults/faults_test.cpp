// Faults on the collector side of `edo record`, tested by what a user sees: the exit code,
// stderr, and what the database holds afterwards. Nothing here depends on how the tracer
// flushes or handles signals inside the job.
//
//   KillAtRandomPoints       the job killed by SIGKILL, SIGSEGV or SIGTERM at a random moment
//                            (EDO_FAULT_RUNS runs per signal, default 5; EDO_FAULT_SEED)
//   RealMemoryFault          the job faults by itself (a write to a read-only page)
//   DiskFull*                the database's file system fills up (or its file size limit is
//                            reached) while the job runs
//   EightProcessesAtOnce     forked workers and exec'ed ranks recording into one collector
//   CollectorKilledAtRandomPoints  `edo record` itself SIGKILLed at a random moment: the job
//                            runs to its end and keeps the rest in <output>.unsent.<pid>
//   DiskFullForTheWholeRun*  the disk full (a 256 KiB tmpfs) or the file size limit reached
//                            from the first data save on: every reader says incomplete, why
//                            and how much (issue 30 §5)
//   DiesBeforeItsFirstFlush  a process that connects and dies at once still has its session,
//                            marked ended_without_final_flush (issue 30 §6)
//   AConnectionTheJobClosedIsRecordedAsSuch  connection_lost, not a crash (issue 30 §6)
//   EverySizeOfASmallDiskSaysWhatItKept  160..320 KiB disks: refused, nothing recorded (no file),
//                            incomplete with why and how much, or complete (issue 30 §5)
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/db/recording_state.h"
#include "edo/model/profile_summary.h"

namespace fs = std::filesystem;

namespace {

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path d = fs::path(::testing::TempDir()) / ("edo_faults_" + std::to_string(getpid()) + "_" + info->name());
  fs::create_directories(d);
  return d.string();
}

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// `edo record` started with stdout (its own and the job's) to a file and stderr to a pipe
// (pipes have no file size limit: the disk-full tests still see every line).
struct Recording {
  pid_t pid = -1;
  int err_fd = -1;
  std::string out_path;
};

// `db`, the file edo record writes, is removed first: edo record never replaces a file.
// `fsize`: edo record (and the job) start under that file size limit (ulimit -f, in bytes).
Recording start_record(const std::vector<std::string>& args, const std::string& out_path,
                       rlim_t fsize = RLIM_INFINITY) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-o") fs::remove(args[i + 1]);
  int p[2];
  if (pipe(p) != 0) throw std::runtime_error("pipe");
  Recording r;
  r.out_path = out_path;
  r.pid = fork();
  if (r.pid == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // killed jobs leave no core files behind
    if (fsize != RLIM_INFINITY) {
      const rlimit lim{fsize, fsize};
      setrlimit(RLIMIT_FSIZE, &lim);
    }
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(p[1], 2);
    close(p[0]);
    for (const char* v : {"EDO_OUTPUT", "EDO_CHANNEL", "LD_PRELOAD", "NVTX_INJECTION64_PATH", "EDO_ROOT_PID",
                          "EDO_FLUSH_MS", "EDO_ASYNC", "EDO_OUTPUT_OWNER", "EDO_RUN_ID"})
      unsetenv(v);
#ifdef EDO_SANITIZER_PRELOAD
    // Sanitizer builds: a memory fault must stay a signal (AddressSanitizer would turn it into
    // exit code 1), and the job's leaks are not what is tested here.
    setenv("ASAN_OPTIONS", "detect_leaks=0:handle_segv=0", 1);
#endif
    std::vector<char*> a{const_cast<char*>(EDO_BIN)};
    for (const auto& s : args) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(126);
  }
  close(p[1]);
  r.err_fd = p[0];
  return r;
}

struct Finished {
  bool exited = false;  // false: edo record itself died by a signal
  int code = -1;        // exit code, or 128+signal
  std::string err;      // edo record's (and the job's) stderr
  std::string out;      // the job's stdout
};

Finished wait_record(Recording& r) {
  Finished f;
  std::string err;
  char buf[4096];
  // Read stderr while waiting, so a chatty run never blocks on a full pipe.
  fcntl(r.err_fd, F_SETFL, O_NONBLOCK);
  int st = 0;
  while (true) {
    ssize_t n;
    while ((n = read(r.err_fd, buf, sizeof buf)) > 0) err.append(buf, size_t(n));
    if (waitpid(r.pid, &st, WNOHANG) == r.pid) break;
    usleep(5000);
  }
  ssize_t n;
  while ((n = read(r.err_fd, buf, sizeof buf)) > 0) err.append(buf, size_t(n));
  close(r.err_fd);
  f.exited = WIFEXITED(st);
  f.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  f.err = err;
  f.out = slurp(r.out_path);
  return f;
}

// The process `edo record` forked for the job (before or after its exec; `exec_only`: after),
// or -1.
pid_t child_of(pid_t parent, bool exec_only = false) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so parse after the last ')'
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    long ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    // Not the anchor edo forks first to make the job's process group: a copy of edo (never
    // exec'd) that leads that group, gone a moment later. (The job never leads its group; an
    // edo that put the job in a group it led is still told apart: the job exec'd.)
    const bool not_exec = line.find("(edo)") != std::string::npos;
    const bool anchor = pgrp == std::stol(name) && not_exec;
    if (ppid == parent && !anchor && !(exec_only && not_exec)) return pid_t(std::stol(name));
  }
  return -1;
}

// "round K T" lines of fault_job: K -> T (monotonic ns after the round's lookup returned).
std::map<int, int64_t> rounds_printed(const std::string& out) {
  std::map<int, int64_t> r;
  std::istringstream in(out);
  std::string word;
  int k;
  long long t;
  while (in >> word) {
    if (word == "round" && in >> k >> t) r[k] = t;
  }
  return r;
}

edo::model::Profile load(const std::string& db) {
  return edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load();
}

const edo::model::TableView* view(const std::vector<edo::model::TableView>& views, const std::string& name) {
  for (const auto& v : views)
    if (v.name == name) return &v;
  return nullptr;
}

std::optional<int> root_exit_code(const edo::model::Profile& p) {
  // The job's own process: the session without a parent among the recorded ones.
  for (const auto& s : p.sessions)
    if (s.exit_code) return s.exit_code;
  return std::nullopt;
}

// Rows 0..m-1 of fault.rows hold `per` reads each, row m at most `per`, later rows none:
// returns m (whole rounds in the database), or -1 when the counts are not such a prefix.
int whole_rounds(const edo::stats::TableAggregate& a, int per) {
  int m = 0;
  while (m < 1000 && a.count(uint64_t(m)) == uint64_t(per)) ++m;
  if (m < 1000 && a.count(uint64_t(m)) > uint64_t(per)) return -1;
  for (int k = m + 1; k < 1000; ++k)
    if (a.count(uint64_t(k)) != 0) return -1;
  return m;
}

const char* signal_name(int sig) {
  return sig == SIGKILL ? "SIGKILL" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGTERM ? "SIGTERM" : "?";
}

}  // namespace

// The job killed at a random moment: before it starts, while it registers, reads and flushes,
// or after it finished. Every run: `edo record` exits 128+signal (0 when the job finished
// first) without being killed itself, the database opens, its session carries that exit code,
// and it holds every round the job completed at least kMarginMs before the kill (20 flush
// intervals), each whole.
TEST(Faults, KillAtRandomPoints) {
  const int runs = int(env_or("EDO_FAULT_RUNS", 5));
  const uint64_t seed = env_or("EDO_FAULT_SEED", std::random_device{}());
  constexpr int kRounds = 40, kPer = 50, kSleepMs = 25, kFlushMs = 20;
  constexpr int64_t kMarginMs = 20 * kFlushMs;
  std::mt19937_64 rng(seed);
  const std::string dir = temp_dir();
  std::printf("kill faults: %d runs per signal, seed %llu (EDO_FAULT_RUNS, EDO_FAULT_SEED)\n", runs,
              static_cast<unsigned long long>(seed));
  for (int sig : {SIGKILL, SIGSEGV, SIGTERM}) {
    int early = 0, mid = 0, finished = 0, rounds_kept = 0, rounds_required = 0;
    for (int run = 0; run < runs; ++run) {
      SCOPED_TRACE(std::string(signal_name(sig)) + " run " + std::to_string(run) + " seed " + std::to_string(seed));
      const std::string db = dir + "/kill.edodb";
      // Mostly anywhere in the job's ~1 s; one run in four in its first 30 ms (exec, the
      // tracer starting, the first registration).
      const int delay_ms = rng() % 4 == 0 ? int(rng() % 30) : int(rng() % 1200);
      Recording rec = start_record({"record", "--flush-ms", std::to_string(kFlushMs), "-o", db, "--", FAULT_JOB, "rounds",
                                    std::to_string(kRounds), std::to_string(kPer), std::to_string(kSleepMs)},
                                   dir + "/job.out");
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      // The job, unless it already finished (then there is nothing to kill).
      pid_t job = -1;
      bool gone = false;
      // (Until it shows up or has finished: a loaded machine may take long to start it.)
      const auto started_by = std::chrono::steady_clock::now() + std::chrono::seconds(300);
      while (job < 0 && !gone && std::chrono::steady_clock::now() < started_by) {
        job = child_of(rec.pid);
        gone = slurp(dir + "/job.out").find("done") != std::string::npos;
        if (job < 0 && !gone) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ASSERT_TRUE(job > 0 || gone) << "edo record never started the job";
      const int64_t kill_t = now_ns();
      if (job > 0) kill(job, sig);
      Finished f = wait_record(rec);
      ASSERT_TRUE(f.exited) << "edo record itself died: " << f.code << "\n" << f.err;
      const bool job_finished = f.out.find("done") != std::string::npos;
      EXPECT_EQ(f.code, job_finished ? 0 : 128 + sig) << f.err;

      edo::model::Profile p;
      ASSERT_NO_THROW(p = load(db)) << f.err;
      ASSERT_FALSE(p.sessions.empty());
      EXPECT_EQ(root_exit_code(p).value_or(-1), f.code);
      const auto printed = rounds_printed(f.out);
      int required = 0;
      for (const auto& [k, t] : printed)
        if (t <= kill_t - kMarginMs * 1'000'000) required = std::max(required, k + 1);
      const auto views = edo::model::table_views(p);
      const auto* t = view(views, "fault.rows");
      const int kept = t ? whole_rounds(t->aggregate, kPer) : 0;
      ASSERT_GE(kept, 0) << "fault.rows counts are not whole rounds";
      EXPECT_GE(kept, required) << "rounds finished " << kMarginMs << " ms before the kill are missing";
      EXPECT_LE(kept, int(printed.size()) + 1) << "more rounds than the job ran";
      if (job_finished) ++finished;
      else if (printed.empty()) ++early;
      else ++mid;
      rounds_kept += kept;
      rounds_required += required;
      fs::remove(db);
    }
    std::printf("  %s: %d runs: %d killed while recording, %d before the first round, %d after the job finished; "
                "every database opened, exit code 128+%d (0 when the job finished first); %d rounds kept where %d were "
                "required\n",
                signal_name(sig), runs, mid, early, finished, sig, rounds_kept, rounds_required);
  }
}

// `edo record` itself SIGKILLed at a random moment while the job records (issue 30): a
// collector crash is a fault the job survives. Every run: the job runs to its end (exit 0,
// every round printed, "done"), the database edo saved before it died opens, and every round
// the job read after edo was dead is, whole, in <output>.unsent.<job pid>, which `edo import`
// turns into a database whose session carries collector_lost; no round is split. The test is
// a child subreaper while it runs, so that the orphaned job becomes its child (its exit code).
TEST(Faults, CollectorKilledAtRandomPoints) {
  const int runs = int(env_or("EDO_FAULT_RUNS", 5));
  const uint64_t seed = env_or("EDO_FAULT_SEED", std::random_device{}());
  constexpr int kRounds = 60, kPer = 50, kSleepMs = 25, kFlushMs = 20;  // the job runs ~1.5 s
  std::mt19937_64 rng(seed);
  const std::string dir = temp_dir();
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  struct Unreap {
    ~Unreap() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
  } unreap;
  int with_rounds_after = 0, rounds_after = 0, rounds_in_unsent = 0, finished_first = 0;
  for (int run = 0; run < runs; ++run) {
    SCOPED_TRACE("run " + std::to_string(run) + " seed " + std::to_string(seed));
    const std::string db = dir + "/collector" + std::to_string(run) + ".edodb";
    const int delay_ms = rng() % 4 == 0 ? int(rng() % 30) : int(rng() % 1200);
    Recording rec = start_record({"record", "--flush-ms", std::to_string(kFlushMs), "-o", db, "--", FAULT_JOB, "rounds",
                                  std::to_string(kRounds), std::to_string(kPer), std::to_string(kSleepMs)},
                                 dir + "/job.out");
    pid_t job = -1;
    const auto started_by = std::chrono::steady_clock::now() + std::chrono::seconds(300);
    // (The job once it runs: before its exec, edo's children are copies of edo, and one of
    // them, the anchor that makes the job's group, is gone a moment later.)
    while (job < 0 && std::chrono::steady_clock::now() < started_by) {
      job = child_of(rec.pid, true);
      if (job < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (job < 0) kill(rec.pid, SIGKILL);
    ASSERT_GT(job, 0) << "edo record never started the job";
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(rec.pid, SIGKILL);
    // stderr (edo's and the job's) is read until the job ends: the job writes to it after edo
    // died, and a closed pipe would kill it by SIGPIPE, which a terminal or file never does.
    std::string err;
    const auto drain = [&] {
      char buf[4096];
      ssize_t n;
      while ((n = read(rec.err_fd, buf, sizeof buf)) > 0) err.append(buf, size_t(n));
    };
    fcntl(rec.err_fd, F_SETFL, O_NONBLOCK);
    int est = 0;
    while (waitpid(rec.pid, &est, WNOHANG) != rec.pid) {
      drain();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const int64_t dead_t = now_ns();  // edo is reaped: gone for good
    if (WIFEXITED(est)) {
      // The job ended first (edo reaped it and finished): nothing was killed.
      drain();
      close(rec.err_fd);
      EXPECT_EQ(WEXITSTATUS(est), 0) << err;
      EXPECT_NE(slurp(dir + "/job.out").find("done"), std::string::npos);
      ++finished_first;
      continue;
    }
    EXPECT_TRUE(WIFSIGNALED(est) && WTERMSIG(est) == SIGKILL);
    // The job, orphaned, is this test's child now (and so is the anchor if edo died while it
    // lived): wait for the job's end (a generous bound: it runs ~1 s).
    int st = 0;
    pid_t r = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
    while ((r = waitpid(job, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      drain();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const int wait_errno = errno;
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    drain();
    close(rec.err_fd);
    if (r < 0 && wait_errno == ECHILD && slurp(dir + "/job.out").find("done") != std::string::npos) {
      ++finished_first;  // the job had ended, and edo reaped it, before edo was killed
      continue;
    }
    if (r != job) {
      kill(job, SIGKILL);
      waitpid(job, nullptr, 0);
      FAIL() << "the job " << job << " did not end after edo record was killed (waitpid: " << r << ", "
             << std::strerror(wait_errno) << ")";
    }
    const std::string out = slurp(dir + "/job.out");
    ASSERT_TRUE(WIFEXITED(st)) << "the job died by signal " << WTERMSIG(st) << "\n" << out;
    EXPECT_EQ(WEXITSTATUS(st), 0) << out;
    EXPECT_NE(out.find("done"), std::string::npos) << out;
    const auto printed = rounds_printed(out);
    EXPECT_EQ(printed.size(), size_t(kRounds)) << out;
    // What edo saved before it died opens (it may hold nothing yet): it never reached the output
    // (renamed there only at the final save), so it is the recording file beside it.
    EXPECT_FALSE(fs::exists(db)) << db;
    const auto kept = edo::db::recording_files_for(db);
    EXPECT_EQ(kept.size(), 1u) << db;
    for (const auto& f : kept) EXPECT_NO_THROW(load(f)) << f;
    int after = 0;
    for (const auto& [k, t] : printed) after += t > dead_t;
    const std::string unsent = db + ".unsent." + std::to_string(job);
    if (!fs::exists(unsent)) {
      EXPECT_EQ(after, 0) << "rounds read after edo died, and no " << unsent;
      continue;
    }
    EXPECT_NE(err.find(" lookups) are kept in " + unsent + " (edo import " + unsent + ")"), std::string::npos) << err;
    const std::string unsent_db = unsent + ".edodb";
    Recording im = start_record({"import", unsent, "-o", unsent_db}, dir + "/import.out");
    const Finished fi = wait_record(im);
    ASSERT_EQ(fi.code, 0) << fi.err;
    const edo::model::Profile u = load(unsent_db);
    ASSERT_EQ(u.sessions.size(), 1u);
    EXPECT_EQ(u.sessions[0].drops.count("collector_lost"), 1u);
    const auto views = edo::model::table_views(u);
    const auto* t = view(views, "fault.rows");
    int in_unsent = 0;
    for (const auto& [k, time] : printed) {
      const uint64_t c = t ? t->aggregate.count(uint64_t(k)) : 0;
      EXPECT_TRUE(c == 0 || c == uint64_t(kPer)) << "round " << k << " split: " << c << " of " << kPer;
      if (time > dead_t) {
        EXPECT_EQ(c, uint64_t(kPer)) << "round " << k << " was read after edo died";
      }
      in_unsent += c == uint64_t(kPer);
    }
    with_rounds_after += after > 0;
    rounds_after += after;
    rounds_in_unsent += in_unsent;
  }
  std::printf("collector killed: %d runs (seed %llu), the job ran to its end in each (%d ended before the kill); %d "
              "with rounds read after edo died (%d rounds, all in the unsent files, which hold %d rounds)\n",
              runs, static_cast<unsigned long long>(seed), finished_first, with_rounds_after, rounds_after,
              rounds_in_unsent);
}

// A job that faults by itself (a write to a read-only page) dies by SIGSEGV: `edo record`
// exits 139, and the rounds before the fault are in the database.
TEST(Faults, RealMemoryFault) {
  const std::string dir = temp_dir(), db = dir + "/segv.edodb", go = dir + "/segv.go";
  // The job faults once the recording holds its first three rounds (it waits for the file
  // `go`): what reached the collector before a crash must survive it. Waiting for that
  // instead of for an amount of time keeps the test whole on a loaded machine.
  setenv("FAULT_JOB_GO", go.c_str(), 1);
  Recording rec = start_record({"record", "--flush-ms", "20", "-o", db, "--", FAULT_JOB, "rounds", "10", "50", "200", "4"},
                               dir + "/job.out");
  unsetenv("FAULT_JOB_GO");
  int before_fault = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (before_fault < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      const auto p = load(edo::db::recording_file_for(db, rec.pid));  // written there until the end
      const auto views = edo::model::table_views(p);
      if (const auto* t = view(views, "fault.rows")) before_fault = whole_rounds(t->aggregate, 50);
    } catch (const std::exception&) {
      // not written yet, or being written
    }
  }
  std::ofstream(go).put('\n');
  Finished f = wait_record(rec);
  ASSERT_TRUE(f.exited) << f.err;
  ASSERT_GE(before_fault, 3) << "the recording never held the job's first rounds";
  EXPECT_EQ(f.code, 128 + SIGSEGV) << f.err;
  EXPECT_EQ(rounds_printed(f.out).size(), 5u) << f.out;
  const auto p = load(db);
  EXPECT_EQ(root_exit_code(p).value_or(-1), 128 + SIGSEGV);
  const auto views = edo::model::table_views(p);
  const auto* t = view(views, "fault.rows");
  ASSERT_NE(t, nullptr);
  // Every round the recording held before the fault is still there after it.
  EXPECT_GE(whole_rounds(t->aggregate, 50), before_fault);
}

namespace {

// What a disk-full run left: edo record's verdict and what the file holds afterwards.
struct DiskFullResult {
  std::string skipped;  // non-empty: the scenario could not be set up here (why)
  bool exited = false;
  int code = -1;
  std::string err, out;
  size_t tables_before_fault = 0;  // tables in the database when the disk filled
  size_t tables_after = 0;         // tables in the database after the run
  bool counts_exact = false;       // every kept table: each row read once
  std::string load_error;
};

// Runs `fault_job grow` (a new 50000-row table every 300 ms, 14 of them) under edo record,
// waits until the database holds at least one table, makes writing fail with `fault`, and
// reads the database back once the run is over and `unfault` ran.
DiskFullResult disk_full_run(const std::string& db, const std::string& out_path, const std::function<void(pid_t)>& fault,
                             const std::function<void()>& unfault) {
  DiskFullResult r;
  Recording rec = start_record({"record", "--flush-ms", "50", "-o", db, "--", FAULT_JOB, "grow", "14", "50000", "300"}, out_path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  // Until the job ends, edo record writes beside `db` (issue 30 §4).
  const std::string live = edo::db::recording_file_for(db, rec.pid);
  while (r.tables_before_fault == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      r.tables_before_fault = load(live).tables.size();
    } catch (const std::exception&) {
    }
  }
  fault(rec.pid);
  Finished f = wait_record(rec);
  unfault();
  r.exited = f.exited;
  r.code = f.code;
  r.err = f.err;
  r.out = f.out;
  try {
    const auto p = load(db);
    r.tables_after = p.tables.size();
    // Every kept table is whole, except that the last save may have caught the newest one
    // between its registration and its lookups (a slow job, e.g. under ThreadSanitizer): that
    // one holds a prefix of its reads, each row at most once.
    size_t newest = 0;
    for (const auto& t : p.tables) newest = std::max<size_t>(newest, std::stoul(t.name.substr(t.name.rfind('.') + 1)));
    r.counts_exact = true;
    for (const auto& t : p.tables) {
      const bool whole = t.aggregate.lookups() == 50000 && t.aggregate.unique_rows() == 50000 && t.aggregate.count(49999) == 1;
      const bool prefix = t.aggregate.lookups() <= 50000 && t.aggregate.unique_rows() == t.aggregate.lookups();
      r.counts_exact &= whole || (prefix && std::stoul(t.name.substr(t.name.rfind('.') + 1)) == newest);
    }
  } catch (const std::exception& e) {
    r.load_error = e.what();
  }
  return r;
}

size_t count_lines_with(const std::string& text, const std::string& what) {
  size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += line.find(what) != std::string::npos;
  return n;
}

void expect_disk_full_handled(const DiskFullResult& r, const std::string& db, const std::string& reason) {
  ASSERT_TRUE(r.exited) << "edo record died by signal " << r.code - 128 << "\n" << r.err;
  ASSERT_GT(r.tables_before_fault, 0u) << "no save before the fault\n" << r.err;
  // The job is unharmed: every round ran, its output is whole.
  EXPECT_EQ(rounds_printed(r.out).size(), 14u) << r.out;
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out;
  // One line says what happened and that the job goes on; one closing line says what is kept.
  EXPECT_EQ(count_lines_with(r.err, "cannot write"), 1u) << r.err;
  // In that line and in the closing one (issue 30 §5: why, and how much the file holds).
  EXPECT_EQ(count_lines_with(r.err, reason), 2u) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "lookups edo received"), 1u) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "the job runs on"), 1u) << r.err;
  EXPECT_EQ(count_lines_with(r.err, db + " is incomplete"), 1u) << r.err;
  EXPECT_EQ(r.err.find("wrote " + db), std::string::npos) << r.err;
  // Documented exit code: the job succeeded, the recording is incomplete -> 1.
  EXPECT_EQ(r.code, 1) << r.err;
  // What was saved before is still there, whole.
  EXPECT_EQ(r.load_error, "");
  EXPECT_GE(r.tables_after, r.tables_before_fault);
  EXPECT_LT(r.tables_after, 14u) << "the fault came too late to test anything";
  EXPECT_TRUE(r.counts_exact);
  std::printf("disk full (%s): %zu of 14 tables saved before the fault, %zu in the file after it; exit %d; stderr:\n%s",
              reason.c_str(), r.tables_before_fault, r.tables_after, r.code, r.err.c_str());
}

}  // namespace

// The file size limit (ulimit -f) of the collector reached mid-recording: every write past it
// fails with EFBIG (and SIGXFSZ, which must not kill the collector).
TEST(Faults, DiskFullFileSizeLimit) {
  const std::string dir = temp_dir(), db = dir + "/fsize.edodb";
  const auto r = disk_full_run(
      db, dir + "/job.out",
      [](pid_t edo) {
        const rlimit lim{1, RLIM_INFINITY};
        ASSERT_EQ(prlimit(edo, RLIMIT_FSIZE, &lim, nullptr), 0) << std::strerror(errno);
      },
      [] {});
  expect_disk_full_handled(r, db, "file size limit");
}

// A real full file system: a small tmpfs (mounted in a private user and mount namespace),
// filled up by another file while the job runs; space is freed after the run, as a user would.
TEST(Faults, DiskFullTmpfs) {
  const std::string outside = temp_dir();
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(report[0]);
    auto say = [&](const std::string& s) {
      if (write(report[1], s.data(), s.size()) < 0) _exit(3);
    };
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      say(std::string("skip cannot create a mount namespace: ") + std::strerror(errno));
      _exit(0);
    }
    std::ofstream("/proc/self/setgroups") << "deny";
    std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
    std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
    const std::string mnt = outside + "/tmpfs";
    fs::create_directories(mnt);
    if (mount("none", mnt.c_str(), "tmpfs", 0, "size=32m") != 0) {
      say(std::string("skip cannot mount a tmpfs: ") + std::strerror(errno));
      _exit(0);
    }
    const std::string db = mnt + "/full.edodb", filler = mnt + "/filler";
    const auto r = disk_full_run(
        db, outside + "/job.out",
        [&](pid_t) {
          // Fill the file system to the last byte.
          int fd = open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
          std::vector<char> block(1 << 16, 'x');
          while (write(fd, block.data(), block.size()) > 0) {
          }
          while (write(fd, block.data(), 1) > 0) {
          }
          close(fd);
        },
        [&] { fs::remove(filler); });
    std::ostringstream s;
    s << "exited " << r.exited << "\ncode " << r.code << "\nbefore " << r.tables_before_fault << "\nafter "
      << r.tables_after << "\nexact " << r.counts_exact << "\nload_error " << r.load_error << "\nerr\n"
      << r.err << "\x1e" << r.out;
    say(s.str());
    _exit(0);
  }
  close(report[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(report[0], buf, sizeof buf)) > 0) text.append(buf, size_t(n));
  close(report[0]);
  int st = 0;
  waitpid(child, &st, 0);
  if (text.rfind("skip ", 0) == 0) GTEST_SKIP() << text.substr(5) << " (DiskFullFileSizeLimit covers disk full here)";
  DiskFullResult r;
  std::istringstream in(text.substr(0, text.find("\nerr\n")));
  std::string key;
  while (in >> key) {
    if (key == "exited") in >> r.exited;
    else if (key == "code") in >> r.code;
    else if (key == "before") in >> r.tables_before_fault;
    else if (key == "after") in >> r.tables_after;
    else if (key == "exact") in >> r.counts_exact;
    else if (key == "load_error") std::getline(in, r.load_error), r.load_error.erase(0, r.load_error.find_first_not_of(' '));
  }
  const size_t err_at = text.find("\nerr\n") + 5, sep = text.find('\x1e');
  r.err = text.substr(err_at, sep - err_at);
  r.out = text.substr(sep + 1);
  expect_disk_full_handled(r, outside + "/tmpfs/full.edodb", "the disk is full");
}

// Eight processes record into one collector at once, started together: four forked workers
// that inherit the parent's table and four exec'ed ranks that register it themselves. Process
// K reads row K (K+1)*100 times. Every count arrives, in EDO_FAULT_RUNS runs (3 by default).
TEST(Faults, EightProcessesAtOnce) {
  const int runs = int(env_or("EDO_FAULT_RUNS", 3));
  const std::string dir = temp_dir();
  for (int run = 0; run < runs; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const std::string db = dir + "/ranks.edodb";
    Recording rec = start_record({"record", "--flush-ms", "10", "-o", db, "--", FAULT_JOB, "ranks", "8"}, dir + "/job.out");
    Finished f = wait_record(rec);
    ASSERT_TRUE(f.exited);
    ASSERT_EQ(f.code, 0) << f.err;
    const auto p = load(db);
    // Summed over every process's rows of the table (how the report groups them is not what
    // is tested here).
    std::vector<uint64_t> counts(8, 0);
    uint64_t lookups = 0, total = 0;
    for (const auto& t : p.tables) {
      if (t.name != "shared.emb") continue;
      lookups += t.aggregate.lookups();
      for (uint64_t k = 0; k < 8; ++k) counts[k] += t.aggregate.count(k);
    }
    for (uint64_t k = 0; k < 8; ++k) {
      EXPECT_EQ(counts[k], (k + 1) * 100) << "process " << k;
      total += (k + 1) * 100;
    }
    EXPECT_EQ(lookups, total);
    std::set<int64_t> pids;
    for (const auto& s : p.sessions) pids.insert(s.pid);
    EXPECT_GE(pids.size(), 9u) << "the parent and 8 processes";
    fs::remove(db);
  }
  std::printf("8 processes at once: %d runs, every count of every process in the database\n", runs);
}

// ---- issue 30: the output file and what a recording says of itself ----
namespace {

struct Ran {
  int code = -1;
  std::string out;  // stdout and stderr together
};

Ran run_edo(const std::string& args) {
  Ran r;
  FILE* p = popen((std::string(EDO_BIN) + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string meta(const edo::model::Profile& p, const std::string& key) {
  auto it = p.metadata.find(key);
  return it == p.metadata.end() ? "" : it->second;
}

}  // namespace

// Issue 30 §4: two `edo record --force -o same.edodb` at once left an empty 4 KiB file while both
// said "wrote same.edodb". Each records into a file of its own and renames it over the output
// at the end: the output is one whole recording (the last to finish), never a mix or nothing,
// and no recording file is left behind.
TEST(Faults, TwoForcedRecordingsOfOneOutputLeaveOneWholeRecording) {
  const std::string dir = temp_dir(), db = dir + "/same.edodb";
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    fs::remove(db);
    { edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kCreate); }  // an earlier recording to replace
    // "--output" (not "-o"): start_record removes an "-o" file, this one must stay.
    const std::vector<std::string> args = {"record", "--force", "--flush-ms", "20", "--output", db, "--", FAULT_JOB,
                                           "rounds", "20", "1000", "20"};
    Recording a = start_record(args, dir + "/a.out");
    Recording b = start_record(args, dir + "/b.out");
    Finished fa = wait_record(a), fb = wait_record(b);
    ASSERT_TRUE(fa.exited && fb.exited);
    EXPECT_EQ(fa.code, 0) << fa.err;
    EXPECT_EQ(fb.code, 0) << fb.err;
    edo::model::Profile p;
    ASSERT_NO_THROW(p = load(db)) << fa.err << fb.err;
    uint64_t lookups = 0;
    size_t tables = 0;
    for (const auto& t : p.tables)
      if (t.name == "fault.rows") lookups += t.aggregate.lookups(), ++tables;
    EXPECT_EQ(tables, 1u) << "one recording, not a mix of two";
    EXPECT_EQ(lookups, 20u * 1000u);
    EXPECT_EQ(p.sessions.size(), 1u);
    EXPECT_EQ(meta(p, "recording.state"), "complete");
    EXPECT_TRUE(edo::db::recording_files_for(db).empty()) << edo::db::recording_files_for(db).front();
  }
  // Without --force the output is never replaced: one run places its recording, the other says
  // where it kept its own (or, started after the first ended, refuses the existing output).
  fs::remove(db);
  const std::vector<std::string> args = {"record", "--flush-ms", "20", "--output", db, "--", FAULT_JOB,
                                         "rounds", "20", "1000", "20"};
  Recording a = start_record(args, dir + "/a.out");
  Recording b = start_record(args, dir + "/b.out");
  Finished fa = wait_record(a), fb = wait_record(b);
  ASSERT_TRUE(fa.exited && fb.exited);
  EXPECT_EQ((fa.code == 0) + (fb.code == 0), 1) << fa.err << fb.err;
  EXPECT_EQ((fa.code == 1) + (fb.code == 1), 1) << fa.err << fb.err;
  const edo::model::Profile placed = load(db);
  ASSERT_EQ(placed.tables.size(), 1u);
  EXPECT_EQ(placed.tables[0].aggregate.lookups(), 20u * 1000u);
  for (const std::string& kept : edo::db::recording_files_for(db)) {
    EXPECT_NE((fa.err + fb.err).find(kept), std::string::npos) << "a kept recording is named: " << fa.err << fb.err;
    const edo::model::Profile p = load(kept);
    ASSERT_EQ(p.tables.size(), 1u);
    EXPECT_EQ(p.tables[0].aggregate.lookups(), 20u * 1000u);
  }
}

// Issue 30 §10: `edo report` on a recording being written said "exit unknown, 0.0 s", and so
// did it on one whose edo record was killed. The live file says "recording in progress"; once
// its edo record is gone without a final save, "incomplete", with the time it holds.
TEST(Faults, ALiveAndACutShortRecordingSaySo) {
  const std::string dir = temp_dir(), db = dir + "/live.edodb", go = dir + "/live.go";
  fs::remove(go);
  // The job holds at round 4 until `go` exists (then faults): the recording is live until then.
  setenv("FAULT_JOB_GO", go.c_str(), 1);
  Recording rec = start_record({"record", "--flush-ms", "20", "-o", db, "--", FAULT_JOB, "rounds", "10", "50", "20", "4"},
                               dir + "/job.out");
  unsetenv("FAULT_JOB_GO");
  const std::string live = edo::db::recording_file_for(db, rec.pid);
  int rounds = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  // (An edo record that writes the output itself while the job runs, as before issue 30, fails
  // here at once.)
  while (rounds < 3 && std::chrono::steady_clock::now() < deadline && !fs::exists(db)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      const auto views = edo::model::table_views(load(live));
      if (const auto* t = view(views, "fault.rows")) rounds = whole_rounds(t->aggregate, 50);
    } catch (const std::exception&) {
    }
  }
  ASSERT_GE(rounds, 3) << "the recording file never held the first rounds";

  Ran r = run_edo("report '" + live + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("recording in progress"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("exit unknown, 0.0 s"), std::string::npos) << r.out;
  r = run_edo("report --json '" + live + "'");
  EXPECT_NE(r.out.find("\"recording\": \"in_progress\""), std::string::npos) << r.out;
  // The output itself does not exist yet: the error says where the recording is.
  r = run_edo("report '" + db + "'");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(live), std::string::npos) << r.out;

  // Cut short: edo record dies before its final save (the job, in its own process group, is let
  // go and ends by itself).
  kill(rec.pid, SIGKILL);
  Finished f = wait_record(rec);
  EXPECT_FALSE(f.exited);
  std::ofstream(go) << "go";
  r = run_edo("report '" + live + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("incomplete"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("recording in progress"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0.0 s"), std::string::npos) << "the real duration: " << r.out;
  r = run_edo("report --json '" + live + "'");
  EXPECT_NE(r.out.find("\"recording\": \"incomplete\""), std::string::npos) << r.out;
  const size_t at = r.out.find("\"duration_s\": ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GT(std::strtod(r.out.c_str() + at + 14, nullptr), 0.0) << r.out;
  r = run_edo("tune --budget 1GiB --backend cpu --time-limit 30 '" + live + "'");
  EXPECT_NE(r.out.find("incomplete"), std::string::npos) << r.out;
  // edo merge does not pass it off as whole: refused, or with --force marked incomplete.
  const std::string other = dir + "/other.edodb", merged = dir + "/merged.edodb";
  ASSERT_EQ(run_edo("synth -o '" + other + "' --tables 1 --rows 100 --lookups 100").code, 0);
  r = run_edo("merge '" + live + "' '" + other + "' -o '" + merged + "'");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("incomplete"), std::string::npos) << r.out;
  r = run_edo("merge --force '" + live + "' '" + other + "' -o '" + merged + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  r = run_edo("report --json '" + merged + "'");
  EXPECT_NE(r.out.find("\"recording\": \"incomplete\""), std::string::npos) << r.out;
  // Let the job end before the folder goes.
  const auto job_gone = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (slurp(dir + "/job.out").find("round 4") == std::string::npos && std::chrono::steady_clock::now() < job_gone)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// Issue 30 §9: values out of range are refused at the C API (EDO_ERR_INVALID_ARGUMENT = -1), not
// stored: edo_table_set_extra_bytes(~0) showed as "16.00 EiB (200 % of peak)".
TEST(Faults, OutOfRangeApiValuesAreRefusedNotRecorded) {
  const std::string dir = temp_dir(), db = dir + "/ranges.edodb";
  Recording rec = start_record({"record", "-o", db, "--", FAULT_JOB, "ranges"}, dir + "/job.out");
  Finished f = wait_record(rec);
  ASSERT_TRUE(f.exited);
  ASSERT_EQ(f.code, 0) << f.err;
  std::map<std::string, long> code;
  std::istringstream in(f.out);
  std::string name;
  long c;
  while (in >> name >> c) code[name] = c;
  for (const char* bad : {"register_negative_rows", "register_overflow", "extra_all_ones", "extra_2_57", "lookup_negative_count"})
    EXPECT_EQ(code.count(bad) ? code[bad] : 99, -1) << bad << "\n" << f.out;
  for (const char* ok : {"register_ok", "extra_ok", "lookup_ok"}) EXPECT_EQ(code.count(ok) ? code[ok] : 99, 0) << ok;
  const auto p = load(db);
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].name, "ok.emb");
  EXPECT_EQ(p.tables[0].optimizer_bytes, 64u);
  EXPECT_EQ(p.tables[0].aggregate.lookups(), 3u);
  const Ran r = run_edo("report '" + db + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("EiB"), std::string::npos) << r.out;
}

// ---- issue 30 §5: a recording that lost data says so in every reader ----
namespace {

// The text with every run of spaces and line breaks made one space: `edo report` wraps its notes
// to the terminal's width.
std::string flat(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}

// `edo report --json`'s numbers, found by key in its text (the test needs no JSON parser).
double json_number(const std::string& text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + key.size() + 4, nullptr);
}

constexpr int kGrowTables = 6, kGrowRows = 50000;

// `fault_job grow` (6 tables of 50000 rows, each row read once: 300000 lookups) recorded into
// `db` where the disk is full (or the file size limit reached) from the first save that holds
// a table on: the file keeps its start ("in progress") and nothing of the job. Every reader
// must say incomplete, why (`reason`), and how much it holds of what edo received.
void expect_whole_run_loss_said_everywhere(const std::string& db, const Finished& f, const std::string& reason) {
  ASSERT_TRUE(f.exited) << "edo record died by signal " << f.code - 128 << "\n" << f.err;
  // The job is unharmed; edo record exits 1 (the job succeeded, the recording did not).
  EXPECT_EQ(rounds_printed(f.out).size(), size_t(kGrowTables)) << f.out;
  EXPECT_NE(f.out.find("done"), std::string::npos) << f.out;
  EXPECT_EQ(f.code, 1) << f.err;
  EXPECT_EQ(f.err.find("wrote " + db), std::string::npos) << f.err;
  const std::string received = std::to_string(kGrowTables * kGrowRows);
  if (!fs::exists(db)) {
    // Not even the file's start could be written: no file is left that reads as a whole, empty
    // recording, and edo record says so.
    EXPECT_EQ(count_lines_with(f.err, "nothing was recorded"), 1u) << f.err;
    EXPECT_NE(f.err.find(reason), std::string::npos) << f.err;
    EXPECT_TRUE(edo::db::recording_files_for(db).empty());
    std::printf("%s from the start: nothing could be written; edo record:\n%s", reason.c_str(), f.err.c_str());
    return;
  }
  // edo record's closing line: what the file holds, measured (not "up to 4.2 s" of nothing).
  EXPECT_EQ(count_lines_with(f.err, db + " is incomplete ("), 1u) << f.err;
  EXPECT_EQ(count_lines_with(f.err, reason), 2u) << "the first failed save and the closing line\n" << f.err;
  EXPECT_NE(f.err.find("of the " + received + " lookups edo received"), std::string::npos) << f.err;

  Ran r = run_edo("report '" + db + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("incomplete"), std::string::npos) << r.out;
  EXPECT_NE(flat(r.out).find(reason), std::string::npos) << r.out;
  EXPECT_NE(flat(r.out).find("of the " + received + " lookups edo record received"), std::string::npos) << r.out;
  r = run_edo("report --json '" + db + "'");
  EXPECT_NE(r.out.find("\"recording\": \"incomplete\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"recording_loss\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(reason), std::string::npos) << r.out;
  EXPECT_EQ(json_number(r.out, "received_lookups"), double(kGrowTables * kGrowRows)) << r.out;
  const double held = json_number(r.out, "held_lookups");
  EXPECT_GE(held, 0.0) << r.out;
  EXPECT_LT(held, double(kGrowTables * kGrowRows)) << r.out;
  EXPECT_GT(json_number(r.out, "received_s"), json_number(r.out, "held_s")) << r.out;
  // edo tune (and the dashboard, which words it with the same RecordingState::describe()).
  r = run_edo("tune --budget 1GiB --backend cpu --time-limit 30 '" + db + "'");
  EXPECT_NE(r.out.find("incomplete"), std::string::npos) << r.out;
  EXPECT_NE(flat(r.out).find(reason), std::string::npos) << r.out;
  const auto p = load(db);
  const auto state = edo::db::recording_state(p);
  EXPECT_FALSE(state.whole());
  EXPECT_NE(state.describe().find(reason), std::string::npos) << state.describe();
  std::printf("%s from the first data save on: edo record:\n%sedo report says: %s\n", reason.c_str(), f.err.c_str(),
              state.describe().c_str());
}

// A tmpfs of `kib` KiB mounted at `dir` for the test's life (we run as root); `error` says why
// not when it cannot be.
struct SmallTmpfs {
  std::string dir, error;
  SmallTmpfs(const std::string& at, int kib) : dir(at) {
    fs::create_directories(dir);
    if (mount("edo-faults", dir.c_str(), "tmpfs", 0, ("size=" + std::to_string(kib) + "k").c_str()) != 0)
      error = std::string("cannot mount a ") + std::to_string(kib) + " KiB tmpfs (" + std::strerror(errno) +
              "; the test needs root or CAP_SYS_ADMIN)";
  }
  ~SmallTmpfs() {
    if (error.empty()) umount2(dir.c_str(), MNT_DETACH);
  }
};

}  // namespace

// Issue 30 §5: a disk full for the whole run left a file that `edo report` showed as a clean,
// empty recording (exit 0, "no embedding tables recorded") while `edo record` said it "holds the
// recording up to 4.2 s". On a 256 KiB tmpfs the file's start fits and no save with a table does.
TEST(Faults, DiskFullForTheWholeRunTmpfs) {
  const std::string dir = temp_dir();
  SmallTmpfs tmpfs(dir + "/tiny", 256);
  if (!tmpfs.error.empty()) GTEST_SKIP() << tmpfs.error << " (DiskFullForTheWholeRunFileSizeLimit covers it)";
  const std::string db = tmpfs.dir + "/full.edodb";
  Recording rec = start_record({"record", "--flush-ms", "50", "-o", db, "--", FAULT_JOB, "grow", std::to_string(kGrowTables),
                                std::to_string(kGrowRows), "100"},
                               dir + "/job.out");
  const Finished f = wait_record(rec);
  expect_whole_run_loss_said_everywhere(db, f, "the disk is full");
}

// The same with the file size limit (ulimit -f 256 KiB, set before edo record starts): every
// write past it fails with EFBIG (and SIGXFSZ, which edo ignores).
TEST(Faults, DiskFullForTheWholeRunFileSizeLimit) {
  const std::string dir = temp_dir(), db = dir + "/fsize.edodb";
  Recording rec = start_record({"record", "--flush-ms", "50", "-o", db, "--", FAULT_JOB, "grow", std::to_string(kGrowTables),
                                std::to_string(kGrowRows), "100"},
                               dir + "/job.out", 256 * 1024);
  const Finished f = wait_record(rec);
  expect_whole_run_loss_said_everywhere(db, f, "file size limit");
}

// Every size of a small disk, from one that cannot take an empty database to one that takes a
// little recording, in 4 KiB steps: each run ends in one of four outcomes, each said as it is,
// and never in a file that reads as a clean recording of nothing. Among the sizes is the one
// where the database can be created but not even its first ("in progress") save fits: then no
// file is left and `edo record` says that nothing was recorded (issue 30 §5).
TEST(Faults, EverySizeOfASmallDiskSaysWhatItKept) {
  const std::string dir = temp_dir();
  int refused = 0, nothing = 0, incomplete = 0, no_note = 0, complete = 0;
  for (int kib = 160; kib <= 320; kib += 4) {
    SCOPED_TRACE(std::to_string(kib) + " KiB");
    SmallTmpfs tmpfs(dir + "/disk" + std::to_string(kib), kib);
    if (!tmpfs.error.empty()) GTEST_SKIP() << tmpfs.error;
    const std::string db = tmpfs.dir + "/small.edodb";
    Recording rec = start_record({"record", "-o", db, "--", FAULT_JOB, "rounds", "2", "10", "10"}, dir + "/job.out");
    const Finished f = wait_record(rec);
    ASSERT_TRUE(f.exited) << f.err;
    const bool job_ran = f.out.find("done") != std::string::npos;
    EXPECT_TRUE(edo::db::recording_files_for(db).empty()) << "a recording file was left behind";
    if (!job_ran) {
      // The database could not even be created: said before the job starts, which then never runs.
      ++refused;
      EXPECT_EQ(f.code, 1) << f.err;
      EXPECT_NE(f.err.find("cannot create an edo database"), std::string::npos) << f.err;
      EXPECT_FALSE(fs::exists(db));
    } else if (!fs::exists(db)) {
      ++nothing;
      EXPECT_EQ(f.code, 1) << f.err;
      EXPECT_EQ(count_lines_with(f.err, "nothing was recorded: " + db + " could not be written at all (the disk is full"), 1u)
          << f.err;
      EXPECT_NE(f.err.find("its 20 lookups are lost"), std::string::npos) << f.err;
    } else {
      const auto state = edo::db::recording_state(load(db));
      const Ran r = run_edo("report --json '" + db + "'");
      if (state.whole()) {
        ++complete;
        EXPECT_EQ(f.code, 0) << f.err;
        EXPECT_NE(f.err.find("wrote " + db), std::string::npos) << f.err;
        EXPECT_NE(r.out.find("\"recording\": \"complete\""), std::string::npos) << r.out;
      } else {
        ++incomplete;
        EXPECT_EQ(f.code, 1) << f.err;
        EXPECT_NE(r.out.find("\"recording\": \"incomplete\""), std::string::npos) << r.out;
        EXPECT_EQ(count_lines_with(f.err, db + " is incomplete (the disk is full"), 1u) << f.err;
        if (state.save_error.empty()) {
          // A disk so full that not even the note of why fitted (the sizes where the file's
          // start just fits): the file says it was cut short and where the reason was said.
          ++no_note;
          EXPECT_NE(state.describe().find("no room left even for a note of why"), std::string::npos) << state.describe();
        } else {
          EXPECT_NE(state.describe().find("the disk is full"), std::string::npos) << state.describe();
          EXPECT_EQ(json_number(r.out, "received_lookups"), 20.0) << r.out;
        }
      }
    }
  }
  std::printf("small disks of 160..320 KiB: %d refused before the job, %d with nothing recorded (no file), %d incomplete "
              "(%d of them with no room for the note of why), %d complete\n",
              refused, nothing, incomplete, no_note, complete);
  EXPECT_LT(no_note * 4, incomplete) << "the note of why mostly fits (edo holds a little space back for it)";
  EXPECT_GT(refused, 0) << "start lower: every size took the database";
  EXPECT_GT(nothing, 0) << "no size took the database but not its first save";
  EXPECT_GT(incomplete + complete, 0) << "end higher: no size took the recording's start";
}

// ---- issue 30 §6: every loss lands in the database ----

// A process that connects (it registered a table) and dies before its first flush left no
// session in 1 of 4 runs, and `edo record` blamed a static binary or a cleared LD_PRELOAD. Now
// its connection is its session: the job's pid, exit 139, ended_without_final_flush.
TEST(Faults, DiesBeforeItsFirstFlush) {
  const int runs = int(env_or("EDO_FAULT_RUNS", 4));
  const std::string dir = temp_dir(), db = dir + "/early.edodb";
  int before_first_flush = 0;
  for (int run = 0; run < runs; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    Recording rec = start_record({"record", "-o", db, "--", FAULT_JOB, "early_fault"}, dir + "/job.out");
    Finished f = wait_record(rec);
    ASSERT_TRUE(f.exited) << f.err;
    EXPECT_EQ(f.code, 128 + SIGSEGV) << f.err;
    EXPECT_EQ(f.err.find("statically linked"), std::string::npos) << f.err;
    const auto p = load(db);
    ASSERT_EQ(p.sessions.size(), 1u) << f.err;
    const auto& s = p.sessions[0];
    EXPECT_GT(s.pid, 0);
    EXPECT_EQ(s.parent_pid, rec.pid) << "the job's parent is edo record";
    EXPECT_EQ(s.exit_code.value_or(-1), 128 + SIGSEGV);
    EXPECT_EQ(s.drops.count("ended_without_final_flush") ? s.drops.at("ended_without_final_flush") : 0u, 1u) << f.err;
    EXPECT_NE(s.command.find("early_fault"), std::string::npos) << s.command;
    before_first_flush += p.tables.empty();
    const Ran r = run_edo("report --json '" + db + "'");
    EXPECT_NE(r.out.find("\"ended_without_final_flush\": 1"), std::string::npos) << r.out;
    fs::remove(db);
  }
  std::printf("a process dead at once: %d runs, %d of them before its first flush; each has its session, marked "
              "ended_without_final_flush\n",
              runs, before_first_flush);
}

// A job that closed the tracer's connection (it closes every fd and takes the numbers back) was
// recorded as a process "killed from outside, crashed, or still running" (ended_without_final_flush)
// while it ran on and kept the rest of its trace in the unsent file; an undelivered rest left the
// database at "dropped events: 0". The database now says what happened: connection_lost. (Only
// where the tracer works in the shared descriptor table: the job's threads may not unshare
// theirs, "fds-shared"; in a table of its own the job cannot reach the connection.)
TEST(Faults, AConnectionTheJobClosedIsRecordedAsSuch) {
  const std::string dir = temp_dir(), db = dir + "/fds.edodb";
  Recording rec = start_record(
      {"record", "--flush-ms", "10", "-o", db, "--", UNTOUCHED_JOB, "fds-shared", dir + "/traced.txt", "30"}, dir + "/job.out");
  const Finished f = wait_record(rec);
  ASSERT_TRUE(f.exited) << f.err;
  ASSERT_EQ(f.code, 0) << f.err;
  const auto p = load(db);
  ASSERT_EQ(p.sessions.size(), 1u) << f.err;
  const auto& drops = p.sessions[0].drops;
  EXPECT_EQ(drops.count("connection_lost") ? drops.at("connection_lost") : 0u, 1u) << f.err;
  EXPECT_EQ(drops.count("ended_without_final_flush"), 0u);
  const Ran r = run_edo("report --json '" + db + "'");
  EXPECT_NE(r.out.find("\"connection_lost\": 1"), std::string::npos) << r.out;
  const Ran text = run_edo("report '" + db + "'");
  EXPECT_NE(flat(text.out).find("connection_lost: 1 session(s) (the process's connection to edo record closed while the "
                                "process ran on (the job closed the tracer's descriptor)"),
            std::string::npos)
      << text.out;
}
