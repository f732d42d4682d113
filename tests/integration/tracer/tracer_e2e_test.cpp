// End to end: tracer_job (known ground truth) under `edo record`, and through EDO_OUTPUT +
// `edo import`; kill/fork/exec/collector-loss/bad-env cases; the library's ABI surface.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "edo/db/weight_store.h"
#include "../sanitizer_fork.h"

namespace fs = std::filesystem;
using edo::model::Profile;
using namespace edo_e2e;

namespace {


// The ground truth of `tracer_job basic` (see tracer_job.c).
void expect_basic(const Profile& p, int64_t sid) {
  const auto* user = table(p, sid, "emb.user");
  const auto* item = table(p, sid, "emb.item");
  const auto* dec = table(p, sid, "decoder.weight");
  ASSERT_TRUE(user && item && dec);
  EXPECT_EQ(user->rows, 1000u);
  EXPECT_EQ(user->dim, 16u);
  EXPECT_EQ(user->dtype, "fp32");
  EXPECT_EQ(user->device, "host");
  EXPECT_EQ(user->weight_bytes, 1000u * 16 * 4);
  EXPECT_EQ(user->optimizer_bytes, 1000u * 16 * 4);
  EXPECT_EQ(user->grad_bytes, 0u);
  EXPECT_EQ(user->aggregate.lookups(), 10000u);
  EXPECT_EQ(user->aggregate.unique_rows(), 1000u);
  for (uint64_t r = 0; r < 1000; ++r) ASSERT_EQ(user->aggregate.count(r), 10u) << "emb.user row " << r;
  EXPECT_EQ(item->dtype, "fp16");
  EXPECT_EQ(item->aggregate.lookups(), 3000u);
  EXPECT_EQ(item->aggregate.unique_rows(), 100u);
  for (uint64_t r = 0; r < 200; ++r) ASSERT_EQ(item->aggregate.count(r), r < 100 ? 30u : 0u) << "emb.item row " << r;
  EXPECT_EQ(dec->aggregate.lookups(), 500u);
  EXPECT_EQ(dec->aggregate.unique_rows(), 1u);
  EXPECT_EQ(dec->aggregate.count(3), 500u);
  bool tie = false;
  for (auto& t : p.ties) tie |= t.session_id == sid && t.table == "emb.user" && t.tied_with == "decoder.weight";
  EXPECT_TRUE(tie) << "tie emb.user <-> decoder.weight missing";
#ifdef EDO_TEST_NVTX
  std::map<std::string, edo::model::RangeStat> ranges;
  for (auto& r : p.ranges)
    if (r.session_id == sid) ranges[r.name] = r;
  ASSERT_TRUE(ranges.count("forward") && ranges.count("model::embedding") && ranges.count("epoch"));
  EXPECT_EQ(ranges["forward"].count, 2u);
  EXPECT_EQ(ranges["forward"].lookups, 10000u);
  EXPECT_EQ(ranges["model::embedding"].count, 1u);
  EXPECT_EQ(ranges["model::embedding"].lookups, 3000u);
  EXPECT_EQ(ranges["epoch"].count, 1u);
  EXPECT_GT(ranges["epoch"].total_ns, 0u);
#endif
  for (auto& s : p.sessions)
    if (s.id == sid) {
      EXPECT_EQ(s.steps, 5u);
      EXPECT_EQ(s.dropped_events, 0u);
    }
}

const edo::model::Session& only_session(const Profile& p) {
  EXPECT_EQ(p.sessions.size(), 1u);
  return p.sessions.at(0);
}

}  // namespace

