// The profiler never changes the job (issue 30), at the user's level:
//  1. a job that closes every fd >= 3 and reuses the numbers (its own file and socketpair, and
//     every number up to ~1100 dup'ed onto them, again and again from a thread) runs exactly as
//     without edo: the tracer never writes into, reads from or closes a descriptor that is not
//     its own. In its own descriptor table it loses nothing; where it must work in the shared
//     table (unshare refused), what it records after losing its own is not lost (the EDO_OUTPUT
//     file is opened again; under `edo record` the rest goes to <output>.unsent.<pid>);
//  2. setsid() works under `edo record` as without it (the job does not lead its group);
//  3. SIGKILL to `edo record` alone: the job runs to its end, and what it recorded afterwards
//     is in <output>.unsent.<pid>, which `edo import` turns into a database with the loss
//     counted (collector_lost).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "edo/db/recording_state.h"

using namespace edo_e2e;

namespace {

const edo::model::Table* named(const Profile& p, const std::string& name) {
  for (auto& t : p.tables)
    if (t.name == name) return &t;
  return nullptr;
}

uint64_t count_of(const Profile& p, const std::string& table, uint64_t row) {
  const auto* t = named(p, table);
  return t ? t->aggregate.count(row) : 0;
}

// The files <prefix>.* in the prefix's folder.
std::vector<std::string> files_with_prefix(const std::string& prefix) {
  std::vector<std::string> out;
  const fs::path p(prefix);
  for (auto& e : fs::directory_iterator(p.parent_path()))
    if (e.path().filename().string().rfind(p.filename().string() + ".", 0) == 0) out.push_back(e.path().string());
  return out;
}

constexpr int kRounds = 30;

// Under `edo record`, the tracer's connection lives in a descriptor table of its own
// (own_fd_thread.h): the job's close_range and its dup2()s onto any number, from any thread at
// any moment, never reach it. The job runs as without edo, and every lookup reaches the database
// over the connection: nothing is lost, nothing goes to an unsent file.
TEST(TracerUntouched, AJobThatClosesAndReusesItsDescriptorsRunsAsWithoutEdoUnderRecord) {
  const Result plain = run({TRACER_UNTOUCHED_JOB, "fds", tmp_path("plain.txt"), std::to_string(kRounds)}, kClean);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const std::string db = tmp_path("fds.edodb");
  // Flushes every 10 ms: many of them fall while the job's thread takes numbers.
  const Result r = run({EDO_BIN, "record", "--flush-ms", "10", "-o", db, "--", TRACER_UNTOUCHED_JOB, "fds",
                        tmp_path("traced.txt"), std::to_string(kRounds)},
                       kClean);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err.find("failed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("lost their connection"), std::string::npos) << r.err;
  EXPECT_TRUE(files_with_prefix(db + ".unsent").empty()) << r.err;
  const Profile rec = load(db);
  EXPECT_EQ(count_of(rec, "fds.emb", 1), 10u);
  EXPECT_EQ(count_of(rec, "fds.emb", 2), 10u * kRounds);
  ASSERT_EQ(rec.sessions.size(), 1u);
  EXPECT_EQ(rec.sessions[0].drops.count("collector_lost"), 0u);
}

// Where threads may not unshare their table (seccomp, as in a container), the tracer works in
// the shared one: the job's close_range closes its connection, and what it records afterwards
// goes to the unsent file, which edo record names. Nothing is lost: the database and that file
// hold every lookup.
TEST(TracerUntouched, AJobThatClosesItsDescriptorsRunsAsWithoutEdoUnderRecordInTheSharedTable) {
  const Result plain = run({TRACER_UNTOUCHED_JOB, "fds-shared", tmp_path("plain.txt"), std::to_string(kRounds)}, kClean);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const std::string db = tmp_path("fds-shared.edodb");
  const Result r = run({EDO_BIN, "record", "--flush-ms", "10", "-o", db, "--", TRACER_UNTOUCHED_JOB, "fds-shared",
                        tmp_path("traced.txt"), std::to_string(kRounds)},
                       kClean);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err.find("failed"), std::string::npos) << r.err;
  const std::vector<std::string> unsent = files_with_prefix(db + ".unsent");
  ASSERT_EQ(unsent.size(), 1u) << r.err;
  const std::string stem = db.substr(0, db.size() - 6);
  EXPECT_NE(r.err.find("1 process(es) lost their connection to edo and kept the rest of their trace in " + db +
                       ".unsent.<pid>: edo import " + db + ".unsent.* -o " + stem + "-unsent.edodb\n"),
            std::string::npos)
      << r.err;
  const std::string spill_db = tmp_path("fds-shared-unsent.edodb");
  const Result im = run({EDO_BIN, "import", unsent[0], "-o", spill_db});
  ASSERT_EQ(im.status, 0) << im.err;
  const Profile rec = load(db), spill = load(spill_db);
  ASSERT_NE(named(spill, "fds.emb"), nullptr);
  EXPECT_EQ(count_of(rec, "fds.emb", 1) + count_of(spill, "fds.emb", 1), 10u);
  EXPECT_EQ(count_of(rec, "fds.emb", 2) + count_of(spill, "fds.emb", 2), 10u * kRounds);
  ASSERT_EQ(spill.sessions.size(), 1u);
  EXPECT_EQ(spill.sessions[0].drops.count("collector_lost"), 1u);
  EXPECT_EQ(spill.sessions[0].drops.count("unsent_flushes"), 0u);
}

// With EDO_OUTPUT (no collector), in the tracer's own table and in the shared one: the job runs
// as without edo and the trace file holds every lookup, undamaged. In the shared table the file
// is the tracer's by its path: opened again after the job closed it.
void output_file_case(const std::string& mode) {
  const Result plain = run({TRACER_UNTOUCHED_JOB, mode, tmp_path("plain.txt"), std::to_string(kRounds)}, kClean);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const std::string trace = tmp_path(mode + ".trace"), db = tmp_path(mode + ".edodb");
  const Result r = run({TRACER_UNTOUCHED_JOB, mode, tmp_path("traced.txt"), std::to_string(kRounds)},
                       with({"EDO_OUTPUT=" + trace, "LD_PRELOAD=" + preload_of(EDO_TRACE_LIB_PATH), "EDO_FLUSH_MS=10",
                             "ASAN_OPTIONS=detect_leaks=0"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err, "");
  const Result im = run({EDO_BIN, "import", trace, "-o", db});
  ASSERT_EQ(im.status, 0) << im.err;
  EXPECT_EQ(im.err.find("byte "), std::string::npos) << im.err;  // no damaged region
  const Profile p = load(db);
  EXPECT_EQ(count_of(p, "fds.emb", 1), 10u);
  EXPECT_EQ(count_of(p, "fds.emb", 2), 10u * kRounds);
}

TEST(TracerUntouched, AJobThatClosesAndReusesItsDescriptorsRunsAsWithoutEdoWithOutputFile) { output_file_case("fds"); }

TEST(TracerUntouched, AJobThatClosesItsDescriptorsRunsAsWithoutEdoWithOutputFileInTheSharedTable) {
  output_file_case("fds-shared");
}

TEST(TracerUntouched, SetsidWorksUnderRecordAsWithoutIt) {
  const Result plain = run({TRACER_UNTOUCHED_JOB, "setsid"}, kClean);
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(plain.out, "group leader: no\nsetsid ok: leads session and group yes\n");
  const Result r = run({EDO_BIN, "record", "-o", tmp_path("setsid.edodb"), "--", TRACER_UNTOUCHED_JOB, "setsid"}, kClean);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
}

// SIGKILL to edo record's pid alone. The test is a child subreaper for the time of the test,
// so that the job, orphaned when edo dies, becomes its child and its exit status can be read.
TEST(TracerUntouched, TheJobOutlivesAKilledRecordAndKeepsWhatItCouldNotSend) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  struct Unreap {
    ~Unreap() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
  } unreap;
  const std::string db = tmp_path("outlive.edodb"), go = tmp_path("go"), done = tmp_path("done");
  Background b = start({EDO_BIN, "record", "-o", db, "--", TRACER_UNTOUCHED_JOB, "outlive", go, done}, kClean);
  std::string out;
  const pid_t job = wait_ready(b, out);
  if (job < 0) FAIL() << "the job never got ready: " << out;
  kill(b.pid, SIGKILL);
  EXPECT_EQ(wait_exit(b), 128 + SIGKILL);
  std::ofstream(go).close();  // the job goes on: it reads row 2 fifty times, edo being gone
  int st = 0;
  pid_t r = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while ((r = waitpid(job, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) usleep(10000);
  if (r != job) {
    kill(job, SIGKILL);
    waitpid(job, nullptr, 0);
    FAIL() << "the job did not end (or was not reparented to the test): " << slurp(b.out);
  }
  const std::string output = slurp(b.out);
  ASSERT_TRUE(WIFEXITED(st)) << "the job died by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0) << "\n" << output;
  EXPECT_EQ(WEXITSTATUS(st), 0) << output;
  EXPECT_EQ(slurp(done), "done");
  EXPECT_NE(output.find("last line\n"), std::string::npos) << output;
  // The tracer says where the rest is.
  const std::string spill = db + ".unsent." + std::to_string(job);
  EXPECT_NE(output.find(" lookups) are kept in " + spill + " (edo import " + spill + ")"), std::string::npos) << output;
  ASSERT_TRUE(fs::exists(spill)) << output;
  // What edo saved before it died stays a readable database: the recording file beside the
  // output it never reached (edo record renames it there only at its final save).
  EXPECT_FALSE(fs::exists(db)) << db;
  const auto kept = edo::db::recording_files_for(db);
  ASSERT_EQ(kept.size(), 1u) << db;
  EXPECT_NO_THROW(load(kept.front()));
  const std::string spill_db = tmp_path("outlive-unsent.edodb");
  const Result im = run({EDO_BIN, "import", spill, "-o", spill_db});
  ASSERT_EQ(im.status, 0) << im.err;
  EXPECT_NE(im.err.find("collector_lost: 1 session(s)"), std::string::npos) << im.err;
  const Profile p = load(spill_db);
  ASSERT_EQ(p.sessions.size(), 1u);
  EXPECT_EQ(p.sessions[0].pid, job);
  EXPECT_EQ(p.sessions[0].steps, 6u);
  EXPECT_EQ(p.sessions[0].drops.count("collector_lost"), 1u);
  EXPECT_EQ(p.sessions[0].drops.count("ended_without_final_flush"), 0u);
  ASSERT_NE(named(p, "outlive.emb"), nullptr);
  EXPECT_EQ(count_of(p, "outlive.emb", 2), 50u);  // every lookup made after edo died
}

}  // namespace