TEST(TracerE2E, RecordMatchesGroundTruthAndKeepsExitCode) {
  const std::string db = tmp_path("basic.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "basic", "3"}, kClean);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out, "tracer_job basic done\n");
  EXPECT_NE(r.err.find("wrote " + db), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 session(s), 3 table(s), 13500 lookups, 1 tie(s)"), std::string::npos) << r.err;
  Profile p = load(db);
  const auto& s = only_session(p);
  EXPECT_EQ(s.exit_code.value_or(-1), 3);
  EXPECT_EQ(s.source, "record");
  EXPECT_NE(s.command.find("tracer_job basic 3"), std::string::npos) << s.command;
  expect_basic(p, s.id);
  // edo_note: the job's fact in the metadata, the later value under its key.
  EXPECT_EQ(p.metadata.count("job.model") ? p.metadata.at("job.model") : "", "two \"towers\"");
}

// Issue 18 §4: the LRU estimate of a stream past the exact bounds (SHARDS) is a function of
// the stream alone, so two recordings of the same deterministic job, one flushing every 10 ms
// (deltas cut at wall-clock-dependent places) and one only at exit, differ in nothing
// `edo diff` shows for the table: no LRU line, no other line.
TEST(TracerE2E, SameStreamWithDifferentFlushCadenceHasNoLruChange) {
  const std::string a = tmp_path("often.edodb"), b = tmp_path("once.edodb");
  Result ra = run({EDO_BIN, "record", "-o", a, "--", TRACER_JOB, "lru_stream", "0"}, with({"EDO_FLUSH_MS=10"}));
  ASSERT_EQ(ra.status, 0) << ra.err;
  Result rb = run({EDO_BIN, "record", "-o", b, "--", TRACER_JOB, "lru_stream", "0"}, with({"EDO_FLUSH_MS=3600000"}));
  ASSERT_EQ(rb.status, 0) << rb.err;
  Result d = run({EDO_BIN, "diff", a, b}, kClean);
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_NE(d.out.find("emb.big\n"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("lru_hit_rate"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("only in"), std::string::npos) << d.out;
  // And both recordings hold the whole stream: 733 batches of 4096 lookups.
  Result j = run({EDO_BIN, "diff", "--json", a, b}, kClean);
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_NE(j.out.find("\"lookups\": {\n        \"before\": 3002368"), std::string::npos) << j.out;
}

#ifdef FAKE_NVTX_TOOL
// Issue 13: another tool's NVTX injection is already set. It keeps NVTX (the job and the tool
// see no difference), `edo record` says so in one line naming it, and records everything else.
TEST(TracerE2E, AnotherNvtxToolKeepsNvtxAndEverythingElseIsRecorded) {
  const std::string db = tmp_path("nvtx_other.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "basic", "0"},
                 with({std::string("NVTX_INJECTION64_PATH=") + FAKE_NVTX_TOOL}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "tracer_job basic done\n");
  int lines = 0;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);)
    if (line.find("NVTX") != std::string::npos) {
      ++lines;
      EXPECT_NE(line.find(FAKE_NVTX_TOOL), std::string::npos) << line;
    }
  EXPECT_EQ(lines, 1) << r.err;
  EXPECT_NE(r.err.find("fake_nvtx_tool ranges 3"), std::string::npos) << "the other tool lost its ranges:\n" << r.err;
  Profile p = load(db);
  const auto& s = only_session(p);
  const auto* user = table(p, s.id, "emb.user");
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->aggregate.lookups(), 10000u);
  EXPECT_EQ(s.steps, 5u);
  EXPECT_TRUE(p.ranges.empty());
  EXPECT_EQ(p.metadata.count("setting.NVTX_INJECTION64_PATH") ? p.metadata.at("setting.NVTX_INJECTION64_PATH") : "",
            FAKE_NVTX_TOOL);
}
#endif

TEST(TracerE2E, OutputFileAndImportMatchGroundTruth) {
  const std::string trace = tmp_path("trace.bin"), db = tmp_path("imported.edodb");
  Result r = run({TRACER_JOB, "basic", "4"},
                 with({"EDO_OUTPUT=" + trace, "LD_PRELOAD=" + preload_of(EDO_TRACE_LIB_PATH), "ASAN_OPTIONS=detect_leaks=0",
                       "NVTX_INJECTION64_PATH=" EDO_TRACE_LIB_PATH}));
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_EQ(r.out, "tracer_job basic done\n");
  EXPECT_EQ(r.err, "");
  Result im = run({EDO_BIN, "import", trace, "-o", db});
  EXPECT_EQ(im.status, 0) << im.err;
  Profile p = load(db);
  const auto& s = only_session(p);
  EXPECT_EQ(s.source, "import");
  expect_basic(p, s.id);
}

TEST(TracerE2E, ImportOfDamagedFilesKeepsWhatDecodes) {
  const std::string trace = tmp_path("trace.bin");
  ASSERT_EQ(run({TRACER_JOB, "basic", "0"}, with({"EDO_OUTPUT=" + trace, "NVTX_INJECTION64_PATH=" EDO_TRACE_LIB_PATH})).status, 0);
  const std::string whole = slurp(trace);
  ASSERT_GT(whole.size(), 200u);
  // Truncated tail: warning naming the file and offset, exit 0, earlier frames kept.
  const std::string cut = tmp_path("cut.bin");
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() - 5);
  Result r = run({EDO_BIN, "import", cut, "-o", tmp_path("cut.edodb")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(cut + ": byte "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_EQ(load(tmp_path("cut.edodb")).tables.size(), 3u);
  // Garbage in front: reported, rest kept.
  const std::string garb = tmp_path("garbage.bin");
  std::ofstream(garb, std::ios::binary) << std::string(100, 'x') << whole;
  r = run({EDO_BIN, "import", garb, "-o", tmp_path("garbage.edodb")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(garb + ": byte 0: corrupt data"), std::string::npos) << r.err;
  expect_basic(load(tmp_path("garbage.edodb")), 1);
  // Nothing decodable: exit 1, one clear line.
  const std::string junk = tmp_path("junk.bin");
  std::ofstream(junk, std::ios::binary) << "this is not a trace";
  r = run({EDO_BIN, "import", junk, "-o", tmp_path("junk.edodb")});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no edo trace frames"), std::string::npos) << r.err;
}

TEST(TracerE2E, SigkilledJobLeavesFlushedData) {
  const std::string db = tmp_path("killed.edodb");
  Result r = run({EDO_BIN, "record", "--flush-ms", "100", "-o", db, "--", TRACER_JOB, "sigkill", "0"}, kClean);
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.err;
  Profile p = load(db);
  const auto& s = only_session(p);
  EXPECT_EQ(s.exit_code.value_or(-1), 128 + SIGKILL);
  expect_basic(p, s.id);
  // What it recorded after its last flush (nothing here) could not be known: said so.
  EXPECT_EQ(s.drops.at("ended_without_final_flush"), 1u);
  EXPECT_NE(r.err.find("ended_without_final_flush: 1 session(s)"), std::string::npos) << r.err;
}

TEST(TracerE2E, SigtermFlushesAndStillDiesBySignal) {
  const std::string db = tmp_path("term.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "sigterm", "0"}, kClean);
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.err;
  Profile p = load(db);
  const auto& s = only_session(p);
  EXPECT_EQ(s.exit_code.value_or(-1), 128 + SIGTERM);
  expect_basic(p, s.id);  // flushed by the signal handler, not by a periodic flush (1 s)
}

TEST(TracerE2E, SignalsToEdoRecordAreForwardedToTheJob) {
  const std::string db = tmp_path("fwd.edodb"), out = tmp_path("fwd.out");
  pid_t edo = fork();
  if (edo == 0) {
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    for (auto& kv : kClean) unsetenv(kv.substr(0, kv.find('=')).c_str());
    execl(EDO_BIN, EDO_BIN, "record", "-o", db.c_str(), "--", TRACER_JOB, "wait", "0", (char*)nullptr);
    _exit(126);
  }
  bool ready = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (!ready && std::chrono::steady_clock::now() < deadline) {
    usleep(50000);
    ready = slurp(out).find("ready") != std::string::npos;
  }
  ASSERT_TRUE(ready) << slurp(out);
  kill(edo, SIGTERM);
  int st = 0;
  waitpid(edo, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << "edo record itself was killed";
  EXPECT_EQ(WEXITSTATUS(st), 128 + SIGTERM) << slurp(out);
  Profile p = load(db);
  const auto& s = only_session(p);
  EXPECT_EQ(s.exit_code.value_or(-1), 128 + SIGTERM);
  expect_basic(p, s.id);
}

// The library installs no signal handler, so a job killed by a signal cannot flush itself:
// `edo record` asks it for a flush before it passes a signal on. With a flush period of an
// hour, only that flush can carry what the job read after its first flush.
TEST(TracerE2E, EdoRecordAsksForAFlushBeforePassingASignalOn) {
  const std::string db = tmp_path("asked.edodb");
  Background b = start({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "wait_more", "0"}, with({"EDO_FLUSH_MS=3600000"}));
  ASSERT_NE(wait_for_output(b, "ready").find("ready"), std::string::npos) << slurp(b.out);
  kill(b.pid, SIGTERM);
  EXPECT_EQ(wait_exit(b), 128 + SIGTERM) << slurp(b.out);
  Profile p = load(db);
  const auto& s = only_session(p);
  EXPECT_EQ(table(p, s.id, "emb.item")->aggregate.count(5), 55u + 30u);
  EXPECT_EQ(s.exit_code.value_or(-1), 128 + SIGTERM);
}

// Issue 21 §6: the NVTX strings and domains are process-wide state whose lock is taken across
// fork(): a child forked while another thread registers a domain never inherits that lock held
// (before, g_dom_mu was not taken across fork, and such a child hung in nvtxDomainCreateA).
TEST(TracerE2E, NvtxNamesSurviveForkWhileAnotherThreadRegisters) {
  EDO_SKIP_FORK_WITH_THREADS_UNDER_ASAN();
  const std::string db = tmp_path("nvtx_fork.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "nvtx_fork", "0"}, kClean);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.out.find("nvtx_fork_hung") == std::string::npos) GTEST_SKIP() << "tracer_job built without NVTX";
  EXPECT_NE(r.out.find("nvtx_fork_hung 0"), std::string::npos) << r.out << r.err;
  fs::remove(db);
}

// Issue 21 §6: weight snapshots' state has a lifetime per part (process.h): the history
// (running top rows, snapshot numbers) is in Process with its lock taken across fork(), the
// frames waiting for a flush are in the Session a child replaces. 20 children forked while a
// thread takes snapshots without pause: none hangs, and each child's snapshot is recorded in
// its own session.
TEST(TracerE2E, WeightSnapshotsSurviveForkWhileAnotherThreadTakesThem) {
  EDO_SKIP_FORK_WITH_THREADS_UNDER_ASAN();
  const std::string db = tmp_path("weights_fork.edodb");
  Result r = run({EDO_BIN, "record", "--weights", "-o", db, "--", TRACER_JOB, "weights_fork", "0"}, kClean);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("weights_fork_hung 0"), std::string::npos) << r.out << r.err;
  Profile p = load(db);
  EXPECT_EQ(p.sessions.size(), 21u);
  const edo::db::ProfileStore store(db, edo::db::ProfileStore::Mode::kReadOnly);
  std::set<int64_t> with_snapshot;
  for (const auto& w : edo::db::load_weight_snapshots(store, "emb.user")) with_snapshot.insert(w.session_id);
  EXPECT_EQ(with_snapshot.size(), 21u) << "every child's snapshot, and the parent's";
  fs::remove(db);
}

TEST(TracerE2E, ForkedWorkersAreSessions) {
  const std::string db = tmp_path("fork.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "fork", "0"}, kClean);
  EXPECT_EQ(r.status, 0) << r.err;
  Profile p = load(db);
  ASSERT_EQ(p.sessions.size(), 4u);
  int64_t parent_pid = 0;
  std::multiset<uint64_t> worker_lookups;
  for (auto& s : p.sessions) {
    const auto* t = table(p, s.id, "emb.user");
    ASSERT_NE(t, nullptr);
    if (s.exit_code) {
      parent_pid = s.pid;
      EXPECT_EQ(t->aggregate.lookups(), 50u);
      EXPECT_EQ(t->aggregate.count(999), 50u);
    } else {
      worker_lookups.insert(t->aggregate.lookups());
      EXPECT_EQ(t->aggregate.unique_rows(), 1u);
    }
  }
  EXPECT_EQ(worker_lookups, (std::multiset<uint64_t>{100, 200, 300}));
  for (auto& s : p.sessions) {
    if (!s.exit_code) {
      EXPECT_EQ(s.parent_pid, parent_pid);
    }
  }
}

TEST(TracerE2E, PythonPoolWorkersKilledByTerminateKeepTheirLookups) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string db = tmp_path("pool.edodb");
  Result r = run({EDO_BIN, "record", "--flush-ms", "50", "-o", db, "--", "/usr/bin/python3", POOL_JOB}, kClean);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[0, 0, 0, 0]\n") << r.err;
  Profile p = load(db);
  EXPECT_GE(p.sessions.size(), 2u);  // the parent and the workers that ran a task
  EXPECT_LE(p.sessions.size(), 3u);
  uint64_t total = 0;
  for (auto& t : p.tables) total += t.aggregate.lookups();
  EXPECT_EQ(total, 40u);
  // A worker SIGTERMed while idle ended without its final flush: that is counted, the parent
  // (which exited) is not. The parent is the session whose parent is no session of the job
  // (sessions are numbered as they are saved: a worker may come first).
  std::set<int64_t> pids;
  for (auto& s : p.sessions) pids.insert(s.pid);
  int roots = 0;
  for (auto& s : p.sessions) {
    if (pids.count(s.parent_pid)) continue;
    ++roots;
    EXPECT_EQ(s.drops.count("ended_without_final_flush"), 0u);
    EXPECT_EQ(s.exit_code.value_or(-1), 0);
  }
  EXPECT_EQ(roots, 1);
}

TEST(TracerE2E, ChildrenThatRecordNothingLeaveNoSession) {
  const std::string db = tmp_path("spawn.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "spawn", "0"}, kClean);
  EXPECT_EQ(r.status, 0) << r.err;
  Profile p = load(db);
  expect_basic(p, only_session(p).id);
}

TEST(TracerE2E, ForkedWorkersWriteTheirOwnFiles) {
  const std::string trace = tmp_path("fork.bin"), db = tmp_path("fork.edodb");
  ASSERT_EQ(run({TRACER_JOB, "fork", "0"}, with({"EDO_OUTPUT=" + trace})).status, 0);
  std::vector<std::string> files;
  for (auto& e : fs::directory_iterator(fs::path(trace).parent_path()))
    if (e.path().filename().string().rfind("fork.bin", 0) == 0) files.push_back(e.path().string());
  ASSERT_EQ(files.size(), 4u);
  std::vector<std::string> argv = {EDO_BIN, "import"};
  argv.insert(argv.end(), files.begin(), files.end());
  argv.insert(argv.end(), {"-o", db});
  ASSERT_EQ(run(argv).status, 0);
  Profile p = load(db);
  EXPECT_EQ(p.sessions.size(), 4u);
  uint64_t total = 0;
  for (auto& t : p.tables) total += t.aggregate.lookups();
  EXPECT_EQ(total, 650u);
}

// The recipe without the collector, run twice in one folder (issue 18 §3): the first run's
// worker files stay beside the second run's. Importing them all is refused with one line that
// names both runs; --run with the second run's id imports exactly its 4 processes and 650
// lookups (the old import merged 8 sessions, 1300 lookups).
TEST(TracerE2E, StaleFilesOfAnEarlierRunAreNotMerged) {
  const std::string trace = tmp_path("stale.bin"), db = tmp_path("stale.edodb");
  for (int i = 0; i < 2; ++i) ASSERT_EQ(run({TRACER_JOB, "fork", "0"}, with({"EDO_OUTPUT=" + trace})).status, 0);
  std::vector<std::string> files = {trace};  // the root's file first: it holds the second run only
  for (auto& e : fs::directory_iterator(fs::path(trace).parent_path()))
    if (e.path().filename().string().rfind("stale.bin.", 0) == 0) files.push_back(e.path().string());
  ASSERT_EQ(files.size(), 7u);  // the root's file (truncated by the second run), 2 x 3 workers
  std::vector<std::string> argv = {EDO_BIN, "import"};
  argv.insert(argv.end(), files.begin(), files.end());
  argv.insert(argv.end(), {"-o", db});
  Result r = run(argv);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_FALSE(fs::exists(db));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("the trace files come from 2 runs"), std::string::npos) << r.err;
  const std::string lead = "run ";
  const size_t at = r.err.find(": " + lead);
  ASSERT_NE(at, std::string::npos) << r.err;
  const size_t id_at = at + 2 + lead.size(), colon = r.err.find(':', id_at);
  const std::string second = r.err.substr(id_at, colon - id_at);
  EXPECT_EQ(r.err.substr(colon, 2 + trace.size()), ": " + trace) << r.err;
  ASSERT_EQ(second.size(), 16u) << r.err;
  EXPECT_NE(r.err.find("--run ID (ids found: " + second + ", "), std::string::npos) << r.err;

  argv.insert(argv.end(), {"--run", second});
  r = run(argv);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("3 file(s) hold no session of run " + second), std::string::npos) << r.err;
  Profile p = load(db);
  EXPECT_EQ(p.sessions.size(), 4u);
  uint64_t total = 0;
  for (auto& t : p.tables) total += t.aggregate.lookups();
  EXPECT_EQ(total, 650u);
  EXPECT_EQ(p.metadata.at("run_id"), second);

  // An id that is not there: refused, naming the ids found.
  argv.back() = "0000000000000000";
  fs::remove(db);
  r = run(argv);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no trace file belongs to run 0000000000000000 (runs found: " + second + ", "), std::string::npos)
      << r.err;
}

TEST(TracerE2E, ExecStartsASecondSessionOfTheSamePid) {
  const std::string db = tmp_path("exec.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "exec", "6"}, kClean);
  EXPECT_EQ(r.status, 6) << r.err;
  Profile p = load(db);
  ASSERT_EQ(p.sessions.size(), 2u);
  EXPECT_EQ(p.sessions[0].pid, p.sessions[1].pid);
  expect_basic(p, p.sessions[0].id);  // flushed before exec
  const auto* item = table(p, p.sessions[1].id, "emb.item");
  ASSERT_NE(item, nullptr);
  EXPECT_EQ(item->aggregate.count(7), 70u);
  EXPECT_EQ(p.sessions[1].exit_code.value_or(-1), 6);
}

TEST(TracerE2E, JobRunsUnharmedWhenTheCollectorIsGone) {
  const Result plain = run({TRACER_JOB, "noisy", "9"}, kClean);
  ASSERT_EQ(plain.status, 9);
  // 1) the channel names no listener at all
  // The job's output and exit code are its own; one line says what the recording misses.
  Result r = run({TRACER_JOB, "noisy", "9"}, with({"EDO_CHANNEL=" + tmp_path("nobody.sock")}));
  EXPECT_EQ(r.status, 9);
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("edo: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(" bytes, 13500 lookups) were not delivered: cannot reach the collector at " + tmp_path("nobody.sock") +
                       " (No such file or directory); the recording misses them"),
            std::string::npos)
      << r.err;
  // 2) a collector that accepts and then dies (connection closed under the job's feet); the
  //    job records more after that, and those lookups are reported lost
  const std::string sock = tmp_path("dying.sock");
  unlink(sock.c_str());
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << sock;
  ASSERT_EQ(listen(ls, 8), 0);
  pid_t killer = fork();
  if (killer == 0) {
    int c = accept(ls, nullptr, nullptr);
    char buf[64];
    (void)!read(c, buf, sizeof buf);  // the hello arrives, then the collector "dies"
    _exit(0);
  }
  close(ls);
  r = run({TRACER_JOB, "twice", "9"}, with({"EDO_CHANNEL=" + sock, "EDO_ROOT_PID=1", "EDO_FLUSH_MS=10"}));
  waitpid(killer, nullptr, 0);
  EXPECT_EQ(r.status, 9);
  EXPECT_EQ(r.out, "tracer_job twice done\n");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // At least the second round's lookups (the first may have been in flight when it died).
  unsigned long long lost = 0;
  const auto at = r.err.find(" bytes, ");
  ASSERT_NE(at, std::string::npos) << r.err;
  ASSERT_EQ(std::sscanf(r.err.c_str() + at, " bytes, %llu lookups) were not delivered", &lost), 1) << r.err;
  EXPECT_GE(lost, 13500u) << r.err;
  EXPECT_NE(r.err.find("lookups) were not delivered: the collector at " + sock), std::string::npos) << r.err;
}

// Every setting of the library at once, each with a bad value (garbage, negative, too large):
// one warning per variable, and the job's output, exit code and recording are as without them.
TEST(TracerE2E, BadEnvironmentValuesWarnAndTheJobRuns) {
  const std::vector<std::string> bad = {
      "EDO_FLUSH_MS=soon", "EDO_EXACT_ROWS=-1", "EDO_TOPK=99999999999999999999999", "EDO_MAX_BUFFER_MB=0",
      "EDO_MAX_EVENTS=1e9", "EDO_WINDOW_STEPS=-3", "EDO_MAX_MEMORY_MB=huge", "EDO_ASYNC=perhaps", "EDO_LRU=2",
      "EDO_CUDA_CAPTURE=-1", "EDO_VERBOSE=loud", "EDO_TORCH=maybe", "EDO_TORCH_SCAN=7",
      "EDO_OUTPUT_OWNER=nobody"};
  for (const bool record : {true, false}) {
    const std::string db = tmp_path(record ? "badenv.edodb" : "badenv-import.edodb"), trace = tmp_path("badenv.trace");
    std::vector<std::string> env = with(bad);
    if (!record) env.push_back("EDO_OUTPUT=" + trace);
    Result r = record ? run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "basic", "2"}, env)
                      : run({TRACER_JOB, "basic", "2"}, env);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.out, "tracer_job basic done\n");
    for (const auto& kv : bad) {
      const std::string name = kv.substr(0, kv.find('='));
      if (record && name == "EDO_OUTPUT_OWNER") continue;  // edo record does not pass it on
      const std::string line = "edo: ignoring " + name + "='" + kv.substr(kv.find('=') + 1) + "' (";
      const auto at = r.err.find(line);
      EXPECT_NE(at, std::string::npos) << name << ":\n" << r.err;
      if (at != std::string::npos) {
        EXPECT_EQ(r.err.find(line, at + 1), std::string::npos) << "warned twice: " << name;
      }
    }
    EXPECT_NE(r.err.find("EDO_FLUSH_MS='soon' (not a whole number: must be between 10 and 3600000); using the default 1000"),
              std::string::npos)
        << r.err;
    if (!record) {
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), long(bad.size())) << r.err;
      ASSERT_EQ(run({EDO_BIN, "import", trace, "-o", db}).status, 0);
    }
    Profile p = load(db);
    expect_basic(p, only_session(p).id);
  }
}

TEST(TracerE2E, FullBuffersDropAndCountBatches) {
  const std::string db = tmp_path("flood.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "flood", "0"}, with({"EDO_MAX_BUFFER_MB=1"}));
  EXPECT_EQ(r.status, 0) << r.err;
  int accepted = -1, dropped = -1;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "accepted %d dropped %d", &accepted, &dropped), 2) << r.out;
  EXPECT_EQ(accepted + dropped, 40);
  Profile p = load(db);
  const auto& s = only_session(p);
  // Every accepted batch is counted exactly, every dropped one is reported, by name.
  EXPECT_EQ(table(p, s.id, "flood")->aggregate.lookups(), uint64_t(accepted) * 262144);
  EXPECT_EQ(s.dropped_events, uint64_t(dropped));
  ASSERT_GT(dropped, 0) << "1 MiB of queue for 40 MiB of batches dropped nothing";
  EXPECT_EQ(s.drops.at("batches"), uint64_t(dropped));
  EXPECT_EQ(s.drops.at("indices"), uint64_t(dropped) * 262144);
  EXPECT_NE(r.err.find("dropped events: " + std::to_string(dropped)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("batches: " + std::to_string(dropped) + " (host lookup batches dropped"), std::string::npos) << r.err;
  Result rep = run({EDO_BIN, "report", db});
  EXPECT_NE(rep.out.find("  indices: " + std::to_string(uint64_t(dropped) * 262144) + " (indices in the dropped"),
            std::string::npos)
      << rep.out;
  Result js = run({EDO_BIN, "report", "--json", db});
  EXPECT_NE(js.out.find("\"drops\": {\n    \"batches\": " + std::to_string(dropped) + ","), std::string::npos) << js.out;
}

// EDO_OUTPUT on a file the job may not grow (its own RLIMIT_FSIZE, as a full disk would): the
// failed flushes are cut back to the last whole frame, counted, and the counters reach the
// file once writing works again; the job is not killed by SIGXFSZ, and says nothing else.
TEST(TracerE2E, UnwritableTraceFileIsCountedAndTheJobUnharmed) {
  const std::string trace = tmp_path("fsize.trace"), db = tmp_path("fsize.edodb");
  Result r = run({TRACER_JOB, "fsize", "4"}, with({"EDO_OUTPUT=" + trace, "EDO_FLUSH_MS=50"}));
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_EQ(r.out, "tracer_job fsize done\n");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("13500 lookups) were not delivered: cannot write " + trace + ": File too large"), std::string::npos)
      << r.err;
  Result im = run({EDO_BIN, "import", trace, "-o", db});
  ASSERT_EQ(im.status, 0) << im.err;
  EXPECT_EQ(im.err.find("corrupt"), std::string::npos) << im.err;
  Profile p = load(db);
  const auto& s = only_session(p);
  EXPECT_GE(s.drops.at("unsent_flushes"), 1u);
  EXPECT_GT(s.drops.at("unsent_bytes"), 0u);
  EXPECT_EQ(s.drops.at("unsent_lookups"), 13500u);
  // What came after is there, under the tables registered in the lost flushes.
  EXPECT_EQ(table(p, s.id, "emb.item")->aggregate.count(7), 70u);
  EXPECT_EQ(table(p, s.id, "emb.item")->aggregate.lookups(), 70u);
  ASSERT_NE(table(p, s.id, "emb.user"), nullptr);
  EXPECT_EQ(s.steps, 5u);
  // The limit still in force at exit: the exiting thread's own write fails, SIGXFSZ and all.
  const std::string stay = tmp_path("stay.trace");
  // (stderr is a file too, held to its first byte).
  r = run({TRACER_JOB, "fsize_stay", "6"}, with({"EDO_OUTPUT=" + stay, "EDO_ASYNC=0"}));
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_EQ(r.err, "e");
  EXPECT_EQ(fs::file_size(stay), 0u);
}

TEST(TracerE2E, SynchronousIngestGivesTheSameCounts) {
  const std::string db = tmp_path("sync.edodb");
  Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "basic", "0"}, with({"EDO_ASYNC=0"}));
  EXPECT_EQ(r.status, 0) << r.err;
  Profile p = load(db);
  expect_basic(p, only_session(p).id);
}

TEST(TracerE2E, MissingCommandExits127) {
  Result r = run({EDO_BIN, "record", "-o", tmp_path("x.edodb"), "--", "/nonexistent/job"}, kClean);
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("command not found"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(TracerE2E, RecordSetsTheJobEnvironment) {
  Result r = run({EDO_BIN, "record", "-o", tmp_path("env.edodb"), "--", "/bin/sh", "-c",
                  "echo \"$LD_PRELOAD|$NVTX_INJECTION64_PATH|$EDO_TRACE_LIB|${EDO_CHANNEL:+set}|$EDO_FLUSH_MS\""},
                 with({"LD_PRELOAD=/nonexistent/other.so", "EDO_FLUSH_MS=", "EDO_FLUSH_MS=250"}));
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string lib = fs::canonical(EDO_TRACE_LIB_PATH).string();
  EXPECT_EQ(r.out, preload_of(lib) + ":/nonexistent/other.so|" + lib + "|" + lib + "|set|250\n") << r.err;
}

TEST(TracerE2E, RecordHelpDocumentsEveryVariable) {
  Result r = run({EDO_BIN, "record", "--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* v : {"EDO_OUTPUT", "EDO_CHANNEL", "EDO_FLUSH_MS", "EDO_EXACT_ROWS", "EDO_TOPK", "EDO_MAX_BUFFER_MB",
                        "EDO_MAX_EVENTS", "EDO_WINDOW_STEPS", "EDO_ASYNC", "EDO_LRU", "EDO_CUDA_CAPTURE", "EDO_CUPTI_PATH",
                        "EDO_VERBOSE", "EDO_TORCH", "EDO_ROOT_PID", "EDO_TRACE_LIB"})
    EXPECT_NE(r.out.find(v), std::string::npos) << v;
}

TEST(TracerE2E, InertWithoutChannelOrOutput) {
  const std::string dir = fs::path(tmp_path("x")).parent_path().string();
  Result r = run({TRACER_JOB, "basic", "5"}, kClean);
  EXPECT_EQ(r.status, 5);
  EXPECT_EQ(r.out, "tracer_job basic done\n");
  EXPECT_EQ(r.err, "");
}

TEST(TracerE2E, LibraryExportsOnlyItsApiAndDependsOnTheC_Runtime) {
#ifdef EDO_SANITIZER_PRELOAD
  if (std::string(EDO_SANITIZER_PRELOAD).size() > 0)
    GTEST_SKIP() << "sanitizer build: the instrumented library depends on the sanitizer runtime and exports its hooks";
#endif
  Result nm = run({"/usr/bin/nm", "-D", "--defined-only", EDO_TRACE_LIB_PATH});
  ASSERT_EQ(nm.status, 0) << nm.err;
  const std::set<std::string> interposed = {"execve", "execv", "execvp", "execvpe", "execl", "execlp",
                                            "execle", "fexecve", "_exit", "_Exit", "kill", "raise"};
  std::istringstream in(nm.out);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    std::string sym = line.substr(line.rfind(' ') + 1);
    if (sym.find('@') != std::string::npos) sym = sym.substr(0, sym.find('@'));
    const char type = line.size() > 17 ? line[17] : '?';
    if (type == 'A') continue;  // version node
    ++n;
    EXPECT_TRUE(sym.rfind("edo_", 0) == 0 || sym == "InitializeInjectionNvtx2" || interposed.count(sym))
        << "unexpected export: " << line;
  }
  EXPECT_GE(n, 6);
  Result ldd = run({"/usr/bin/ldd", EDO_TRACE_LIB_PATH});
  ASSERT_EQ(ldd.status, 0) << ldd.err;
  std::istringstream l(ldd.out);
  while (std::getline(l, line)) {
    bool ok = false;
    for (const char* allowed : {"linux-vdso", "libc.so", "libstdc++.so", "libm.so", "libgcc_s.so", "libdl.so",
                                "libpthread.so", "ld-linux"})
      ok |= line.find(allowed) != std::string::npos;
    EXPECT_TRUE(ok) << "unexpected dependency: " << line;
  }
}
